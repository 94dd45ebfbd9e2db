import type { Acquisition, Lease } from '../../lib/index.js'

/**
 * The lease of an acquisition, or `null` when the lock was held or skipped: for tests and
 * benchmarks that only care whether they got the lock.
 */
export async function leaseOf(acquisition: Promise<Acquisition> | undefined): Promise<Lease | null> {
  const result = await acquisition
  return result?.status === 'acquired' ? result.lease : null
}
