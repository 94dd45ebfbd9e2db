import { LockLostError } from '../core/errors.js'
import type { Lease } from '../core/lease.js'

export interface HeartbeatOptions {
  readonly everyMs: number
  readonly ttlMs: number
  readonly onLost: (error: LockLostError) => void
  readonly onError: (error: unknown) => void
}

/**
 * Renews `lease` every `everyMs` until stopped or lost. Returns `stop`, which must be called
 * before the handler returns: Lambda freezes the process, and a timer that fires after the thaw
 * would renew a lease from a run that is long over.
 */
export function startHeartbeat(lease: Lease, options: HeartbeatOptions): () => void {
  let timer: NodeJS.Timeout | undefined
  let stopped = false
  const beat = async (): Promise<void> => {
    try {
      await lease.renew(options.ttlMs)
      schedule(options.everyMs)
    } catch (error) {
      if (stopped) return
      if (error instanceof LockLostError) return options.onLost(error)
      // Transient trouble that outlasted the store retries: the lease still has time, so try sooner.
      options.onError(error)
      schedule(Math.max(100, Math.floor(options.everyMs / 2)))
    }
  }
  const schedule = (ms: number): void => {
    if (stopped) return
    timer = setTimeout(() => void beat(), ms)
    timer.unref()
  }
  schedule(options.everyMs)
  return () => {
    stopped = true
    clearTimeout(timer)
  }
}
