import type { LockRecord } from './record.js'

/** Base class of every error this library throws on purpose. `instanceof LockError` catches them all. */
export class LockError extends Error {
  override name = 'LockError'
  /** The lock's key (the S3 object key or the DynamoDB partition key), when the error concerns one lock. */
  readonly key: string | undefined

  constructor(message: string, options: { key?: string; cause?: unknown } = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause })
    this.key = options.key
  }
}

/** Options or arguments that can never work: thrown at construction, before any request is made. */
export class LockOptionsError extends LockError {
  override name = 'LockOptionsError'
}

/** Why the lock refused an operation although the call itself was well formed. */
export const ConflictReason = {
  /** The lock object changed between our read and our write; nothing was written. */
  Changed: 'changed',
  /** `reset` found a record that is held (or one it cannot prove released or expired). */
  NotReleased: 'not-released',
  /** `reset` was given a token at or below one the lock already handed out. */
  TokenTooLow: 'token-too-low',
  /**
   * `reset` was given a token more than 10 s ahead of the store's clock. Tokens follow that
   * clock, so such a token would be followed by lower ones if the object were ever deleted.
   */
  TokenAheadOfClock: 'token-ahead-of-clock',
  /**
   * The lock's token (the record's, or a higher one this lock read before) is more than 10 s
   * ahead of the store's clock, which only an outside write makes: following it would let a
   * later token fall below it once the object is deleted, so the lock is not acquired (nor
   * force-released) until `reset` with `backToClock` brings it back to the clock.
   */
  RecordAheadOfClock: 'record-ahead-of-clock',
  /** The record, with what is already in it, would exceed the size every reader accepts. */
  RecordTooLarge: 'record-too-large',
  /**
   * The record's token is `Number.MAX_SAFE_INTEGER`: no token above it can be written exactly,
   * so the lock cannot be acquired (nor force-released) until `reset` with `backToClock`.
   */
  TokensExhausted: 'tokens-exhausted',
} as const
export type ConflictReason = (typeof ConflictReason)[keyof typeof ConflictReason]

/**
 * The lock's current state refuses the operation (an operator's `reset` over a held record, a
 * record that would grow too large). Nothing was written. Unlike `LockOptionsError`, the same
 * call may succeed later or on another lock.
 */
export class LockConflictError extends LockError {
  override name = 'LockConflictError'
  readonly reason: ConflictReason

  constructor(message: string, options: { key: string; reason: ConflictReason; cause?: unknown }) {
    super(message, options)
    this.reason = options.reason
  }
}

/** Why a lease is no longer ours. */
export const LostReason = {
  /** Another contender wrote the lock object since our last write. */
  TakenOver: 'taken-over',
  /** The lock object is gone (someone deleted it). */
  Deleted: 'deleted',
  /** The lease ran past its expiry before it could be renewed. */
  Expired: 'expired',
  /** We released it ourselves; it cannot be used again. */
  Released: 'released',
  /** A run of a newer tick took the lock over while ours ran (`onHeld: 'replace'`). */
  Replaced: 'replaced',
  /**
   * An operator ended the lease on purpose, by force-release or by pausing the job with `now`
   * (`LockRecord.ended_by` names who); the record may since have been taken by another run.
   */
  ReleasedByOperator: 'released-by-operator',
} as const
export type LostReason = (typeof LostReason)[keyof typeof LostReason]

/**
 * The lease is not ours any more. Whatever the holder did after `lostAt` may overlap with
 * a newer holder's work: only fenced writes (token checked by the target) are safe.
 */
export class LockLostError extends LockError {
  override name = 'LockLostError'
  readonly reason: LostReason
  /** The fencing token of the lease that was lost. */
  readonly token: number
  /** The record found in the store when the loss was detected, if it was read. */
  readonly current: LockRecord | undefined

  constructor(
    message: string,
    options: { key: string; reason: LostReason; token: number; current?: LockRecord; cause?: unknown },
  ) {
    super(message, options)
    this.reason = options.reason
    this.token = options.token
    this.current = options.current
  }
}

/** `acquire({ waitMs })` gave up: the lock stayed held for the whole wait. */
export class LockTimeoutError extends LockError {
  override name = 'LockTimeoutError'
  readonly waitedMs: number
  /** The last record seen, i.e. who held the lock when we gave up. */
  readonly holder: LockRecord

  constructor(
    message: string,
    options: { key: string; waitedMs: number; holder: LockRecord; cause?: unknown },
  ) {
    super(message, options)
    this.waitedMs = options.waitedMs
    this.holder = options.holder
  }
}

/**
 * The object at the lock key is not a lock record this library understands. Nothing was
 * written: an operator must look at `raw` and reset the lock explicitly (`LockOperator.reset`,
 * or the CLI's `reset`).
 */
export class LockCorruptedError extends LockError {
  override name = 'LockCorruptedError'
  /** The body as found (up to the size limit), for the operator. */
  readonly raw: string
  /** The etag of the corrupted object, to reset exactly this version. */
  readonly etag: string | undefined

  constructor(message: string, options: { key: string; raw: string; etag?: string; cause?: unknown }) {
    super(message, options)
    this.raw = options.raw
    this.etag = options.etag
  }
}

/**
 * There is no trustworthy clock to judge a lease by: the store's answers carry no date (a proxy
 * stripped `Date`), and the lock was not told to trust the local clock instead.
 */
export class LockClockError extends LockError {
  override name = 'LockClockError'
}

/**
 * The store could not be used: access denied, no such bucket, or transient failures that
 * outlasted the retry budget. `retryable` tells which. A client that cannot reach the store as
 * configured (no region, no credentials, refused credentials) throws the subclass
 * `LockConfigurationError`.
 */
export class LockStoreError extends LockError {
  override name = 'LockStoreError'
  readonly retryable: boolean

  constructor(message: string, options: { key?: string; retryable: boolean; cause?: unknown }) {
    super(message, options)
    this.retryable = options.retryable
  }
}

/** Why the store's client cannot make requests the service accepts. */
export const ConfigurationReason = {
  /** No region (or one that is not a region name): the SDK sent nothing. */
  NoRegion: 'no-region',
  /** No credentials could be loaded: the SDK sent nothing. */
  NoCredentials: 'no-credentials',
  /** The service refused the credentials: an unknown access key, a wrong secret, an expired session. */
  CredentialsRefused: 'credentials-refused',
  /**
   * An S3 client on a custom endpoint (LocalStack, MinIO, a local engine) put the bucket in the
   * host name (virtual-hosted style), which does not resolve: it needs `forcePathStyle: true`.
   */
  BucketHostUnresolved: 'bucket-host-unresolved',
  /**
   * DynamoDB refused the key the store sent: the table's key is not the partition key (and sort
   * key) the store was given, so every request fails alike until `partitionKey` is set right.
   */
  KeySchema: 'key-schema',
} as const
export type ConfigurationReason = (typeof ConfigurationReason)[keyof typeof ConfigurationReason]

/**
 * The store's client is not configured to reach it: no region, no credentials, credentials the
 * service refuses, (S3) a custom endpoint addressed in a way it does not serve, or (DynamoDB) a
 * table keyed otherwise than the store was told. Never retryable (`retryable` is false): no second try can fix it, so the
 * lock fails its first call at once instead of reporting a store that "kept failing".
 */
export class LockConfigurationError extends LockStoreError {
  override name = 'LockConfigurationError'
  readonly reason: ConfigurationReason

  constructor(message: string, options: { key?: string; reason: ConfigurationReason; cause?: unknown }) {
    super(message, { ...options, retryable: false })
    this.reason = options.reason
  }
}
