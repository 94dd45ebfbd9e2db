import type { Clock } from './clock.js'
import { LockLostError } from './errors.js'
import type { Lease } from './lease.js'

export interface KeepAliveOptions {
  /** Renewal period, in ms. */
  readonly everyMs: number
  /** Lease length each renewal asks for. @default the lease's current ttl */
  readonly ttlMs?: number
  /** The clock the lease was taken with. */
  readonly clock: Clock
  /**
   * Local epoch ms after which no renewal is sent: the end of a Lambda invocation. Past it the
   * lease is left to run out, because a process that Lambda froze must not renew on its thaw.
   */
  readonly until?: number
  /** A renewal failed on a transient error that outlasted the store retries; beating goes on. */
  readonly onError?: (error: unknown) => void
}

/** Never beat more often than this, however little time the lease has left. */
export const MIN_BEAT_MS = 50

/**
 * Renews `lease` every `everyMs` until the returned `stop` is called, the lease is lost or
 * released, or `until` passes. It never declares the lease lost itself: the lease does that
 * (a refused renewal, or its own watchdog when no renewal got through in time) and aborts its
 * signal. A failed renewal is retried sooner, while the lease still has time.
 */
export function keepAlive(lease: Lease, options: KeepAliveOptions): () => void {
  const { clock, everyMs } = options
  let stopped = false
  let cancel: () => void = () => {}

  const over = (): boolean =>
    stopped || !lease.isHeld || clock.now() >= (options.until ?? Number.POSITIVE_INFINITY)
  const schedule = (periodMs: number): void => {
    if (over()) return
    // Beat before half the remaining time is gone, so one slow renewal still leaves room.
    cancel = clock.schedule(Math.max(MIN_BEAT_MS, Math.min(periodMs, lease.remainingMs / 2)), () => {
      void beat()
    })
  }
  const beat = async (): Promise<void> => {
    if (over()) return
    try {
      await lease.renew(options.ttlMs)
      schedule(everyMs)
    } catch (error) {
      if (error instanceof LockLostError || stopped) return
      options.onError?.(error)
      schedule(Math.floor(everyMs / 2))
    }
  }

  schedule(everyMs)
  return () => {
    stopped = true
    cancel()
  }
}
