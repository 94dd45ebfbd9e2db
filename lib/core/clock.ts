/** Local time and waiting, injectable so protocol tests can run on a simulated clock. */
export interface Clock {
  /** Milliseconds since the epoch. */
  now(): number
  /** Resolves after `ms`, or rejects with `signal.reason` when aborted. */
  sleep(ms: number, signal?: AbortSignal): Promise<void>
  /**
   * Calls `callback` after `ms` unless the returned function is called first. Such a timer
   * must not keep the process alive: a lease's watchdog or heartbeat is no reason to stay up.
   */
  schedule(ms: number, callback: () => void): () => void
}

/**
 * Epoch milliseconds that never step backwards: the wall clock as of process start, advanced
 * by the monotonic clock. A local clock stepped back by NTP must not stretch a holder's lease.
 */
export const systemClock: Clock = {
  now: () => performance.timeOrigin + performance.now(),
  sleep: (ms, signal) =>
    new Promise((resolve, reject) => {
      if (signal?.aborted) return reject(signal.reason)
      const onAbort = (): void => {
        clearTimeout(timer)
        // Stryker disable next-line OptionalChaining: this listener is only ever added to a signal
        reject(signal?.reason)
      }
      const timer = setTimeout(() => {
        signal?.removeEventListener('abort', onAbort)
        resolve()
      }, ms)
      signal?.addEventListener('abort', onAbort, { once: true })
    }),
  schedule: (ms, callback) => {
    const timer = setTimeout(callback, Math.max(0, ms))
    timer.unref()
    return () => clearTimeout(timer)
  },
}

/**
 * What we know of the store's clock. Each response's `Date` bounds the offset between the
 * store's clock and ours; expiry is judged on the store's clock so that contenders with
 * drifting local clocks still agree.
 *
 * We keep both bounds of the latest sample: the upper one to stamp our own `expires_at`
 * (never earlier than the truth, so our lease is never shorter than we believe), the lower
 * one to judge others' (never later than the truth, so we never take a lease too early).
 */
/** Round trips longer than this say little about the store's clock. */
const MAX_SAMPLE_ROUND_TRIP_MS = 5_000

export class ServerClock {
  #upperOffset: number | undefined
  #lowerOffset: number | undefined

  constructor(
    private readonly clock: Clock,
    private readonly resolutionMs: number,
  ) {}

  /** Records a response's server date, seen on a call sent at `sentAt` and answered at `receivedAt`. */
  observe(serverDate: number | undefined, sentAt: number, receivedAt: number): void {
    if (serverDate === undefined) return
    // A call that spanned a long pause (a frozen Lambda) bounds the offset too loosely to use.
    if (receivedAt - sentAt > MAX_SAMPLE_ROUND_TRIP_MS && this.#upperOffset !== undefined) return
    this.#upperOffset = serverDate + this.resolutionMs - sentAt
    this.#lowerOffset = serverDate - receivedAt
  }

  /** The latest the store's clock can read now. Falls back to the local clock before any sample. */
  upperNow(): number {
    return this.clock.now() + (this.#upperOffset ?? 0)
  }

  /** The earliest the store's clock can read now. */
  lowerNow(): number {
    return this.clock.now() + (this.#lowerOffset ?? 0)
  }
}
