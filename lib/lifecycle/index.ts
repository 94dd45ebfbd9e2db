export {
  DEFAULT_METRICS_NAMESPACE,
  MetricDimension,
  SingletonMetric,
  type SingletonScheduleEvent,
} from '../config.js'
export type { InvocationContext, LambdaContext, SingletonContext, SingletonState } from './context.js'
export { LockHeldError } from './errors.js'
export { type RunStart, SingletonLifecycle } from './lifecycle.js'
export { consoleLogger, type SingletonLogger, silentLogger } from './logger.js'
export type { SingletonMetricsOptions } from './metrics.js'
export { OnHeld, type SingletonOptions } from './options.js'
export { Outcome, type OutcomeEvent } from './outcome.js'
export type { SingletonRun } from './run.js'
export {
  type DuplicateSkipResult,
  type HeldSkipResult,
  isSkipResult,
  SkipReason,
  type SkipResult,
} from './skip.js'
export { isTickDone, tickIdOf } from './tick.js'
