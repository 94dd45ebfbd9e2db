// `lambda-singleton/extend`: for authors of stores and adapters, not for a job's code. The
// `LockStore` contract a store implements (see the contract suite in test/stores), the record's
// format and limits, and the run lifecycle that `singleton()` and `withSingleton()` are thin
// adapters over: a new adapter (another middleware engine, a container entry point) calls
// `SingletonLifecycle.start` and settles the run it returns.

export { DEFAULT_METRICS_NAMESPACE, MetricDimension, SingletonMetric } from './config.js'
export type { BackoffOptions } from './core/backoff.js'
export { type Clock, systemClock } from './core/clock.js'
export type { LeaseOptions, RunRecorder } from './core/lock-options.js'
export { parseRecord } from './core/parse-record.js'
export {
  type EndedByOperatorRecord,
  type HistoryEntry,
  type JsonValue,
  type LockRecord,
  MAX_RECORD_BYTES,
  MAX_RECORD_DEPTH,
  MAX_STATE_BYTES,
  OPERATOR_FIELDS,
  type OperatorField,
  PAUSED_RECORD_VERSION,
  type PauseRecord,
  RECORD_VERSION,
  type ReplacedRecord,
  type RunningRecord,
  RunOutcome,
} from './core/record.js'
// Moved here from the root, which keeps what a job's code needs: the lease's record patch, the
// skip results' common base, and the context any invocation gives (the root's LambdaContext is one).
export type { RecordFields, RecordPatch } from './core/record-patch.js'
export {
  canListKeys,
  type ListKeysOptions,
  type LockKeyListing,
  type LockStore,
  type ReadResult,
  ReadStatus,
  type StoreCallOptions,
  type StoreLimits,
  type TakeRequest,
  type TakeResult,
  TakeStatus,
  type Timed,
  type WriteResult,
  WriteStatus,
} from './core/store.js'
export type { RetryOptions } from './core/store-session.js'
export {
  DEFAULT_CLOCK_SKEW_MARGIN_MS,
  DEFAULT_TTL_MS,
  MAX_CLOCK_SKEW_MARGIN_MS,
  MAX_TTL_MS,
} from './core/timing.js'
export type { InvocationContext } from './lifecycle/handler-context.js'
export { type RunStart, SingletonLifecycle } from './lifecycle/lifecycle.js'
export { consoleLogger, silentLogger } from './lifecycle/logger.js'
export type { SingletonRun } from './lifecycle/run.js'
export type { SkipResultBase } from './lifecycle/skip.js'
export type { ScheduleFields } from './schedule/fields.js'
export { keepHistory } from './schedule/history.js'
export { isTickDone, tickIdOf } from './schedule/tick.js'
