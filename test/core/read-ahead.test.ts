import { describe, expect, it } from 'vitest'
import { Lock } from '../../lib/index.js'
import { MemoryLockStore } from '../../lib/memory/index.js'
import { leaseOf } from '../support/lease-of.js'
import { operatorFor } from '../support/operator-for.js'
import { SimTime } from '../support/sim-clock.js'

const KEY = 'jobs/nightly'

/**
 * A Lambda's INIT reads the lock ahead (`Lock.readAhead`), so that the first invocation writes at
 * once over a free record, as a warm one writes over its own last write. The write is conditional
 * on the version read: whatever was written since is read again, never overwritten.
 */
function world() {
  const time = new SimTime()
  const store = new MemoryLockStore({ clock: time.serverClock, clockResolutionMs: 1_000 })
  const lockFor = (owner: string) =>
    new Lock({ store, key: KEY, owner, ttlMs: 10_000, clockSkewMarginMs: 1_000, clock: time.localClock() })
  const since = () => {
    const before = { ...store.requests }
    return () => ({
      read: store.requests.read - before.read,
      replace: store.requests.replace - before.replace,
    })
  }
  return { time, store, lockFor, since }
}

describe('a lock read ahead of its first acquisition', () => {
  it('writes at once over a released record read ahead: the acquisition sends one write and no read', async () => {
    const { lockFor, since } = world()
    const earlier = await leaseOf(lockFor('earlier').tryAcquire())
    await earlier?.release()
    const cold = lockFor('cold')
    await cold.readAhead()
    const count = since()
    const lease = await leaseOf(cold.tryAcquire())
    expect(lease?.record.token).toBeGreaterThan(earlier?.record.token ?? Number.POSITIVE_INFINITY)
    expect(count()).toEqual({ read: 0, replace: 1 })
  })

  it('takes the read ahead once: the next acquisition starts from its own last write', async () => {
    const { lockFor, since } = world()
    await (await leaseOf(lockFor('earlier').tryAcquire()))?.release()
    const cold = lockFor('cold')
    await cold.readAhead()
    await (await leaseOf(cold.tryAcquire()))?.release()
    const count = since()
    expect(await leaseOf(cold.tryAcquire())).toBeDefined()
    expect(count()).toEqual({ read: 0, replace: 1 })
  })

  it('waits for a read ahead still under way rather than reading twice', async () => {
    const { lockFor, since } = world()
    await (await leaseOf(lockFor('earlier').tryAcquire()))?.release()
    const cold = lockFor('cold')
    const count = since()
    const ahead = cold.readAhead()
    const lease = await leaseOf(cold.tryAcquire())
    await ahead
    expect(lease).toBeDefined()
    expect(count()).toEqual({ read: 1, replace: 1 })
  })

  it('reads again a record that was held when read ahead, and finds it held', async () => {
    const { lockFor, since } = world()
    const holder = await leaseOf(lockFor('holder').tryAcquire())
    const cold = lockFor('cold')
    await cold.readAhead()
    const count = since()
    const attempt = await cold.tryAcquire()
    expect(attempt).toMatchObject({
      status: 'held',
      holder: { owner: 'holder', token: holder?.record.token },
    })
    expect(count()).toEqual({ read: 1, replace: 0 })
  })

  it('never overwrites a run that took and released the lock after the read ahead: its write is refused, the record read again', async () => {
    const { lockFor } = world()
    await (await leaseOf(lockFor('first').tryAcquire()))?.release()
    const cold = lockFor('cold')
    await cold.readAhead()
    const between = await leaseOf(lockFor('between').tryAcquire())
    await between?.saveCheckpoint({ done: 'page 7' })
    await between?.release()
    const lease = await leaseOf(cold.tryAcquire())
    // Above the token of the run in between, which the read ahead never saw, and with its checkpoint.
    expect(lease?.record.token).toBeGreaterThan(between?.record.token ?? Number.POSITIVE_INFINITY)
    expect(lease?.record.state).toEqual({ done: 'page 7' })
  })

  it('skips a job paused after the read ahead: the pause is read, not written over', async () => {
    const { lockFor } = world()
    await (await leaseOf(lockFor('first').tryAcquire()))?.release()
    const cold = lockFor('cold')
    await cold.readAhead()
    await operatorFor(lockFor('operator')).pause({ note: 'maintenance' })
    const attempt = await cold.tryAcquire({ skipIf: (record) => record.paused !== undefined })
    expect(attempt).toMatchObject({ status: 'skipped', record: { paused: { note: 'maintenance' } } })
  })

  it('reads again a pause it read ahead, before skipping on it: it may have been resumed since', async () => {
    const { lockFor } = world()
    await (await leaseOf(lockFor('first').tryAcquire()))?.release()
    const operator = operatorFor(lockFor('operator'))
    await operator.pause()
    const cold = lockFor('cold')
    await cold.readAhead()
    await operator.resume()
    const attempt = await cold.tryAcquire({ skipIf: (record) => record.paused !== undefined })
    expect(attempt.status).toBe('acquired')
  })

  it('does not fail on a record it cannot parse: the acquisition reads it again and says so, writing nothing', async () => {
    const { lockFor, store, since } = world()
    store.putRaw(KEY, '{"not":"a lock record"}')
    const cold = lockFor('cold')
    await expect(cold.readAhead()).resolves.toBeUndefined()
    const count = since()
    await expect(cold.tryAcquire()).rejects.toMatchObject({ name: 'LockCorruptedError' })
    expect(count()).toEqual({ read: 1, replace: 0 })
    expect(store.peek(KEY)).toBe('{"not":"a lock record"}')
  })
})
