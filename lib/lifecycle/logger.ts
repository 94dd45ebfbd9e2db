import { LogLevel, logLine } from '../log-contract.js'

/**
 * Where the middleware writes its one line per outcome. A Powertools `Logger` fits as it is;
 * the default writes one JSON object per line to the console, which CloudWatch parses.
 */
export interface SingletonLogger {
  info(message: string, fields: Record<string, unknown>): void
  warn(message: string, fields: Record<string, unknown>): void
  error(message: string, fields: Record<string, unknown>): void
}

// Methods, not arrows built when the module loads: mutation testing can then tell which tests
// reach each one, instead of running the whole suite for every change to them.
export const consoleLogger: SingletonLogger = {
  info(message, fields) {
    console.info(logLine(LogLevel.Info, message, fields))
  },
  warn(message, fields) {
    console.warn(logLine(LogLevel.Warn, message, fields))
  },
  error(message, fields) {
    console.error(logLine(LogLevel.Error, message, fields))
  },
}

export const silentLogger: SingletonLogger = { info() {}, warn() {}, error() {} }
