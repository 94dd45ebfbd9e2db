import {
  type GetObjectCommand,
  type GetObjectCommandOutput,
  type HeadObjectCommand,
  type HeadObjectCommandOutput,
  type PutObjectCommand,
  type PutObjectCommandOutput,
  S3Client,
} from '@aws-sdk/client-s3'
import { LockStoreError } from '../core/errors.js'
import { classifyS3Error, S3ErrorKind } from './errors.js'

/** Timeout of each S3 request when none is given, in ms. */
export const DEFAULT_REQUEST_TIMEOUT_MS = 5_000

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
type Output<C> = C extends GetObjectCommand
  ? GetObjectCommandOutput
  : C extends HeadObjectCommand
    ? HeadObjectCommandOutput
    : PutObjectCommandOutput

/** An S3 answer that steers the protocol (the rest become `LockStoreError`). */
export type S3Call<C extends S3Command> =
  | { readonly kind: 'ok'; readonly output: Output<C>; readonly serverDate: number | undefined }
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

/** The slice of Smithy's middleware stack we use, typed here to avoid a dependency on @smithy/types. */
interface DeserializeStack {
  add(
    middleware: (
      next: (args: unknown) => Promise<{ response: unknown }>,
    ) => (args: unknown) => Promise<{ response: unknown }>,
    options: { step: 'deserialize'; priority: 'low'; name: string },
  ): void
}

/**
 * Sends one command with a timeout, and maps the answer: success, an answer the protocol acts
 * on (412, 409, 404, 403), or a `LockStoreError` (retryable for 5xx, throttling, timeouts and
 * dropped connections). The response's `Date` is captured even when S3 answers an error.
 */
export async function sendS3<C extends S3Command>(
  s3: S3Client,
  command: C,
  options: SendOptions,
): Promise<S3Call<C>> {
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
  const timeout = AbortSignal.timeout(options.timeoutMs)
  const abortSignal = options.signal ? AbortSignal.any([options.signal, timeout]) : timeout
  const operation = command.constructor.name.replace(/Command$/, '')
  try {
    const output = (await s3.send(command as PutObjectCommand, { abortSignal })) as Output<C>
    return { kind: 'ok', output, serverDate }
  } catch (error) {
    if (options.signal?.aborted) throw options.signal.reason
    const kind = timeout.aborted ? S3ErrorKind.Transient : classifyS3Error(error)
    if (kind === S3ErrorKind.Transient || kind === S3ErrorKind.Fatal) {
      throw new LockStoreError(
        `${options.caller ?? 'S3'} ${operation} on s3://${options.bucket}/${options.key} failed: ${describe(error, timeout)}`,
        { key: options.key, retryable: kind === S3ErrorKind.Transient, cause: error },
      )
    }
    const attempts = (error as { $metadata?: { attempts?: number } }).$metadata?.attempts ?? 1
    return { kind, error, retried: attempts > 1, serverDate }
  }
}

function dateOf(response: unknown): number | undefined {
  const headers = (response as { headers?: Record<string, string | undefined> } | undefined)?.headers
  const value = headers?.date ?? headers?.Date
  const time = value === undefined ? Number.NaN : Date.parse(value)
  return Number.isNaN(time) ? undefined : time
}

export function describe(error: unknown, timeout?: AbortSignal): string {
  if (timeout?.aborted) return 'request timed out'
  if (error instanceof Error) return `${error.name}: ${error.message}`
  return String(error)
}
