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
