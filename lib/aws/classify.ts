import { type LockConfigurationError, LockStoreError } from '../core/errors.js'
import { configurationError, configurationReason } from './configuration.js'
import { errorFields, NETWORK_ERROR_CODES } from './errors.js'
import { describe, type SdkClient, type SdkCommand, type SendTimedOptions, sendTimed } from './send.js'

/**
 * Send and classify, for every store on an AWS service: what a failed request means is read from
 * a table of the service's error codes, so that each store keeps only its table and what the
 * answers it acts on mean to the protocol.
 */

/** The failures no store acts on: both become a `LockStoreError` (`retryable` for `Transient`). */
export const Failure = {
  /** Worth another try: throttling, 5xx, timeouts, dropped connections. */
  Transient: 'transient',
  /** Retrying will not help: a missing bucket or table, a request refused, a client configured wrong. */
  Fatal: 'fatal',
} as const
export type Failure = (typeof Failure)[keyof typeof Failure]

/** A service's error codes, by what they mean; `A` names the answers its store acts on. */
export interface ServiceErrors<A extends string> {
  /** Codes (the error's `Code`, else its `name`) of answers the store acts on. */
  readonly answers: Readonly<Record<string, A>>
  /** Statuses of those answers, for errors whose code says nothing the table knows. */
  readonly answerStatuses?: Readonly<Record<number, A>>
  /** Codes of the service worth another try; those of an unanswered request are always added. */
  readonly transient: ReadonlySet<string>
  /** Codes and statuses no retry fixes, even under a status or flag that says otherwise. */
  readonly fatal: ReadonlySet<string>
  readonly fatalStatuses?: ReadonlySet<number>
}

interface ErrorShape {
  name?: string
  code?: string
  Code?: string
  $metadata?: { httpStatusCode?: number }
  $retryable?: unknown
}

/**
 * What `error` means by `table`. A client configured wrong comes first: its errors look like a
 * dropped connection (no status) or, on S3, like a key hidden behind 403. Then codes before
 * statuses: a status says little (DynamoDB answers nearly everything with 400, throttling
 * included; S3's 404 covers a missing key and a missing bucket; some proxies and S3-compatible
 * engines send `PreconditionFailed` with another status).
 */
export function classifyError<A extends string>(table: ServiceErrors<A>, error: unknown): A | Failure {
  if (configurationReason(error) !== undefined) return Failure.Fatal
  const shape = errorFields<ErrorShape>(error)
  const code = shape.Code ?? shape.name ?? ''
  const status = shape.$metadata?.httpStatusCode
  if (table.fatal.has(code)) return Failure.Fatal
  const answer = Object.hasOwn(table.answers, code) ? table.answers[code] : undefined
  if (answer !== undefined) return answer
  if (isTransientCode(table, code) || (shape.code !== undefined && isTransientCode(table, shape.code))) {
    return Failure.Transient
  }
  if (status !== undefined) {
    const byStatus = table.answerStatuses?.[status]
    if (byStatus !== undefined) return byStatus
    if (table.fatalStatuses?.has(status)) return Failure.Fatal
    if (status >= 500 || status === 429) return Failure.Transient
  }
  if (shape.$retryable) return Failure.Transient
  // No HTTP answer at all (socket errors surface without a status): treat as network.
  if (status === undefined && error instanceof Error && !(error instanceof TypeError))
    return Failure.Transient
  return Failure.Fatal
}

function isTransientCode(table: ServiceErrors<string>, code: string): boolean {
  return table.transient.has(code) || NETWORK_ERROR_CODES.has(code)
}

/** A request's answer that the store acts on: success, or an error its table names. */
export type Classified<O, A extends string> =
  | { readonly kind: 'ok'; readonly output: O; readonly serverDate: number | undefined }
  | {
      readonly kind: A
      readonly error: unknown
      /** The SDK sent it more than once: a failed condition may be our own first try's doing. */
      readonly retried: boolean
      readonly serverDate: number | undefined
    }

export interface ClassifiedSendOptions<O, A extends string> extends SendTimedOptions<O> {
  readonly errors: ServiceErrors<A>
  /** The request, for messages: `S3 GetObject on s3://b/k`. */
  readonly what: string
  readonly key: string
  /** The service's own signs of a client configured wrong (a bucket host, a table's key). */
  readonly misconfigured?: ((error: unknown) => LockConfigurationError | undefined) | undefined
}

/**
 * Sends `command` within the timeout, and classifies a failure by the service's table: an answer
 * the store acts on comes back; anything else is thrown as a `LockConfigurationError` when it
 * says the client cannot work as configured, else as a `LockStoreError`.
 */
export async function sendClassified<C extends SdkCommand, O, A extends string>(
  client: SdkClient<C, O>,
  command: C,
  options: ClassifiedSendOptions<O, A>,
): Promise<Classified<O, A>> {
  const sent = await sendTimed(client, command, options)
  if (sent.ok) return { kind: 'ok', output: sent.output, serverDate: sent.serverDate }
  const { error, timedOut, retried, serverDate } = sent
  // Our timer, not what the abort surfaced as (a body stream cut off throws a TypeError that would
  // read as fatal), says that this request is worth another try.
  const kind = timedOut ? Failure.Transient : classifyError(options.errors, error)
  if (kind !== Failure.Transient && kind !== Failure.Fatal) return { kind, error, retried, serverDate }
  const { what, key } = options
  // Even when our timeout fired: the SDK resolves region and credentials outside the abort signal,
  // so a configuration error is never our timeout's doing, and no retry would fix it.
  throw (
    configurationError(error, what, key) ??
    options.misconfigured?.(error) ??
    new LockStoreError(`${what} failed: ${describe(error, timedOut)}`, {
      key,
      retryable: kind === Failure.Transient,
      cause: error,
    })
  )
}

/** An answer the store did not expect of `what`, such as a success without an etag: not retryable. */
export function unexpectedAnswer(what: string, key: string, error: unknown): LockStoreError {
  return new LockStoreError(`${what}: unexpected answer: ${describe(error)}`, {
    key,
    retryable: false,
    cause: error,
  })
}

/** The slice of an SDK client's middleware stack `withoutSdkLogger` uses. */
interface RemovableStack {
  readonly middlewareStack: { remove(name: string): boolean }
}

/**
 * `client` without the SDK's logger middleware, which filters each call's whole input and output
 * for the client's logger even when that is its default no-op one: for a PutItem of a record with
 * its history, most of the time between the answer and the call's return. Only for a client the
 * library makes: a client given to a store keeps its own stack (its logger is its owner's).
 */
export function withoutSdkLogger<T extends RemovableStack>(client: T): T {
  client.middlewareStack.remove('loggerMiddleware')
  return client
}

/**
 * The client a store makes when it is given none: one per service, shared by every store (one
 * connection pool, one credential cache), made on first use. It sends each request once: the
 * lock retries by itself, and knows that a retried conditional write may have landed the first
 * time. It logs nothing through the SDK (`withoutSdkLogger`).
 */
export function sharedClient<T extends RemovableStack>(make: (config: { maxAttempts: 1 }) => T): () => T {
  let client: T | undefined
  return () => {
    client ??= withoutSdkLogger(make({ maxAttempts: 1 }))
    return client
  }
}
