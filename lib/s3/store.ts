import { GetObjectCommand, HeadObjectCommand, PutObjectCommand, type S3Client } from '@aws-sdk/client-s3'
import { LockOptionsError, LockStoreError } from '../core/errors.js'
import { MAX_RECORD_BYTES } from '../core/record.js'
import {
  type LockStore,
  type ReadResult,
  ReadStatus,
  type StoreCallOptions,
  type WriteResult,
  WriteStatus,
} from '../core/store.js'
import { classifyS3Error, S3ErrorKind } from './errors.js'
import { EtagQuoting, ifMatch, learnFromIfMatch, quotingFor, unquote } from './etag.js'
import { readCapped } from './read-capped.js'

export interface S3LockStoreOptions {
  readonly s3: S3Client
  readonly bucket: string
  /** Timeout of each S3 request, in ms. @default 5000 */
  readonly requestTimeoutMs?: number
  /** @default 'auto' */
  readonly etagQuoting?: EtagQuoting
}

export const DEFAULT_REQUEST_TIMEOUT_MS = 5_000
/** S3's `Date` header has a resolution of one second. */
const S3_CLOCK_RESOLUTION_MS = 1_000

type S3Command = GetObjectCommand | HeadObjectCommand | PutObjectCommand

/** The slice of Smithy's middleware stack we use, typed here to avoid a dependency on @smithy/types. */
interface DeserializeStack {
  add(
    middleware: (
      next: (args: unknown) => Promise<{ response: unknown }>,
    ) => (args: unknown) => Promise<{ response: unknown }>,
    options: { step: 'deserialize'; priority: 'low'; name: string },
  ): void
}

/** The lock store on S3 conditional writes: maps S3's answers to the protocol's results. */
export class S3LockStore implements LockStore {
  readonly clockResolutionMs = S3_CLOCK_RESOLUTION_MS
  readonly s3: S3Client
  readonly bucket: string
  readonly requestTimeoutMs: number
  readonly #quoting: EtagQuoting

  constructor(options: S3LockStoreOptions) {
    if (!options.s3) throw new LockOptionsError('s3 (an S3Client) is required')
    if (typeof options.bucket !== 'string' || options.bucket.length === 0) {
      throw new LockOptionsError('bucket must be a non-empty string')
    }
    const timeout = options.requestTimeoutMs ?? DEFAULT_REQUEST_TIMEOUT_MS
    if (!Number.isFinite(timeout) || timeout <= 0) {
      throw new LockOptionsError(`requestTimeoutMs must be a positive number, got ${timeout}`)
    }
    this.s3 = options.s3
    this.bucket = options.bucket
    this.requestTimeoutMs = timeout
    this.#quoting = options.etagQuoting ?? EtagQuoting.Auto
  }

  async read(key: string, options: StoreCallOptions = {}): Promise<ReadResult> {
    const command = new GetObjectCommand({ Bucket: this.bucket, Key: key })
    const call = await this.#send(key, command, options)
    if (call.kind === S3ErrorKind.NotFound) return { status: ReadStatus.Absent, ...call.date }
    // Without s3:ListBucket, which the construct's grant leaves out, S3 hides a missing key behind 403.
    if (call.kind === S3ErrorKind.Denied)
      return { status: ReadStatus.Absent, unconfirmed: true, ...call.date }
    if (call.kind !== 'ok') throw this.#unexpected(key, 'GetObject', call.error)
    const { output } = call
    if (!('Body' in output) || !output.ETag)
      throw this.#unexpected(key, 'GetObject', new Error('no body or ETag'))
    const body = await readCapped(output.Body, MAX_RECORD_BYTES + 1)
    return { status: ReadStatus.Found, body, etag: unquote(output.ETag), ...call.date }
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
        return { status: WriteStatus.Written, etag: unquote(call.output.ETag), ...call.date }
      case S3ErrorKind.PreconditionFailed:
        // The SDK may have retried a write whose first try landed: then the 412 is our own doing.
        return { status: WriteStatus.PreconditionFailed, ambiguous: call.retried, ...call.date }
      case S3ErrorKind.Conflict:
        return { status: WriteStatus.Conflict, ...call.date }
      case S3ErrorKind.NotFound:
        if ('IfMatch' in condition) return { status: WriteStatus.Absent, ...call.date }
        throw this.#unexpected(key, 'PutObject', call.error)
      case S3ErrorKind.Denied:
        throw this.#unexpected(key, 'PutObject', call.error)
    }
  }

  /** Sends one command with a timeout, capturing the response's `Date` even when S3 answers an error. */
  async #send(key: string, command: S3Command, options: StoreCallOptions) {
    let serverDate: number | undefined
    ;(command.middlewareStack as unknown as DeserializeStack).add(
      (next) => async (args) => {
        try {
          const answer = await next(args)
          serverDate = dateOf(answer.response)
          return answer
        } catch (error) {
          serverDate = dateOf((error as { $response?: unknown }).$response)
          throw error
        }
      },
      { step: 'deserialize', priority: 'low', name: 'lambdaSingletonServerDate' },
    )
    const timeout = AbortSignal.timeout(this.requestTimeoutMs)
    const abortSignal = options.signal ? AbortSignal.any([options.signal, timeout]) : timeout
    const date = (): { serverDate?: number } => (serverDate === undefined ? {} : { serverDate })
    try {
      const output = await this.s3.send(command, { abortSignal })
      return { kind: 'ok' as const, output, date: date() }
    } catch (error) {
      if (options.signal?.aborted) throw options.signal.reason
      const kind = timeout.aborted ? S3ErrorKind.Transient : classifyS3Error(error)
      if (kind === S3ErrorKind.Transient || kind === S3ErrorKind.Fatal) {
        throw new LockStoreError(
          `S3 ${command.constructor.name} on s3://${this.bucket}/${key} failed: ${describe(error, timeout)}`,
          {
            key,
            retryable: kind === S3ErrorKind.Transient,
            cause: error,
          },
        )
      }
      const attempts = (error as { $metadata?: { attempts?: number } }).$metadata?.attempts ?? 1
      return { kind, error, retried: attempts > 1, date: date() }
    }
  }

  #unexpected(key: string, operation: string, error: unknown): LockStoreError {
    return new LockStoreError(
      `S3 ${operation} on s3://${this.bucket}/${key}: unexpected answer: ${describe(error)}`,
      {
        key,
        retryable: false,
        cause: error,
      },
    )
  }
}

function dateOf(response: unknown): number | undefined {
  const headers = (response as { headers?: Record<string, string | undefined> } | undefined)?.headers
  const value = headers?.date ?? headers?.Date
  const time = value === undefined ? Number.NaN : Date.parse(value)
  return Number.isNaN(time) ? undefined : time
}

function describe(error: unknown, timeout?: AbortSignal): string {
  if (timeout?.aborted) return 'request timed out'
  if (error instanceof Error) return `${error.name}: ${error.message}`
  return String(error)
}
