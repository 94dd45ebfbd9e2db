import {
  HeadObjectCommand,
  PutObjectCommand,
  type PutObjectCommandOutput,
  type S3Client,
} from '@aws-sdk/client-s3'
import { DEFAULT_REQUEST_TIMEOUT_MS } from '../aws/send.js'
import { type BackoffOptions, backoffDelay } from '../core/backoff.js'
import { systemClock } from '../core/clock.js'
import { LockError, LockOptionsError, LockStoreError } from '../core/errors.js'
import { type SendOptions, sendS3 } from './client.js'
import { S3ErrorKind } from './errors.js'
import { ifMatch, learnFromIfMatch, quotingFor, unquote } from './etag.js'

/** The user-metadata key (`x-amz-meta-fencing-token`) that carries the writer's token. */
export const FENCING_TOKEN_METADATA = 'fencing-token'

export interface FencedPutOptions {
  readonly s3: S3Client
  readonly bucket: string
  readonly key: string
  /** The object's content. Not a stream: a write that meets a concurrent writer is sent again. */
  readonly body: string | Uint8Array
  /** The writer's fencing token (`context.singleton.token`, `lease.token`). */
  readonly token: number
  readonly contentType?: string
  /** More user metadata to store; the fencing token is added to it. */
  readonly metadata?: Record<string, string>
  /**
   * How long to keep trying, in ms, while other writers keep getting in between or S3 keeps
   * failing transiently. Each lost round means another writer made progress, so a writer whose
   * token is still the highest it has seen tries again until then; each request's timeout is
   * cut to what is left. Then: a retryable `LockStoreError`. @default 10000
   */
  readonly timeoutMs?: number
  /** Timeout of each S3 request, in ms. @default 5000 */
  readonly requestTimeoutMs?: number
  /** Abandons the write (e.g. the lease's signal); rejects with the signal's reason. */
  readonly signal?: AbortSignal
}

export interface FencedPutResult {
  readonly etag: string
  /**
   * The token the object carried before, if any. After a try whose answer was lost, and which
   * may have landed, it can be this writer's own token.
   */
  readonly previousToken: number | undefined
  readonly output: PutObjectCommandOutput
}

/** The object was written by a newer holder (a higher token): this writer is stale. Nothing was written. */
export class FencedWriteRejectedError extends LockError {
  override name = 'FencedWriteRejectedError'
  readonly token: number
  readonly currentToken: number

  constructor(message: string, options: { key: string; token: number; currentToken: number }) {
    super(message, { key: options.key })
    this.token = options.token
    this.currentToken = options.currentToken
  }
}

/** Default of `FencedPutOptions.timeoutMs`. */
export const DEFAULT_FENCED_PUT_TIMEOUT_MS = 10_000
/** Pauses after a failed or conflicting round; a round lost to another writer's write retries at once. */
const PAUSE: BackoffOptions = { baseMs: 20, capMs: 500 }

/** What one round (HEAD, conditional PUT) came to, when it did not write or throw. */
const Round = {
  /** Another writer got in between (412): it made progress, look again now. */
  Lost: 'lost',
  /** A conditional write was in flight (409) or the object vanished (404): look again shortly. */
  Conflict: 'conflict',
  /** The HEAD saw no object, yet the create found one: it may be hidden from us (403). */
  Hidden: 'hidden',
} as const
type Round = (typeof Round)[keyof typeof Round]

/**
 * Writes an S3 object only if no newer lease holder wrote it: the object keeps the writer's token
 * in its metadata, and the write is conditional on the etag that carried the token we checked.
 * A zombie that lost its lease gets `FencedWriteRejectedError` instead of overwriting newer work.
 *
 * Costs a HEAD and a PUT, and as many more rounds as other writers (or transient S3 failures)
 * get in between, for up to `timeoutMs`. Equal tokens pass: a holder may rewrite its own output.
 */
