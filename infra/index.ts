export { SingletonValidationError } from './errors.js'
export { LOCK_ACTIONS, LockBucket, type LockBucketProps } from './lock-bucket.js'
export {
  DEFAULT_PARTITION_KEY,
  LockTable,
  type LockTableProps,
  TABLE_KEY_ACTIONS,
  TABLE_LOCK_ACTIONS,
} from './lock-table.js'
export {
  ScheduledSingleton,
  type ScheduledSingletonOptions,
  type ScheduledSingletonProps,
  type SingletonAlarmProps,
} from './scheduled-singleton.js'
export {
  ScheduledSingletonFunction,
  type ScheduledSingletonFunctionProps,
  type SingletonFunctionProps,
} from './scheduled-singleton-function.js'
export {
  SCHEDULE_LIMITS,
  type SingletonScheduleEvent,
  type SingletonScheduleProps,
} from './schedules.js'
