import { LockLostError, LostReason } from '../core/errors.js'
import type { Lease } from '../core/lease.js'

export interface HeartbeatOptions {
  readonly everyMs: number
  readonly ttlMs: number
  /** Epoch ms after which no beat is sent any more: the end of the invocation, when known. */
  readonly stopAt: number | undefined
  readonly onLost: (error: LockLostError) => void
  readonly onError: (error: unknown) => void
}

/** Never beat more often than this, however little time the lease has left. */
const MIN_BEAT_MS = 50

/**
 * Renews `lease` until stopped, lost or past `stopAt`, and calls `onLost` the moment the lease
 * runs out unrenewed (a watchdog), not only when a renew is refused. Returns `stop`, which must
 * be called before the handler returns: Lambda freezes the process, and a timer that fires after
 * the thaw would renew a lease from a run that is long over. `stopAt` is the backstop for when
 * the middleware's `after` and `onError` were skipped (another middleware ended the request).
 */
export function startHeartbeat(lease: Lease, options: HeartbeatOptions): () => void {
  let beatTimer: NodeJS.Timeout | undefined
  let watchdog: NodeJS.Timeout | undefined
  let stopped = false

  const stop = (): void => {
    stopped = true
    clearTimeout(beatTimer)
    clearTimeout(watchdog)
  }
  const armWatchdog = (): void => {
    clearTimeout(watchdog)
    watchdog = setTimeout(
      () => {
        if (stopped || lease.isReleased) return
        stop()
        options.onLost(
          new LockLostError(
            `Lease on "${lease.key}" with token ${lease.token} expired before it could be renewed`,
            {
              key: lease.key,
              reason: LostReason.Expired,
              token: lease.token,
            },
          ),
        )
      },
      Math.max(0, lease.remainingMs),
    )
    watchdog.unref()
  }
  const schedule = (everyMs: number): void => {
    if (stopped) return
    // Beat before half the remaining time is gone, so a slow acquisition or renew still leaves room.
    const delay = Math.max(MIN_BEAT_MS, Math.min(everyMs, lease.remainingMs / 2))
    beatTimer = setTimeout(() => void beat(), delay)
    beatTimer.unref()
  }
  const beat = async (): Promise<void> => {
    if (stopped) return
    if (options.stopAt !== undefined && Date.now() >= options.stopAt) return stop()
    try {
      await lease.renew(options.ttlMs)
      if (stopped) return
      armWatchdog()
      schedule(options.everyMs)
    } catch (error) {
      if (stopped) return
      if (error instanceof LockLostError) {
        stop()
        return options.onLost(error)
      }
      // Transient trouble that outlasted the store retries: the lease may still have time.
      options.onError(error)
      schedule(Math.floor(options.everyMs / 2))
    }
  }

  armWatchdog()
  schedule(options.everyMs)
  return stop
}
