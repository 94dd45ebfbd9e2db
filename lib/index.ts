// The package root: the protocol core, the run lifecycle and `withSingleton`, on any store.
// Stores live on their own subpaths (`lambda-singleton/s3`, `lambda-singleton/memory`), so a
// user of one backend never loads another's SDK.
export type { BackoffOptions } from './core/backoff.js'
export { type Clock, systemClock } from './core/clock.js'
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
export { Lease, type RecordPatch } from './core/lease.js'
export { Lock } from './core/lock.js'
export {
  type AcquireOptions,
  AcquireStatus,
  type Acquisition,
  type AttemptOptions,
  type BlockedReason,
  type LockInfo,
  type LockOptions,
  type WaitOptions,
} from './core/lock-options.js'
export {
  type JsonValue,
  type LockRecord,
  MAX_RECORD_BYTES,
  MAX_RECORD_DEPTH,
  MAX_STATE_BYTES,
  parseRecord,
} from './core/record.js'
export { type ExclusiveRoutine, type RunOptions, type RunResult, runExclusive } from './core/run.js'
export {
  type LockStore,
  type ReadResult,
  ReadStatus,
  type StoreCallOptions,
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
export { withSingleton } from './lambda/with-singleton.js'
export * from './lifecycle/index.js'
