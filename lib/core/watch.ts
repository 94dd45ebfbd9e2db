import type { Clock } from './clock.js'
import { LockLostError } from './errors.js'
import type { Lease } from './lease.js'

export interface WatchOptions {
  /** How often to read the record, in ms. */
  readonly everyMs: number
  /** The clock the lease was taken with. */
  readonly clock: Clock
  /** A read failed on a transient error; watching goes on. */
  readonly onError?: (error: unknown) => void
}

/**
 * Reads `lease`'s record every `everyMs` until the returned `stop` is called or the lease is
 * over, so that a run replaced by a newer tick's run (or ended by an operator) hears of it within
 * one period: the lease aborts its signal with the `LockLostError`. A renewal would tell too, but
 * renewals are spaced by the ttl; a read costs a tenth of a write and nothing of the lease.
 */
export function watchLease(lease: Lease, options: WatchOptions): () => void {
  const { clock, everyMs } = options
  let stopped = false
  let cancel: () => void = () => {}
  const schedule = (): void => {
    if (stopped || !lease.isHeld) return
    cancel = clock.schedule(everyMs, () => void look())
  }
  const look = async (): Promise<void> => {
    if (stopped || !lease.isHeld) return
    try {
      await lease.checkCurrent()
    } catch (error) {
      if (error instanceof LockLostError) return
      if (!stopped) options.onError?.(error)
    }
    schedule()
  }
  schedule()
  return () => {
    stopped = true
    cancel()
  }
}
