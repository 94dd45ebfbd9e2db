import { type Clock, systemClock } from '../core/clock.js'
import { LockOptionsError } from '../core/errors.js'

/**
 * The AWS SDK plumbing every store on an AWS service shares: one request bounded by a timeout and
 * the caller's signal, with the server's clock read from the response's `Date` header even when
 * the service answers an error. Typed structurally, so it loads no SDK package of its own.
 */

/** Timeout of each request when none is given, in ms. */
export const DEFAULT_REQUEST_TIMEOUT_MS = 5_000

/** A store's `requestTimeoutMs` option, defaulted and checked (`LockOptionsError`). */
export function requestTimeoutMs(given: number | undefined): number {
  const timeout = given ?? DEFAULT_REQUEST_TIMEOUT_MS
  if (!Number.isFinite(timeout) || timeout <= 0) {
    throw new LockOptionsError(`requestTimeoutMs must be a positive number, got ${timeout}`)
  }
  return timeout
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

/** A command as any SDK v3 client sends it. */
export interface SdkCommand {
  readonly middlewareStack: unknown
}

export interface SdkClient<C extends SdkCommand, O> {
  send(command: C, options: { abortSignal: AbortSignal }): Promise<O>
}

export type Sent<O> =
  | { readonly ok: true; readonly output: O; readonly serverDate: number | undefined }
  | {
      readonly ok: false
      readonly error: unknown
      /** Our own request timeout fired (not the caller's signal). */
      readonly timedOut: boolean
      /** The SDK sent it more than once: a failed condition may be our own first try's doing. */
      readonly retried: boolean
      readonly serverDate: number | undefined
    }

export interface SendTimedOptions<O> {
  readonly timeoutMs: number
  readonly signal?: AbortSignal | undefined
  /**
   * Reads what the answer still streams after its headers (an S3 object's body), under the same
   * timeout and signal: a body cut off or stalled fails the request like a dropped connection.
   */
  readonly consume?: ((output: O, signal: AbortSignal) => Promise<void>) | undefined
  /** Times the request out: the system clock, or a simulated one. @default systemClock */
  readonly clock?: Clock | undefined
}

/**
 * Sends `command`; a failure comes back as a value for the store to classify. When the caller's
 * own signal aborted, rejects with its reason: the caller gave up, the store did not fail.
 */
export async function sendTimed<C extends SdkCommand, O>(
  client: SdkClient<C, O>,
  command: C,
  options: SendTimedOptions<O>,
): Promise<Sent<O>> {
  let serverDate: number | undefined
  ;(command.middlewareStack as DeserializeStack).add(
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
  const timeout = timeoutSignal(options.clock ?? systemClock, options.timeoutMs)
  const abortSignal = options.signal ? AbortSignal.any([options.signal, timeout.signal]) : timeout.signal
  try {
    const output = await client.send(command, { abortSignal })
    await options.consume?.(output, abortSignal)
    return { ok: true, output, serverDate }
  } catch (error) {
    if (options.signal?.aborted) throw options.signal.reason
    const attempts = (error as { $metadata?: { attempts?: number } }).$metadata?.attempts ?? 1
    return { ok: false, error, timedOut: timeout.signal.aborted, retried: attempts > 1, serverDate }
  } finally {
    timeout.cancel()
  }
}

/** `AbortSignal.timeout` on `clock`: aborts with a `TimeoutError` after `ms`. */
function timeoutSignal(clock: Clock, ms: number): { signal: AbortSignal; cancel: () => void } {
  const controller = new AbortController()
  const cancel = clock.schedule(ms, () =>
    controller.abort(new DOMException(`The request timed out after ${ms} ms`, 'TimeoutError')),
  )
  return { signal: controller.signal, cancel }
}

/**
 * What a code means, for an answer without a body to say it (a HEAD's, or an engine's): the SDK
 * then gives the message `UnknownError`, which tells a reader nothing.
 */
const MEANINGS: Readonly<Record<string, string>> = {
  NoSuchBucket: 'the bucket does not exist (check its name, its region, and the endpoint)',
  NotFound: 'no such object or bucket',
  AccessDenied: 'access denied by the bucket or the caller’s policy',
  Forbidden: 'access denied by the bucket or the caller’s policy',
  ResourceNotFoundException: 'the table does not exist (check its name, its region, and the endpoint)',
}

/** An error for a message: its name and message, or that the request timed out. */
export function describe(error: unknown, timedOut = false): string {
  if (timedOut) return 'request timed out'
  if (!(error instanceof Error)) return String(error)
  if (error.message && error.message !== 'UnknownError') return `${error.name}: ${error.message}`
  const status = (error as { $metadata?: { httpStatusCode?: unknown } }).$metadata?.httpStatusCode
  const meaning = MEANINGS[error.name] ?? 'the service gave no message'
  return `${error.name}: ${meaning}${typeof status === 'number' ? ` (HTTP ${status})` : ''}`
}

/** `{ serverDate }` when known, to spread into a store's result. */
export function dated(serverDate: number | undefined): { serverDate?: number } {
  return serverDate === undefined ? {} : { serverDate }
}

function dateOf(response: unknown): number | undefined {
  const headers = (response as { headers?: Record<string, string | undefined> } | undefined)?.headers
  const value = headers?.date ?? headers?.Date
  const time = value === undefined ? Number.NaN : Date.parse(value)
  return Number.isNaN(time) ? undefined : time
}
