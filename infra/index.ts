export { type LockStoreKind, SingletonMetric } from '../lib/config.js'
export { SingletonValidationError } from './errors.js'
export { LockBucket, type LockBucketProps } from './lock-bucket.js'
export type { ILockStore } from './lock-store.js'
export { LockTable, type LockTableProps } from './lock-table.js'
export type { BindOptions } from './private/lock-key.js'
export type { ScheduledJobOptions } from './scheduled-job.js'
export {
  ScheduledSingleton,
  type ScheduledSingletonOptions,
  type ScheduledSingletonProps,
} from './scheduled-singleton.js'
export {
  ScheduledSingletonFunction,
  type ScheduledSingletonFunctionProps,
  type SingletonFunctionProps,
} from './scheduled-singleton-function.js'
export { ScheduledSingletonTask, type ScheduledSingletonTaskProps } from './scheduled-singleton-task.js'
export type { SingletonScheduleEvent, SingletonScheduleProps } from './schedules.js'
// The alarm and metric builders, the IAM action lists and the schedule limits stay private: the
// constructs are the surface, and what they grant and make is in their docs and templates.
export type { SingletonAlarmProps } from './singleton-alarms.js'
export {
  SingletonMetrics,
  type SingletonMetricsProps,
  type SingletonMetricsWiring,
} from './singleton-metrics.js'
