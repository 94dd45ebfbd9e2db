export type { SingletonScheduleEvent } from '../config.js'
export { LockHeldError } from './errors.js'
export { consoleLogger, type SingletonLogger, silentLogger } from './logger.js'
export { OnHeld, type SingletonOptions } from './options.js'
export { Outcome, type OutcomeEvent } from './outcome.js'
export {
  isSkipResult,
  type SingletonContext,
  type SingletonState,
  SkipReason,
  type SkipResult,
  singleton,
} from './singleton.js'
export { isTickDone, tickIdOf } from './tick.js'
