import {
  GetObjectCommand,
  type GetObjectCommandOutput,
  HeadObjectCommand,
  type HeadObjectCommandOutput,
  type PutObjectCommand,
  type PutObjectCommandOutput,
  S3Client,
} from '@aws-sdk/client-s3'
import { type Classified, type ClassifiedSendOptions, sendClassified, sharedClient } from '../aws/classify.js'
import type { SdkClient } from '../aws/send.js'
import type { Clock } from '../core/clock.js'
import { bucketHostError, S3_ERRORS, type S3Answer } from './errors.js'

const sharedS3Client = sharedClient((config) => new S3Client(config))

/** The shared client used when none is given, sending each request once. */
export function defaultS3Client(): S3Client {
  return sharedS3Client()
}

type S3Command = GetObjectCommand | HeadObjectCommand | PutObjectCommand
export type S3Output<C> = C extends GetObjectCommand
  ? GetObjectCommandOutput
  : C extends HeadObjectCommand
    ? HeadObjectCommandOutput
    : PutObjectCommandOutput

/** An S3 answer that steers the protocol (the rest become `LockStoreError`). */
export type S3Call<C extends S3Command> = Classified<S3Output<C>, S3Answer>

export interface SendOptions {
  /** For messages: `s3://bucket/key`. */
  readonly bucket: string
  readonly key: string
  readonly timeoutMs: number
  readonly signal?: AbortSignal | undefined
  /** Who is calling, for messages (e.g. `fencedPut`). @default 'S3' */
  readonly caller?: string
  /** Times each request out. @default systemClock */
  readonly clock?: Clock | undefined
}

/**
 * Sends one command with a timeout, and maps the answer: success, an answer the protocol acts
 * on (412, 409, 404, 403), or a `LockStoreError` (retryable for 5xx, throttling, timeouts and
 * dropped connections).
 */
export function sendS3<C extends S3Command>(
  s3: S3Client,
  command: C,
  options: SendOptions & Pick<ClassifiedSendOptions<S3Output<C>, S3Answer>, 'consume'>,
): Promise<S3Call<C>> {
  const { bucket, key } = options
  const what = s3Request(operationOf(command), bucket, key, options.caller)
  return sendClassified(s3 as SdkClient<C, S3Output<C>>, command, {
    ...options,
    errors: S3_ERRORS,
    what,
    misconfigured: (error) => bucketHostError(error, bucket, what, key, options.caller),
  })
}

/** A request, for messages: `S3 GetObject on s3://bucket/key`. */
export function s3Request(operation: string, bucket: string, key: string, caller = 'S3'): string {
  return `${caller} ${operation} on s3://${bucket}/${key}`
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
