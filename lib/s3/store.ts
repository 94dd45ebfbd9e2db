import { GetObjectCommand, HeadObjectCommand, PutObjectCommand, type S3Client } from '@aws-sdk/client-s3'
import { unexpectedAnswer } from '../aws/classify.js'
import { dated, requestTimeoutMs } from '../aws/send.js'
import { LockOptionsError, type LockStoreError } from '../core/errors.js'
import { MAX_RECORD_BYTES } from '../core/record.js'
import {
  type ListKeysOptions,
  type LockKeyListing,
  type LockStore,
  type ReadResult,
  ReadStatus,
  type StoreCallOptions,
  type WriteResult,
  WriteStatus,
} from '../core/store.js'
import { defaultS3Client, type S3Output, s3Request, sendS3 } from './client.js'
import { S3ErrorKind } from './errors.js'
import { EtagQuoting, ifMatch, learnFromIfMatch, quotingFor, unquote } from './etag.js'
import { readCapped } from './read-capped.js'

export interface S3LockStoreOptions {
  /** @default a shared client from the environment, one attempt per call (the lock retries itself) */
  readonly s3?: S3Client
  /** The bucket holding the lock objects. */
  readonly bucket: string
  /** Timeout of each S3 request, in ms. @default 5000 */
  readonly requestTimeoutMs?: number
  /** @default 'auto' */
  readonly etagQuoting?: EtagQuoting
}

/** S3's `Date` header has a resolution of one second. */
const S3_CLOCK_RESOLUTION_MS = 1_000

/** The lock store on S3 conditional writes: maps S3's answers to the protocol's results. */
export class S3LockStore implements LockStore, LockKeyListing {
  readonly clockResolutionMs = S3_CLOCK_RESOLUTION_MS
  readonly s3: S3Client
  readonly bucket: string
  readonly requestTimeoutMs: number
  readonly #quoting: EtagQuoting

  constructor(options: S3LockStoreOptions) {
    if (typeof options.bucket !== 'string' || options.bucket.length === 0) {
      throw new LockOptionsError('bucket must be a non-empty string')
    }
    const timeout = requestTimeoutMs(options.requestTimeoutMs)
    this.s3 = options.s3 ?? defaultS3Client()
    this.bucket = options.bucket
    this.requestTimeoutMs = timeout
    this.#quoting = options.etagQuoting ?? EtagQuoting.Auto
  }

  /** Stores sending through one client share what their locks learn of S3's clock. */
  get clockSource(): object {
    return this.s3
  }

  /**
   * Every key in the bucket that starts with `prefix`, in S3's order (`LockKeyListing`):
   * ListObjectsV2, which needs s3:ListBucket and which locking never sends. Its code is loaded
   * only when a listing is asked for.
   */
  async listKeys(prefix: string, options?: ListKeysOptions): Promise<string[]> {
    const { listS3Keys } = await import('./list-keys.js')
    return listS3Keys(this.s3, this.bucket, prefix, options)
  }

