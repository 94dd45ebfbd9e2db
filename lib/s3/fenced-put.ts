import {
  HeadObjectCommand,
  PutObjectCommand,
  type PutObjectCommandOutput,
  type S3Client,
} from '@aws-sdk/client-s3'
import { LockError, LockOptionsError, LockStoreError } from '../core/errors.js'
import { DEFAULT_REQUEST_TIMEOUT_MS, type SendOptions, sendS3 } from './client.js'
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
  /** Rounds of head + conditional put when other writers keep getting in between. @default 5 */
  readonly maxRounds?: number
  /** Timeout of each S3 request, in ms. @default 5000 */
  readonly requestTimeoutMs?: number
  /** Abandons the write (e.g. the lease's signal); rejects with the signal's reason. */
  readonly signal?: AbortSignal
}

export interface FencedPutResult {
  readonly etag: string
  /** The token the object carried before, if any. */
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

/**
 * Writes an S3 object only if no newer lease holder wrote it: the object keeps the writer's token
 * in its metadata, and the write is conditional on the etag that carried the token we checked.
 * A zombie that lost its lease gets `FencedWriteRejectedError` instead of overwriting newer work.
 *
 * Costs a HEAD and a PUT. Equal tokens pass: a holder may rewrite its own output.
 */
export async function fencedPut(options: FencedPutOptions): Promise<FencedPutResult> {
  const { s3, bucket, key, token } = options
  if (!Number.isSafeInteger(token) || token < 0) {
    throw new LockOptionsError(`fencedPut: token must be a non-negative safe integer, got ${token}`, { key })
  }
  const rounds = options.maxRounds ?? 5
  const send: SendOptions = {
    bucket,
    key,
    timeoutMs: options.requestTimeoutMs ?? DEFAULT_REQUEST_TIMEOUT_MS,
    signal: options.signal,
    caller: 'fencedPut:',
  }
  let hiddenOnce = false
  for (let round = 0; round < rounds; round++) {
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
    if (call.kind === 'ok') {
      if (current) await learnFromIfMatch(s3, quoting, true, async () => false)
      return { etag: unquote(call.output.ETag ?? ''), previousToken, output: call.output }
    }
    if (call.kind === S3ErrorKind.PreconditionFailed && current) {
      // Look again either way: the next round sends quoted etags if that was the cause.
      const unchanged = async () => (await headObject(s3, send))?.etag === current.etag
      await learnFromIfMatch(s3, quoting, false, unchanged)
      continue
    }
    if (call.kind === S3ErrorKind.PreconditionFailed) {
      // The HEAD said "absent" (or 403, which hides absence) but the object exists: twice means
      // it is there and we may not read it, so its token cannot be checked.
      if (hiddenOnce) {
        throw new LockStoreError(
          `fencedPut: s3://${bucket}/${key} exists but its HEAD is denied (s3:GetObject)`,
          { key, retryable: false, cause: call.error },
        )
      }
      hiddenOnce = true
      continue
    }
    if (call.kind === S3ErrorKind.Denied) {
      throw new LockStoreError(`fencedPut: s3://${bucket}/${key}: access denied`, {
        key,
        retryable: false,
        cause: call.error,
      })
    }
    // 409 or 404: someone wrote (or deleted) between our HEAD and PUT: look again.
  }
  throw new LockStoreError(`fencedPut: s3://${bucket}/${key} kept changing under ${rounds} tries`, {
    key,
    retryable: true,
  })
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
