// `lambda-singleton`: what a job's code calls. `withSingleton` wraps a Lambda handler; `Lock`
// guards any code (`lock.runExclusive`, or `tryAcquire`/`acquire` by hand). The Middy middleware
// is on `/middy`, each store on its own subpath (`/s3`, `/dynamodb`, `/memory`) so a user of one
// backend never loads another's SDK, and the parts for authors of stores and adapters on `/extend`.

export { SingletonMetric, type SingletonScheduleEvent } from './config.js'
export type { BackoffOptions } from './core/backoff.js'
export type { Clock } from './core/clock.js'
export {
  ConfigurationReason,
  ConflictReason,
  LockClockError,
  LockConfigurationError,
  LockConflictError,
  LockCorruptedError,
  LockError,
  LockLostError,
  LockOptionsError,
  LockStoreError,
  LockTimeoutError,
  LostReason,
} from './core/errors.js'
export { type KeepAliveOptions, keepAlive } from './core/heartbeat.js'
export type { FencingTokenOptions, FencingTokenSource, Lease, RecordPatch } from './core/lease.js'
export { Lock } from './core/lock.js'
export {
  type AcquireOptions,
  AcquireStatus,
  type Acquisition,
  type BlockedReason,
  type LeaseOptions,
  type LockInfo,
  type LockOptions,
  type TryAcquireOptions,
} from './core/lock-options.js'
export type {
  ForceReleaseOptions,
  PauseOptions,
  PauseResult,
  ResetOptions,
  ResumeResult,
} from './core/operator.js'
export {
  type EndedByOperatorRecord,
  type HistoryEntry,
  type JsonValue,
  type LockRecord,
  type PauseRecord,
  type ReplacedRecord,
  type RunningRecord,
  RunOutcome,
  type ScheduleFields,
} from './core/record.js'
export type { ExclusiveRoutine, RunExclusiveOptions, RunResult } from './core/run.js'
export type { LockStore } from './core/store.js'
export type { RetryOptions } from './core/store-session.js'
export { withSingleton } from './lambda/with-singleton.js'
export { LockHeldError } from './lifecycle/errors.js'
export type {
  InvocationContext,
  LambdaContext,
  SingletonContext,
  SingletonHandle,
} from './lifecycle/handler-context.js'
export { type SingletonLogger, silentLogger } from './lifecycle/logger.js'
export type { SingletonMetricsOptions } from './lifecycle/metrics.js'
export { OnHeld, type SingletonOptions } from './lifecycle/options.js'
export { Outcome, type OutcomeEvent } from './lifecycle/outcome.js'
export {
  type DuplicateSkipResult,
  type HeldSkipResult,
  isSkipResult,
  type LateSkipResult,
  type PausedSkipResult,
  SkipReason,
  type SkipResult,
  type SkipResultBase,
} from './lifecycle/skip.js'
