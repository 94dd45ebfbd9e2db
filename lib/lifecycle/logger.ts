/**
 * Where the middleware writes its one line per outcome. A Powertools `Logger` fits as it is;
 * the default writes one JSON object per line to the console, which CloudWatch parses.
 */
export interface SingletonLogger {
  info(message: string, fields: Record<string, unknown>): void
  warn(message: string, fields: Record<string, unknown>): void
  error(message: string, fields: Record<string, unknown>): void
}

const line =
  (level: 'INFO' | 'WARN' | 'ERROR', write: (text: string) => void) =>
  (message: string, fields: Record<string, unknown>): void =>
    write(JSON.stringify({ level, message, ...fields }, errorsAsObjects))

export const consoleLogger: SingletonLogger = {
  info: line('INFO', (text) => console.info(text)),
  warn: line('WARN', (text) => console.warn(text)),
  error: line('ERROR', (text) => console.error(text)),
}

export const silentLogger: SingletonLogger = { info() {}, warn() {}, error() {} }

function errorsAsObjects(_key: string, value: unknown): unknown {
  return value instanceof Error ? { name: value.name, message: value.message } : value
}
