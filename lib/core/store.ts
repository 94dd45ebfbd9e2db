/**
 * The storage a lock needs: one object per key, read whole, written only conditionally.
 * `S3LockStore` and `DynamoDBLockStore` implement it; `MemoryLockStore` is another, for tests.
 *
 * Results are values, not exceptions, because each one steers the protocol. A store throws only
 * `LockStoreError`: `retryable: true` for failures worth another try (5xx, throttling, timeouts,
 * connection resets), `false` for the rest (access denied, no such bucket).
 *
 * Every call must end on its own, within a timeout of the store's (the S3 and DynamoDB stores
 * take `requestTimeoutMs`): `create` and `replace` are called without a signal, since a write
 * once sent is never abandoned (its answer decides whether a lease landed), and neither is the
 * read that settles a write whose answer was lost.
 */
export interface LockStore {
  /**
   * Resolution of `serverDate` in milliseconds (S3's `Date` header has 1 s): the true server
   * time lies in `[serverDate, serverDate + clockResolutionMs)`. Used to stay conservative.
   */
  readonly clockResolutionMs: number
  /**
   * What answers with the store's clock, when several store objects share one (the SDK client
   * they send through): the locks of a process on stores with the same source share one estimate
   * of that clock. @default the store itself
   */
  readonly clockSource?: object
  /**
   * What this store can hold of a record beyond what JSON can, when less: a checkpoint or cursor
   * it could not hold is refused with `LockOptionsError` before anything is written.
   * @default JSON's limits alone (`MAX_RECORD_DEPTH`)
   */
  readonly limits?: StoreLimits
  read(key: string, options?: StoreCallOptions): Promise<ReadResult>
  /** Writes only if no object exists at `key` (S3: `If-None-Match: *`). */
  create(key: string, body: string, options?: StoreCallOptions): Promise<WriteResult>
  /** Writes only if the object's current etag is `etag` (S3: `If-Match`). */
  replace(key: string, body: string, etag: string, options?: StoreCallOptions): Promise<WriteResult>
  /**
   * Asks the store its time as cheaply as it can: the date (epoch ms, see `clockResolutionMs`)
   * of an answer to a call about `key`, undefined when the answer carries none. Locks send these
   * to narrow their estimate of the store's clock while they wait for a token anyway.
   * @default the date of a `read` of `key`
   */
  probeDate?(key: string, options?: StoreCallOptions): Promise<number | undefined>
  /**
   * Takes a released lock in one request, without a read first (DynamoDB: an `UpdateItem`). It
   * writes only over a record of version 1 (`v`) whose `expires_at` is 0, that has no `paused`,
   * whose `token` is a number below `tokenBelow`, and whose `run` is absent or a number below
   * `Number.MAX_SAFE_INTEGER`. There it sets the lease's fields as given, raises `token` by one
   * and `run` by one (from 0 when absent), removes `running`, keeps every other field, and
   * answers with the record as written and the record as it was. Otherwise it writes nothing and
   * answers with what is there, as a read would. Called without a signal, as writes are.
   * Optional: a store without it is read first.
   */
  take?(key: string, take: TakeRequest, options?: StoreCallOptions): Promise<TakeResult>
}

/** What a `take` writes: the lease's fields, set as given, and how high a token it may raise. */
export interface TakeRequest {
  readonly owner: string
  /** Seconds since the epoch, by the store's clock as the taker judges it. */
  readonly expires_at: number
  readonly acquired_at: number
  readonly ttl_ms: number
  /**
   * Nothing is written over a record whose token is this or higher: one so far ahead of the
   * store's clock that no token may follow it (`AHEAD_OF_CLOCK_MS`, `tokens-exhausted`). The
   * read that comes back lets the lock say why.
   */
  readonly tokenBelow: number
}

export const TakeStatus = { Taken: 'taken', NotTaken: 'not-taken' } as const

/** What a `take` came to: the record it wrote and the one it wrote over, or what a read finds there now. */
export type TakeResult =
  | (Timed & {
      readonly status: typeof TakeStatus.Taken
      /** The record as written, and its etag (what a read would find now). */
      readonly body: string
      readonly etag: string
      /** The record as it was before the take (what a read just before would have found). */
      readonly previous: string
    })
  | (Timed & { readonly status: typeof TakeStatus.NotTaken; readonly current: ReadResult })

/** What a store can hold of a record (`LockStore.limits`). */
export interface StoreLimits {
  /**
   * Levels of objects and arrays a record may nest, the record itself being the first; at most
   * `MAX_RECORD_DEPTH` counts. DynamoDB: 32, so a checkpoint or cursor may nest 31 levels.
   */
  readonly recordDepth: number
  /**
   * Why the store cannot hold `value` exactly as the record's field `field` (DynamoDB: a number
   * outside its range), or undefined when it can. Called for values within `recordDepth`.
   */
  unstorable?(field: string, value: unknown): string | undefined
}

export interface StoreCallOptions {
  /** Abandon the call (the caller gave up or ran out of time). Given to reads only. */
  readonly signal?: AbortSignal
}

/** The store's clock as of a response, in ms since the epoch, when the store tells it. */
export interface Timed {
  readonly serverDate?: number
}

export const ReadStatus = { Found: 'found', Absent: 'absent' } as const

export type ReadResult =
  | (Timed & { readonly status: typeof ReadStatus.Found; readonly body: string; readonly etag: string })
  | (Timed & {
      readonly status: typeof ReadStatus.Absent
      /**
       * The store could not tell "absent" from "not allowed to know" (S3 answers 403 to a GET of
       * a missing key when the reader may not list the bucket). A create settles it.
       */
      readonly unconfirmed?: boolean
    })

export const WriteStatus = {
  Written: 'written',
  /** The condition did not hold: another writer got there first (S3 412 PreconditionFailed). */
  PreconditionFailed: 'precondition-failed',
  /** A concurrent conditional write was in flight; re-read and retry (S3 409 ConditionalRequestConflict). */
  Conflict: 'conflict',
  /** `replace` found no object at all (S3 404 on If-Match). */
  Absent: 'absent',
} as const

export type WriteResult =
  | (Timed & { readonly status: typeof WriteStatus.Written; readonly etag: string })
  | (Timed & {
      readonly status: typeof WriteStatus.PreconditionFailed
      /** The store retried the write itself, so the failed condition may be our own first try. */
      readonly ambiguous?: boolean
    })
  | (Timed & { readonly status: typeof WriteStatus.Conflict | typeof WriteStatus.Absent })

/**
 * What a store may offer operators beyond the lock protocol, which never needs it: the keys of
 * its locks (S3: ListObjectsV2, s3:ListBucket; DynamoDB: a Scan, dynamodb:Scan). Optional: the
 * CLI's `list` and `watch` without `--key` use it where the store has it (`canListKeys`).
 */
export interface LockKeyListing {
  /** Every lock key that starts with `prefix` ('' for all), sorted. */
  listKeys(prefix: string, options?: ListKeysOptions): Promise<string[]>
}

export interface ListKeysOptions {
  /** Keys per request (S3 MaxKeys, DynamoDB Limit). @default the service's maximum */
  readonly pageSize?: number
  readonly signal?: AbortSignal
}

/** Whether `store` lists its keys (`LockKeyListing`). */
export function canListKeys<S extends LockStore>(store: S): store is S & LockKeyListing {
  return typeof (store as Partial<LockKeyListing>).listKeys === 'function'
}
