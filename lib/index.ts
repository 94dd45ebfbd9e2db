// `lambda-singleton`: what a job's code calls. `withSingleton` wraps a Lambda handler; `Lock`
// guards any code (`lock.runExclusive`, or `tryAcquire`/`acquire` by hand); the errors they
// throw, and the types a handler is written with. The Middy middleware is on `/middy`, each store
// on its own subpath (`/s3`, `/dynamodb`, `/memory`) so a user of one backend never loads another's
// SDK; the operator's side (`LockOperator`: inspect, pause, resume, force-release, reset) on
// `/operator`; the record's format, the store contract and the parts for authors of stores and
// adapters on `/extend`.

export type { SingletonScheduleEvent } from './config.js'
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
export type { Lease } from './core/lease.js'
export { Lock } from './core/lock.js'
export {
  type AcquireOptions,
  AcquireStatus,
  type Acquisition,
  type LockOptions,
  type TryAcquireOptions,
} from './core/lock-options.js'
export type { JsonValue } from './core/record.js'
export type { ExclusiveRoutine, RunExclusiveOptions, RunResult } from './core/run.js'
export { withSingleton } from './lambda/with-singleton.js'
export { LockHeldError } from './lifecycle/errors.js'
export type {
  LambdaContext,
  SingletonContext,
  SingletonHandle,
} from './lifecycle/handler-context.js'
export type { SingletonLogger } from './lifecycle/logger.js'
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
} from './lifecycle/skip.js'
export type { PauseView } from './schedule/pause.js'
