import type { Lock } from '../../lib/core/lock.js'
import { LockOperator } from '../../lib/operator/lock-operator.js'

/**
 * The operator's side of `lock`'s job: its store and key, its clock and lease settings, acting
 * as the lock's owner (who a pause or a force-release names).
 */
export function operatorFor(lock: Lock): LockOperator {
  return new LockOperator({
    store: lock.store,
    key: lock.key,
    operator: lock.owner,
    ttlMs: lock.ttlMs,
    clockSkewMarginMs: lock.clockSkewMarginMs,
    clock: lock.clock,
  })
}
