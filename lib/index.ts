export type { BackoffOptions } from './core/backoff.js'
export { type Clock, systemClock } from './core/clock.js'
export type { RetryOptions } from './core/context.js'
export {
  LockCorruptedError,
  LockError,
  LockLostError,
  LockOptionsError,
  LockStoreError,
  LockTimeoutError,
  LostReason,
} from './core/errors.js'
export { Lease, type RecordPatch } from './core/lease.js'
export {
  type AcquireOptions,
  DEFAULT_CLOCK_SKEW_MARGIN_MS,
  DEFAULT_TTL_MS,
  Lock,
  type LockInfo,
  type LockOptions,
  type WaitOptions,
} from './core/lock.js'
export {
  type JsonValue,
  type LockRecord,
  MAX_RECORD_BYTES,
  MAX_STATE_BYTES,
  parseRecord,
} from './core/record.js'
export {
  type LockStore,
  type ReadResult,
  ReadStatus,
  type StoreCallOptions,
  type WriteResult,
  WriteStatus,
} from './core/store.js'
export {
  FENCING_TOKEN_METADATA,
  type FencedPutOptions,
  type FencedPutResult,
  FencedWriteRejectedError,
  fencedPut,
} from './fencing/fenced-put.js'
export { MemoryLockStore, type MemoryLockStoreOptions } from './memory/store.js'
export { EtagQuoting } from './s3/etag.js'
export { defaultS3Client, S3Lock, type S3LockOptions } from './s3/s3-lock.js'
export { S3LockStore, type S3LockStoreOptions } from './s3/store.js'
