import { describe, expect, it } from 'vitest'
import { Lock } from '../../lib/index.js'
import { leaseOf } from '../support/lease-of.js'
import { ScriptedStore } from '../support/scripted-store.js'
import { SimTime } from '../support/sim-clock.js'

/**
 * Releasing a lease that ran out unrenewed: the lease is lost whatever happens, and the release
 * only tries to free the record if it is still ours. Whether that write lands must not change
 * what the lease reports, nor what its lock believes about the object afterwards.
 */
const KEY = 'jobs/ran-out'

function setup() {
  const time = new SimTime()
  const store = new ScriptedStore({ clock: time.serverClock })
  const lock = (owner: string) =>
    new Lock({ store, key: KEY, owner, ttlMs: 10_000, clockSkewMarginMs: 1_000, clock: time.localClock() })
  return { time, store, lock }
}

describe('the release of a lease that ran out', () => {
  it.each([
    ['fails', 'fatal'],
    ['keeps failing', 'transient'],
  ] as const)('rejects with the expiry when the store %s on the freeing write', async (_, fault) => {
    const { time, store, lock } = setup()
    const lease = await leaseOf(lock('a').tryAcquire())
    time.advance(9_500) // past its own end, before anyone could take over
    store.script('replace', ...Array.from({ length: 10 }, () => fault))
    await expect(lease?.release()).rejects.toMatchObject({ name: 'LockLostError', reason: 'expired' })
  })

  it('leaves its lock believing nothing of the write that did not land: its next attempt reads, and writes nothing', async () => {
    const { time, store, lock } = setup()
    const a = lock('a')
    const lease = await leaseOf(a.tryAcquire())
    time.advance(20_000)
    await leaseOf(lock('b').tryAcquire())
    await expect(lease?.release()).rejects.toMatchObject({ reason: 'expired' })
    const before = store.calls.length
    // A blind write from a cache with no etag would be unconditional on S3 (no If-Match sent).
    expect(await a.tryAcquire()).toMatchObject({ status: 'held', holder: { owner: 'b' } })
    expect(store.calls.slice(before)).toEqual(['read'])
  })
})