  async read(key: string, options: StoreCallOptions = {}): Promise<ReadResult> {
    const command = new GetObjectCommand({ Bucket: this.bucket, Key: key })
    // The body is read within the request's timeout: a cut or stalled body is a failed request.
    let body = ''
    const call = await this.#send(key, command, options, async (output, signal) => {
      body = await readCapped(output.Body, MAX_RECORD_BYTES + 1, signal)
    })
    if (call.kind === S3ErrorKind.NotFound) return { status: ReadStatus.Absent, ...dated(call.serverDate) }
    // Without s3:ListBucket, which the construct's grant leaves out, S3 hides a missing key behind
    // 403 (refused credentials have their own codes, and never come back as Denied).
    if (call.kind === S3ErrorKind.Denied)
      return { status: ReadStatus.Absent, unconfirmed: true, ...dated(call.serverDate) }
    if (call.kind !== 'ok') throw this.#unexpected(key, 'GetObject', call.error)
    const { output } = call
    if (!output.ETag) throw this.#unexpected(key, 'GetObject', new Error('no ETag'))
    return { status: ReadStatus.Found, body, etag: unquote(output.ETag), ...dated(call.serverDate) }
  }

  create(key: string, body: string, options: StoreCallOptions = {}): Promise<WriteResult> {
    return this.#put(key, body, { IfNoneMatch: '*' }, options)
  }

  async replace(
    key: string,
    body: string,
    etag: string,
    options: StoreCallOptions = {},
  ): Promise<WriteResult> {
    const quoting = quotingFor(this.s3, this.#quoting)
    const result = await this.#put(key, body, { IfMatch: ifMatch(etag, quoting) }, options)
    if (result.status !== WriteStatus.Written && result.status !== WriteStatus.PreconditionFailed)
      return result
    const resend = await learnFromIfMatch(
      this.s3,
      quoting,
      result.status === WriteStatus.Written,
      async () => (await this.currentEtag(key, options)) === etag,
    )
    return resend ? this.replace(key, body, etag, options) : result
  }

  /**
   * S3's date, from a HEAD of the key: priced as a GET, without the body. Any answer is dated,
   * a 404 or 403 too.
   */
  async probeDate(key: string, options: StoreCallOptions = {}): Promise<number | undefined> {
    const head = await this.#send(key, new HeadObjectCommand({ Bucket: this.bucket, Key: key }), options)
    return head.serverDate
  }

  /** The object's etag (bare), or undefined when there is none or it cannot be read. */
  async currentEtag(key: string, options: StoreCallOptions = {}): Promise<string | undefined> {
    const head = await this.#send(key, new HeadObjectCommand({ Bucket: this.bucket, Key: key }), options)
    return head.kind === 'ok' && 'ETag' in head.output && head.output.ETag
      ? unquote(head.output.ETag)
      : undefined
  }

  async #put(
    key: string,
    body: string,
    condition: { IfMatch: string } | { IfNoneMatch: '*' },
    options: StoreCallOptions,
  ): Promise<WriteResult> {
    const command = new PutObjectCommand({
      Bucket: this.bucket,
      Key: key,
      Body: body,
      ContentType: 'application/json',
      CacheControl: 'no-store',
      ...condition,
    })
    const call = await this.#send(key, command, options)
    switch (call.kind) {
      case 'ok':
        if (!('ETag' in call.output) || !call.output.ETag) {
          throw this.#unexpected(key, 'PutObject', new Error('no ETag in the answer'))
        }
        return { status: WriteStatus.Written, etag: unquote(call.output.ETag), ...dated(call.serverDate) }
      case S3ErrorKind.PreconditionFailed:
        // The SDK may have retried a write whose first try landed: then the 412 is our own doing.
        return { status: WriteStatus.PreconditionFailed, ambiguous: call.retried, ...dated(call.serverDate) }
      case S3ErrorKind.Conflict:
        return { status: WriteStatus.Conflict, ...dated(call.serverDate) }
      case S3ErrorKind.NotFound:
        if ('IfMatch' in condition) return { status: WriteStatus.Absent, ...dated(call.serverDate) }
        throw this.#unexpected(key, 'PutObject', call.error)
      case S3ErrorKind.Denied:
        throw this.#unexpected(key, 'PutObject', call.error)
    }
  }

  async #send<C extends GetObjectCommand | HeadObjectCommand | PutObjectCommand>(
    key: string,
    command: C,
    options: StoreCallOptions,
    consume?: (output: S3Output<C>, signal: AbortSignal) => Promise<void>,
  ) {
    return sendS3(this.s3, command, {
      bucket: this.bucket,
      key,
      timeoutMs: this.requestTimeoutMs,
      signal: options.signal,
      consume,
    })
  }

  #unexpected(key: string, operation: string, error: unknown): LockStoreError {
    return unexpectedAnswer(s3Request(operation, this.bucket, key), key, error)
  }
}
