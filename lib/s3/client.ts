import {
  GetObjectCommand,
  type GetObjectCommandOutput,
  HeadObjectCommand,
  type HeadObjectCommandOutput,
  type PutObjectCommand,
  type PutObjectCommandOutput,
  S3Client,
} from '@aws-sdk/client-s3'
import { configurationError } from '../aws/configuration.js'
import { describe, type SdkClient, type SendTimedOptions, sendTimed } from '../aws/send.js'
import { LockStoreError } from '../core/errors.js'
import { bucketHostError, classifyS3Error, S3ErrorKind } from './errors.js'

export { DEFAULT_REQUEST_TIMEOUT_MS } from '../aws/send.js'

let sharedClient: S3Client | undefined

/**
 * The shared client used when none is given. It makes one attempt per call: the lock retries
 * by itself, and knows that a retried conditional write may have landed the first time.
 */
export function defaultS3Client(): S3Client {
  sharedClient ??= new S3Client({ maxAttempts: 1 })
  return sharedClient
}

type S3Command = GetObjectCommand | HeadObjectCommand | PutObjectCommand
export type S3Output<C> = C extends GetObjectCommand
  ? GetObjectCommandOutput
  : C extends HeadObjectCommand
    ? HeadObjectCommandOutput
    : PutObjectCommandOutput

/** An S3 answer that steers the protocol (the rest become `LockStoreError`). */
export type S3Call<C extends S3Command> =
  | { readonly kind: 'ok'; readonly output: S3Output<C>; readonly serverDate: number | undefined }
  | {
      readonly kind: Exclude<S3ErrorKind, typeof S3ErrorKind.Transient | typeof S3ErrorKind.Fatal>
      readonly error: unknown
      /** The SDK sent it more than once: a failed condition may be our own first try's doing. */
      readonly retried: boolean
      readonly serverDate: number | undefined
    }

export interface SendOptions {
  /** For messages: `s3://bucket/key`. */
  readonly bucket: string
  readonly key: string
  readonly timeoutMs: number
  readonly signal?: AbortSignal | undefined
  /** Who is calling, for messages (e.g. `fencedPut`). @default 'S3' */
  readonly caller?: string
}

/**
 * Sends one command with a timeout, and maps the answer: success, an answer the protocol acts
 * on (412, 409, 404, 403), or a `LockStoreError` (retryable for 5xx, throttling, timeouts and
 * dropped connections).
 */
export async function sendS3<C extends S3Command>(
  s3: S3Client,
  command: C,
  options: SendOptions & Pick<SendTimedOptions<S3Output<C>>, 'consume'>,
): Promise<S3Call<C>> {
  const sent = await sendTimed(s3 as SdkClient<C, S3Output<C>>, command, options)
  if (sent.ok) return { kind: 'ok', output: sent.output, serverDate: sent.serverDate }
  const { error, timedOut, retried, serverDate } = sent
  const kind = timedOut ? S3ErrorKind.Transient : classifyS3Error(error)
  if (kind === S3ErrorKind.Transient || kind === S3ErrorKind.Fatal) {
    const what = `${options.caller ?? 'S3'} ${operationOf(command)} on s3://${options.bucket}/${options.key}`
    throw (
      configurationError(error, what, options.key) ??
      bucketHostError(error, options.bucket, what, options.key) ??
      new LockStoreError(`${what} failed: ${describe(error, timedOut)}`, {
        key: options.key,
        retryable: kind === S3ErrorKind.Transient,
        cause: error,
      })
    )
  }
  return { kind, error, retried, serverDate }
}

/**
 * The API name of `command`, written out: a minifier renames classes, so `constructor.name` says
 * `ic` in a bundle instead of `GetObjectCommand`.
 */
function operationOf(command: S3Command): 'GetObject' | 'HeadObject' | 'PutObject' {
  if (command instanceof GetObjectCommand) return 'GetObject'
  if (command instanceof HeadObjectCommand) return 'HeadObject'
  return 'PutObject'
}