export async function fencedPut(options: FencedPutOptions): Promise<FencedPutResult> {
  const { bucket, key, token } = options
  if (!Number.isSafeInteger(token) || token < 0) {
    throw new LockOptionsError(`fencedPut: token must be a non-negative safe integer, got ${token}`, { key })
  }
  const timeoutMs = options.timeoutMs ?? DEFAULT_FENCED_PUT_TIMEOUT_MS
  const requestTimeoutMs = options.requestTimeoutMs ?? DEFAULT_REQUEST_TIMEOUT_MS
  for (const [name, value] of Object.entries({ timeoutMs, requestTimeoutMs })) {
    if (!Number.isFinite(value) || value <= 0) {
      throw new LockOptionsError(`fencedPut: ${name} must be a positive number, got ${value}`, { key })
    }
  }
  const deadline = Date.now() + timeoutMs
  let hiddenOnce = false
  let failure: LockStoreError | undefined
  for (let round = 0; ; round++) {
    const left = deadline - Date.now()
    if (left <= 0) {
      throw new LockStoreError(
        `fencedPut: s3://${bucket}/${key} kept changing${failure ? ' or failing' : ''} for ${timeoutMs} ms; token ${token} may not have been written`,
        { key, retryable: true, cause: failure },
      )
    }
    const send: SendOptions = {
      bucket,
      key,
      timeoutMs: Math.min(requestTimeoutMs, left),
      signal: options.signal,
      caller: 'fencedPut:',
    }
    let outcome: FencedPutResult | Round
    try {
      outcome = await fencedRound(options, send, hiddenOnce)
    } catch (error) {
      // A transient failure, a PUT's included: it may have landed, which the next round's HEAD shows.
      if (!(error instanceof LockStoreError) || !error.retryable) throw error
      failure = error
      outcome = Round.Conflict
    }
    if (typeof outcome === 'object') return outcome
    if (outcome === Round.Hidden) hiddenOnce = true
    if (outcome !== Round.Lost) {
      await pause(Math.min(backoffDelay(round, PAUSE), deadline - Date.now()), options.signal)
    }
  }
}

/** One HEAD and conditional PUT: the write, or why to look again. Throws when it never can. */
async function fencedRound(
  options: FencedPutOptions,
  send: SendOptions,
  hiddenOnce: boolean,
): Promise<FencedPutResult | Round> {
  const { s3, bucket, key, token } = options
  const current = await headObject(s3, send)
  const previousToken = current?.token
  if (previousToken !== undefined && previousToken > token) {
    throw new FencedWriteRejectedError(
      `fencedPut: s3://${bucket}/${key} carries token ${previousToken}; token ${token} is stale, nothing was written`,
      { key, token, currentToken: previousToken },
    )
  }
  const quoting = quotingFor(s3)
  const condition = current ? { IfMatch: ifMatch(current.etag, quoting) } : ({ IfNoneMatch: '*' } as const)
  const put = new PutObjectCommand({
    Bucket: bucket,
    Key: key,
    Body: options.body,
    ...(options.contentType && { ContentType: options.contentType }),
    Metadata: { ...options.metadata, [FENCING_TOKEN_METADATA]: String(token) },
    ...condition,
  })
  const call = await sendS3(s3, put, send)
  switch (call.kind) {
    case 'ok':
      if (current) await learnFromIfMatch(s3, quoting, true, async () => false)
      return { etag: unquote(call.output.ETag ?? ''), previousToken, output: call.output }
    case S3ErrorKind.PreconditionFailed:
      if (current) {
        // Look again either way: the next round sends quoted etags if that was the cause.
        const unchanged = async () => (await headObject(s3, send))?.etag === current.etag
        await learnFromIfMatch(s3, quoting, false, unchanged)
        return Round.Lost
      }
      // The HEAD said "absent" (or 403, which hides absence) but the object exists: twice means
      // it is there and we may not read it, so its token cannot be checked.
      if (hiddenOnce) {
        throw new LockStoreError(
          `fencedPut: s3://${bucket}/${key} exists but its HEAD is denied (s3:GetObject)`,
          { key, retryable: false, cause: call.error },
        )
      }
      return Round.Hidden
    case S3ErrorKind.Denied:
      throw new LockStoreError(`fencedPut: s3://${bucket}/${key}: access denied`, {
        key,
        retryable: false,
        cause: call.error,
      })
    default:
      // 409 or 404: someone wrote (or deleted) between our HEAD and PUT: look again.
      return Round.Conflict
  }
}

function pause(ms: number, signal: AbortSignal | undefined): Promise<void> {
  return systemClock.sleep(Math.max(0, ms), signal)
}

async function headObject(
  s3: S3Client,
  send: SendOptions,
): Promise<{ etag: string; token: number | undefined } | undefined> {
  const call = await sendS3(s3, new HeadObjectCommand({ Bucket: send.bucket, Key: send.key }), send)
  // Without s3:ListBucket, S3 answers 403 for a missing key; the conditional create settles it.
  if (call.kind !== 'ok') return undefined
  const raw = call.output.Metadata?.[FENCING_TOKEN_METADATA]
  const parsed = raw === undefined ? Number.NaN : Number(raw)
  return { etag: unquote(call.output.ETag ?? ''), token: Number.isSafeInteger(parsed) ? parsed : undefined }
}
