import { keepAlive } from './heartbeat.js'
import type { Lease } from './lease.js'
import type { Lock } from './lock.js'
import { AcquireStatus, type Acquisition, type TryAcquireOptions } from './lock-options.js'
import { RunOutcome } from './record.js'
import { defaultHeartbeatMs, validateTiming } from './timing.js'

/** The work done under the lock: `await lease.fencingToken()` for fenced writes, `lease.signal` to stop in time. */
export type ExclusiveRoutine<T> = (lease: Lease) => Promise<T>

export interface RunExclusiveOptions extends TryAcquireOptions {
  /** Renewal period while the routine runs. @default a third of the lease's ttl */
  readonly heartbeatMs?: number
  /** A renewal failed on a transient error (the lease may still have time). @default ignore */
  readonly onHeartbeatError?: (error: unknown) => void
}

/** What `lock.runExclusive` came to: the routine's value, or why it did not run. */
export type RunResult<T> =
  | { readonly status: 'ran'; readonly value: T }
  | Exclude<Acquisition, { readonly status: typeof AcquireStatus.Acquired }>

/**
 * Runs `routine` under a lease of `lock`, renewed every `heartbeatMs`. When the lease is lost
 * (taken over, deleted, or not renewed in time) the routine's `lease.signal` aborts at once;
 * the run then rejects with that `LockLostError` even if the routine finished, because its work
 * may have overlapped a newer holder's. The lease is released however the routine ends; when
 * the routine resolves, its checkpoint (`lease.saveCheckpoint`) is cleared with it, while a cursor
 * (`lease.saveCursor`) stays for the next run.
 */
export async function runExclusive<T>(
  lock: Lock,
  routine: ExclusiveRoutine<T>,
  options: RunExclusiveOptions = {},
): Promise<RunResult<T>> {
  const ttlMs = options.ttlMs ?? lock.ttlMs
  const heartbeatMs = options.heartbeatMs ?? defaultHeartbeatMs(ttlMs)
  validateTiming(
    {
      ttlMs,
      heartbeatMs,
      heartbeatIsDefault: options.heartbeatMs === undefined,
      clockSkewMarginMs: lock.clockSkewMarginMs,
    },
    'runExclusive',
    lock.key,
  )
  const acquisition = await lock.tryAcquire(options)
  if (acquisition.status !== AcquireStatus.Acquired) return acquisition
  const { lease } = acquisition
  const stop = keepAlive(lease, {
    everyMs: heartbeatMs,
    ttlMs,
    clock: lock.clock,
    ...(options.onHeartbeatError && { onError: options.onHeartbeatError }),
  })
  let value: T
  try {
    value = await routine(lease)
  } catch (error) {
    stop()
    await lease.release({ outcome: RunOutcome.Failed }).catch(() => undefined) // the routine's failure is the news
    throw error
  }
  stop()
  // Rejects LockLostError when the lease was lost meanwhile; a lease that ran out unrenewed
  // still frees the record first if nobody wrote since, so the next run need not wait for it.
  // The routine completed: its checkpoint is spent, and the next run starts afresh.
  await lease.release({ clearState: true, outcome: RunOutcome.Completed })
  return { status: 'ran', value }
}
