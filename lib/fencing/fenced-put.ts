import {
  HeadObjectCommand,
  PutObjectCommand,
  type PutObjectCommandOutput,
  type S3Client,
} from '@aws-sdk/client-s3'
import { LockError, LockOptionsError, LockStoreError } from '../core/errors.js'
import { classifyS3Error, S3ErrorKind } from '../s3/errors.js'
import { ifMatch, learnFromIfMatch, quotingFor, unquote } from '../s3/etag.js'

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
  let hiddenOnce = false
  for (let round = 0; round < rounds; round++) {
    const current = await headObject(s3, bucket, key)
    const previousToken = current?.token
    if (previousToken !== undefined && previousToken > token) {
      throw new FencedWriteRejectedError(
        `fencedPut: s3://${bucket}/${key} carries token ${previousToken}; token ${token} is stale, nothing was written`,
        { key, token, currentToken: previousToken },
      )
    }
    const quoting = quotingFor(s3)
    const condition = current ? { IfMatch: ifMatch(current.etag, quoting) } : ({ IfNoneMatch: '*' } as const)
    try {
      const output = await s3.send(
        new PutObjectCommand({
          Bucket: bucket,
          Key: key,
          Body: options.body,
          ...(options.contentType && { ContentType: options.contentType }),
          Metadata: { ...options.metadata, [FENCING_TOKEN_METADATA]: String(token) },
          ...condition,
        }),
      )
      if (current) await learnFromIfMatch(s3, quoting, true, async () => false)
      return { etag: unquote(output.ETag ?? ''), previousToken, output }
    } catch (error) {
      const kind = classifyS3Error(error)
      if (kind === S3ErrorKind.PreconditionFailed && current) {
        // Look again either way: the next round sends quoted etags if that was the cause.
        const unchanged = async () => (await headObject(s3, bucket, key))?.etag === current.etag
        await learnFromIfMatch(s3, quoting, false, unchanged)
        continue
      }
      if (kind === S3ErrorKind.PreconditionFailed && !current) {
        // The HEAD said "absent" (or 403, which hides absence) but the object exists: twice means
        // it is there and we may not read it, so its token cannot be checked.
        if (hiddenOnce) {
          throw new LockStoreError(
            `fencedPut: s3://${bucket}/${key} exists but its HEAD is denied (s3:GetObject)`,
            {
              key,
              retryable: false,
              cause: error,
            },
          )
        }
        hiddenOnce = true
        continue
      }
      if (
        kind === S3ErrorKind.PreconditionFailed ||
        kind === S3ErrorKind.Conflict ||
        kind === S3ErrorKind.NotFound
      ) {
        continue // someone wrote (or deleted) between our HEAD and PUT: look again
      }
      throw storeError(bucket, key, error, kind === S3ErrorKind.Transient)
    }
  }
  throw new LockStoreError(`fencedPut: s3://${bucket}/${key} kept changing under ${rounds} tries`, {
    key,
    retryable: true,
  })
}

async function headObject(
  s3: S3Client,
  bucket: string,
  key: string,
): Promise<{ etag: string; token: number | undefined } | undefined> {
  try {
    const head = await s3.send(new HeadObjectCommand({ Bucket: bucket, Key: key }))
    const raw = head.Metadata?.[FENCING_TOKEN_METADATA]
    const parsed = raw === undefined ? Number.NaN : Number(raw)
    return { etag: unquote(head.ETag ?? ''), token: Number.isSafeInteger(parsed) ? parsed : undefined }
  } catch (error) {
    const kind = classifyS3Error(error)
    // Without s3:ListBucket, S3 answers 403 for a missing key; the conditional create settles it.
    if (kind === S3ErrorKind.NotFound || kind === S3ErrorKind.Denied) return undefined
    throw storeError(bucket, key, error, kind === S3ErrorKind.Transient)
  }
}

function storeError(bucket: string, key: string, error: unknown, retryable: boolean): LockStoreError {
  const what = error instanceof Error ? `${error.name}: ${error.message}` : String(error)
  return new LockStoreError(`fencedPut: s3://${bucket}/${key} failed: ${what}`, {
    key,
    retryable,
    cause: error,
  })
}
