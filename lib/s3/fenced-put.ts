import { createHash } from 'node:crypto'
import {
  HeadObjectCommand,
  PutObjectCommand,
  type PutObjectCommandOutput,
  type S3Client,
} from '@aws-sdk/client-s3'
import { DEFAULT_REQUEST_TIMEOUT_MS } from '../aws/send.js'
import { type BackoffOptions, backoffDelay } from '../core/backoff.js'
import { type Clock, systemClock } from '../core/clock.js'
import { LockError, LockOptionsError, LockStoreError } from '../core/errors.js'
import type { FencingTokenSource } from '../core/lease.js'
import { type SendOptions, sendS3 } from './client.js'
import { S3ErrorKind } from './errors.js'
import { ifMatch, learnFromIfMatch, quotingFor, unquote } from './etag.js'
import {
  checkReadValidityMs,
  DEFAULT_READ_VALIDITY_MS,
  guardWithReadValidity,
  isQuiet,
  type ReadValidity,
  StaleReadError,
  settleDelayMs,
  startReadValidity,
} from './read-validity.js'

/** The user-metadata key (`x-amz-meta-fencing-token`) that carries the writer's token. */
export const FENCING_TOKEN_METADATA = 'fencing-token'

/**
 * What `fencedPut` writes, and as whom: the lease (or `context.singleton`), whose token it
 * awaits, or a token already awaited.
 */
export type FencedPutOptions = FencedPutTarget &
  (
    | {
        /** The writer's lease, or `context.singleton`: `fencedPut` awaits its `fencingToken()`. */
        readonly lease: FencingTokenSource
        readonly token?: never
      }
    | {
        /** The writer's fencing token, as `fencingToken()` resolved it. */
        readonly token: number
        readonly lease?: never
      }
  )

