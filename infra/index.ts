export { type LockStoreKind, SingletonMetric } from '../lib/config.js'
export { SingletonValidationError } from './errors.js'
export { DENIED_LOCK_DELETES, LOCK_ACTIONS, LockBucket, type LockBucketProps } from './lock-bucket.js'
export type { ILockStore } from './lock-store.js'
export {
  DEFAULT_PARTITION_KEY,
  LockTable,
  type LockTableProps,
  TABLE_KEY_ACTIONS,
  TABLE_LOCK_ACTIONS,
} from './lock-table.js'
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
export {
  SCHEDULE_LIMITS,
  type SingletonScheduleEvent,
  type SingletonScheduleProps,
} from './schedules.js'
export {
  createAlarms,
  createMetricAlarms,
  type SingletonAlarmProps,
  type SingletonAlarms,
  type SingletonMetricAlarms,
  type SingletonMetricAlarmsWiring,
  type SingletonMetricSource,
} from './singleton-alarms.js'
export {
  SingletonMetrics,
  type SingletonMetricsProps,
  type SingletonMetricsWiring,
} from './singleton-metrics.js'