/** What `fencedPut` writes where, and how it goes about it. */
export interface FencedPutTarget {
  readonly s3: S3Client
  readonly bucket: string
  readonly key: string
  /** The object's content. Not a stream: a write that meets a concurrent writer is sent again. */
  readonly body: string | Uint8Array
  readonly contentType?: string
  /** More user metadata to store; the fencing token is added to it. */
  readonly metadata?: Record<string, string>
  /**
   * How long to keep trying, in ms, while other writers keep getting in between or S3 keeps
   * failing transiently. Each lost round means another writer made progress, so a writer whose
   * token is still the highest it has seen tries again until then; each request's timeout is
   * cut to what is left. Then: a retryable `LockStoreError`. A settle already owed (see
   * `readValidityMs`) is waited out whole even past it, at most 1.1 × `readValidityMs` + 50 ms
   * and a HEAD more. @default 10000
   */
  readonly timeoutMs?: number
  /** Timeout of each S3 request, in ms. @default 5000 */
  readonly requestTimeoutMs?: number
  /**
   * How long, from sending its HEAD, a round may take to get its PUT to S3: a PUT not sent by
   * then is not sent (the round reads again), and one still going is abandoned. A writer that
   * finds its write left the etag unchanged (the object held these bytes, under a lower token)
   * waits this long, plus 10 % and 50 ms, for stale writes still on their way, and writes again
   * over any that landed. Give every writer of an object the same value. @default 2000
   */
  readonly readValidityMs?: number
  /**
   * Abandons the write (e.g. the lease's signal); rejects with the signal's reason. Not once a
   * write of the call may have landed and owes its settle (see `readValidityMs`): the settle,
   * and the write back it may need, are finished first, else a stale write could stay over the
   * bytes that earlier calls returned with.
   */
  readonly signal?: AbortSignal
  /**
   * Local time and waiting, for tests on a simulated clock. @default the system clock, with the
   * read validity measured on both the monotonic and the wall clock
   */
  readonly clock?: Clock
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
 * A write of the bytes the object already holds, over a lower token, leaves the etag as it was,
 * so `If-Match` cannot stop a stale holder that read before it: that write also waits
 * `readValidityMs` (+10 %, +50 ms) and HEADs once more, writing again over any stale write that
 * landed meanwhile (`read-validity.ts` says why nothing stronger exists on S3).
 */
export async function fencedPut(options: FencedPutOptions): Promise<FencedPutResult> {
  const { bucket, key } = options
  // The token's wait (until the store's clock has passed it) is not S3's time: timeoutMs starts after.
  const token = options.lease
    ? await options.lease.fencingToken(options.signal ? { signal: options.signal } : {})
    : options.token
  if (!Number.isSafeInteger(token) || token < 0) {
    throw new LockOptionsError(
      `fencedPut: token must be a non-negative safe integer, got ${token}` +
        (token === undefined ? ' (pass lease: context.singleton, or token: await lease.fencingToken())' : ''),
      { key },
    )
  }
  const timeoutMs = options.timeoutMs ?? DEFAULT_FENCED_PUT_TIMEOUT_MS
  const requestTimeoutMs = options.requestTimeoutMs ?? DEFAULT_REQUEST_TIMEOUT_MS
  for (const [name, value] of Object.entries({ timeoutMs, requestTimeoutMs })) {
    if (!Number.isFinite(value) || value <= 0) {
      throw new LockOptionsError(`fencedPut: ${name} must be a positive number, got ${value}`, { key })
    }
  }
  checkReadValidityMs(options.readValidityMs ?? DEFAULT_READ_VALIDITY_MS, key)
  const clock = options.clock ?? systemClock
  const deadline = clock.now() + timeoutMs
  const state: CallState = { hiddenOnce: false, settleOwed: false, sent: false }
  let failure: LockStoreError | undefined
  for (let round = 0; ; round++) {
    const left = deadline - clock.now()
    if (left <= 0) {
      // Out of time while a write was settling: it may have landed, and a stale write may land
      // over it yet. Called again, the object is not quiet, so the next call waits that out.
      const why = state.settleOwed
        ? `ran out of ${timeoutMs} ms while waiting out stale writes that may still land over its write`
        : `kept changing${failure ? ' or failing' : ''} for ${timeoutMs} ms`
      throw new LockStoreError(
        `fencedPut: s3://${bucket}/${key} ${why}; token ${token} may not have been written, or may be overwritten by a stale write: call again`,
        { key, retryable: true, cause: failure },
      )
    }
    // Once a write of this call may have landed and owes its settle, the signal no longer stops
    // the call: abandoned, a stale write may land over it and stay, over tokens that earlier
    // calls returned with (I3).
    const signal = state.settleOwed && state.sent ? undefined : options.signal
    const send: SendOptions = {
      bucket,
      key,
      timeoutMs: Math.min(requestTimeoutMs, left),
      signal,
      caller: 'fencedPut:',
      clock: options.clock,
    }
    let outcome: FencedPutResult | Round
    try {
      outcome = await fencedRound({ ...options, token }, send, state)
    } catch (error) {
      // A transient failure, a PUT's included: it may have landed, which the next round's HEAD shows.
      if (!(error instanceof LockStoreError) || !error.retryable) throw error
      // A PUT held back because its HEAD got too old: nobody failed, read again at once.
      outcome = error.cause instanceof StaleReadError ? Round.Lost : Round.Conflict
      if (outcome === Round.Conflict) failure = error
    }
    if (typeof outcome === 'object') return outcome
    if (outcome === Round.Hidden) state.hiddenOnce = true
    if (outcome !== Round.Lost) {
      await pause(clock, Math.min(backoffDelay(round, PAUSE), deadline - clock.now()), signal)
    }
  }
}

/** A call's options with its token resolved. */
type TokenedPut = FencedPutTarget & { readonly token: number }

/** What one call carries from round to round. */
interface CallState {
  /** A create found the object though the HEAD did not: a second time means it is hidden from us. */
  hiddenOnce: boolean
  /**
   * A PUT that may have landed left, or would leave, the etag as it was over a lower token, or
   * went over an object written moments ago (`isQuiet`): the call must settle (`settled`) before
   * it returns, even if a later round sees its own token.
   */
  settleOwed: boolean
  /** A PUT of this call was sent: it may have landed. */
  sent: boolean
}

/** One HEAD and conditional PUT: the write, or why to look again. Throws when it never can. */
async function fencedRound(
  options: TokenedPut,
  send: SendOptions,
  state: CallState,
): Promise<FencedPutResult | Round> {
  const { s3, bucket, key, token } = options
  const validity = startReadValidity(options.readValidityMs ?? DEFAULT_READ_VALIDITY_MS, options.clock)
  const current = await headObject(s3, send, validity.validityMs)
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
  const raisesToken = previousToken === undefined || previousToken < token
  // Bytes written over an object written moments ago may be bytes it held just before, which a
  // stale holder may have read (`isQuiet`); bytes it holds now, under a lower token, surely are.
  const sameBytes = current !== undefined && raisesToken && md5Hex(options.body) === current.etag
  if (sameBytes || (current !== undefined && !current.quiet)) state.settleOwed = true
  const validFor = Math.floor(validity.left())
  if (validFor <= 0) return Round.Lost
  guardWithReadValidity(put, validity)
  state.sent = true
  const call = await sendS3(s3, put, { ...send, timeoutMs: Math.min(send.timeoutMs, validFor) })
  switch (call.kind) {
    case 'ok': {
      if (current) await learnFromIfMatch(s3, quoting, true, async () => false)
      const result = { etag: unquote(call.output.ETag ?? ''), previousToken, output: call.output }
      // The etag can also stay when it is not the body's MD5 (encryption): the answer tells.
      if (current?.etag === result.etag && raisesToken) state.settleOwed = true
      if (!state.settleOwed) return result
      return (await settled(options, send, validity, result)) ? result : Round.Lost
    }
    case S3ErrorKind.PreconditionFailed:
      if (current) {
        // Look again either way: the next round sends quoted etags if that was the cause.
        const unchanged = async () => (await headObject(s3, send, validity.validityMs))?.etag === current.etag
        await learnFromIfMatch(s3, quoting, false, unchanged)
        return Round.Lost
      }
      // The HEAD said "absent" (or 403, which hides absence) but the object exists: twice means
      // it is there and we may not read it, so its token cannot be checked.
      if (state.hiddenOnce) {
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

/**
 * After a write that left the etag as it was, over a lower token (or none): a stale holder that
 * read the object before it is not stopped by `If-Match`, and may still be between its HEAD and
 * its PUT. Each such PUT reaches S3 within its read validity (`read-validity.ts`), so wait that
 * out, then look: still our write (or a newer one) means no stale write can land any more, since
 * every later reader sees our token. A lower token means one landed: false, write again over it.
 */
async function settled(
  options: TokenedPut,
  send: SendOptions,
  validity: ReadValidity,
  written: FencedPutResult,
): Promise<boolean> {
  // Waited out whole, even past the call's deadline (at most 1.1 R + 50 ms and a HEAD more): cut
  // short, the write would stay unsettled, and a call again would find the object just written,
  // owe the same wait, and be cut short again, for good.
  // Nor does the signal cut it short (the lease's, as it ends): the same write would stay
  // unsettled, over tokens that earlier calls returned with.
  const clock = options.clock ?? systemClock
  await pause(clock, settleDelayMs(validity.validityMs), undefined)
  const timeoutMs = options.requestTimeoutMs ?? DEFAULT_REQUEST_TIMEOUT_MS
  const now = await headObject(options.s3, { ...send, timeoutMs, signal: undefined }, validity.validityMs)
  if (now === undefined) return false
  if (now.token !== undefined && now.token > options.token) return true
  return now.etag === written.etag && now.token === options.token
}

/** A single-part etag: the MD5 of the bytes S3 stores, which are the body as sent (UTF-8 for a string). */
function md5Hex(body: string | Uint8Array): string {
  return createHash('md5').update(body).digest('hex')
}

function pause(clock: Clock, ms: number, signal: AbortSignal | undefined): Promise<void> {
  return clock.sleep(Math.max(0, ms), signal)
}

/** What a HEAD found: the etag, the token, and whether no stale write can still land (`isQuiet`). */
interface Head {
  readonly etag: string
  readonly token: number | undefined
  readonly quiet: boolean
}

async function headObject(s3: S3Client, send: SendOptions, validityMs: number): Promise<Head | undefined> {
  const call = await sendS3(s3, new HeadObjectCommand({ Bucket: send.bucket, Key: send.key }), send)
  // Without s3:ListBucket, S3 answers 403 for a missing key; the conditional create settles it.
  if (call.kind !== 'ok') return undefined
  const raw = call.output.Metadata?.[FENCING_TOKEN_METADATA]
  const parsed = raw === undefined ? Number.NaN : Number(raw)
  return {
    etag: unquote(call.output.ETag ?? ''),
    token: Number.isSafeInteger(parsed) ? parsed : undefined,
    quiet: isQuiet(call.output.LastModified, call.serverDate, validityMs),
  }
}
