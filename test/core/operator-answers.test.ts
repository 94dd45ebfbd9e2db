import { describe, expect, it } from 'vitest'
import { parseRecord } from '../../lib/core/parse-record.js'
import type { LockRecord } from '../../lib/core/record.js'
import type { LockStore } from '../../lib/core/store.js'
import { type Lease, Lock, LockConflictError, LockLostError, LockStoreError } from '../../lib/index.js'
import { leaseOf } from '../support/lease-of.js'
import { operatorFor } from '../support/operator-for.js'
import { ScriptedStore } from '../support/scripted-store.js'
import { SimTime } from '../support/sim-clock.js'

const KEY = 'jobs/operated'

/**
 * An operator and runs on a store whose answers are scripted (409s, lost answers), with the
 * runs' writes landing between the operator's calls where a test says so.
 */
function setup() {
  const time = new SimTime()
  const store = new ScriptedStore({ clock: time.serverClock })
  const on = (target: LockStore, owner: string) =>
    new Lock({
      store: target,
      key: KEY,
      owner,
      ttlMs: 600_000,
      clockSkewMarginMs: 1_000,
      clock: time.localClock(),
      random: () => 0.5,
    })
  /** A lock of the operator's or a run's, through the scripted store. */
  const lock = (owner: string) => on(store, owner)
  /** A run elsewhere, whose calls go straight to the store and are not scripted. */
  const elsewhere = (owner: string) => on(store.memory, owner)
  const stored = (): LockRecord => JSON.parse(store.memory.peek(KEY) ?? 'null')
  return { time, store, lock, elsewhere, stored }
}

describe('an operator answered 409 (ConditionalRequestConflict)', () => {
  it('pauses: a plain pause answered 409 is read again and written, and the holder keeps its lease', async () => {
    const { store, lock, stored } = setup()
    const lease = await leaseOf(lock('job/1').tryAcquire())
    if (!lease) throw new Error('not acquired')
    store.script('replace', 'conflict')
    const result = await operatorFor(lock('ops')).pause({ note: 'n' })
    expect(result).toMatchObject({ wasHeld: true, endedLease: false })
    expect(stored()).toMatchObject({
      token: lease.record.token,
      owner: 'job/1',
      paused: { by: 'ops', note: 'n' },
    })
    await lease.renew()
    await lease.release()
    expect(lease.signal.aborted).toBe(false)
    expect(stored()).toMatchObject({ token: lease.record.token, expires_at: 0, paused: { by: 'ops' } })
  })

  it("pauses a held lock whose holder wrote in the 409's wake: the pause goes over the holder's new write, and the lease goes on", async () => {
    const { store, lock, stored } = setup()
    const lease = await leaseOf(lock('job/1').tryAcquire())
    if (!lease) throw new Error('not acquired')
    // The holder's checkpoint was the write in flight that the 409 was about.
    store.script('replace', async () => {
      await lease.saveCheckpoint({ at: 7 })
      return 'conflict' as const
    })
    await operatorFor(lock('ops')).pause()
    expect(stored()).toMatchObject({ token: lease.record.token, state: { at: 7 }, paused: { by: 'ops' } })
    await lease.release()
    expect(lease.signal.aborted).toBe(false)
  })

  it("carries a plain pause over a holder's write answered 409: the holder keeps its lease", async () => {
    const { store, lock, stored } = setup()
    const lease = await leaseOf(lock('job/1').tryAcquire())
    if (!lease) throw new Error('not acquired')
    // The pause landed; the holder's renewal, in flight beside it, is answered 409.
    await operatorFor(lock('ops')).pause({ note: 'n' })
    store.script('replace', 'conflict')
    await lease.renew()
    expect(lease.signal.aborted).toBe(false)
    expect(stored()).toMatchObject({
      token: lease.record.token,
      owner: 'job/1',
      paused: { by: 'ops', note: 'n' },
    })
    await lease.release()
    expect(stored()).toMatchObject({ expires_at: 0, paused: { note: 'n' } })
  })

  it('pauses now over the lease it judged once the 409 passes, and over no other', async () => {
    const { store, lock, elsewhere, stored } = setup()
    const lease = await leaseOf(lock('job/1').tryAcquire())
    if (!lease) throw new Error('not acquired')
    store.script('replace', 'conflict')
    const result = await operatorFor(lock('ops')).pause({ now: true })
    expect(result).toMatchObject({ wasHeld: true, endedLease: true })
    expect(stored().token).toBeGreaterThan(lease.record.token)
    await operatorFor(lock('ops')).resume()
    // Another lease took the lock in the 409's wake: a pause --now judged the record before it, so it refuses.
    const next = await leaseOf(lock('job/2').tryAcquire())
    await next?.release()
    store.script('replace', async () => {
      await leaseOf(elsewhere('job/3').tryAcquire())
      return 'conflict' as const
    })
    const error = await operatorFor(lock('ops'))
      .pause({ now: true })
      .catch((e: unknown) => e)
    expect(error).toBeInstanceOf(LockConflictError)
    expect(error).toMatchObject({ reason: 'changed' })
    expect(stored()).toMatchObject({ owner: 'job/3' })
    expect(stored().paused).toBeUndefined()
  })

  it("pauses (without --now) over another lease that took the lock in the 409's wake, ending none", async () => {
    const { store, lock, elsewhere, stored } = setup()
    const first = await leaseOf(lock('job/1').tryAcquire())
    await first?.release()
    store.script('replace', async () => {
      await leaseOf(elsewhere('job/2').tryAcquire())
      return 'conflict' as const
    })
    const result = await operatorFor(lock('ops')).pause({ note: 'n' })
    expect(result).toMatchObject({ wasHeld: true, endedLease: false })
    expect(stored()).toMatchObject({ owner: 'job/2', paused: { note: 'n' } })
  })

  it("pauses with an etag only over that version, though its lease renewed in the 409's wake", async () => {
    const { store, lock } = setup()
    const lease = await leaseOf(lock('job/1').tryAcquire())
    const info = await operatorFor(lock('ops')).inspect()
    store.script('replace', async () => {
      await lease?.renew()
      return 'conflict' as const
    })
    const error = await operatorFor(lock('ops'))
      .pause({ etag: info?.etag })
      .catch((e: unknown) => e)
    expect(error).toMatchObject({ name: 'LockConflictError', reason: 'changed' })
  })

  it("pauses now over the lease it judged though that lease renewed in the 409's wake", async () => {
    const { store, lock, stored } = setup()
    const lease = await leaseOf(lock('job/1').tryAcquire())
    store.script('replace', async () => {
      await lease?.renew()
      return 'conflict' as const
    })
    const result = await operatorFor(lock('ops')).pause({ now: true })
    expect(result).toMatchObject({ wasHeld: true, endedLease: true })
    expect(stored()).toMatchObject({
      ended_by: { token: lease?.record.token, owner: 'job/1', action: 'pause' },
    })
    await expect(lease?.renew()).rejects.toMatchObject({ reason: 'released-by-operator' })
  })
})

describe('an operator whose answer was lost', () => {
  it('force-release: says it released when its write landed and a run took the lock before the settle read, and that run keeps its lease', async () => {
    const { store, lock, elsewhere, stored } = setup()
    const stuck = await leaseOf(lock('stuck').tryAcquire())
    if (!stuck) throw new Error('not acquired')
    const runs: (Lease | null)[] = []
    store.script('replace', 'answer-lost')
    // The settle read comes after the next run's acquisition.
    store.script('read', 'ok', async () => {
      runs.push(await leaseOf(elsewhere('job/2').tryAcquire()))
      return undefined
    })
    const released = await operatorFor(lock('ops')).forceRelease()
    const [next] = runs
    expect(released).toMatchObject({ expires_at: 0, owner: 'force-released by ops' })
    expect(released?.token).toBeGreaterThan(stuck.record.token)
    expect(next).not.toBeNull()
    expect(stored()).toMatchObject({ token: next?.record.token, owner: 'job/2' })
    expect(next?.record.token).toBeGreaterThan(released?.token ?? Number.POSITIVE_INFINITY)
    // The stuck run learns an operator released it, not that someone else simply wrote.
    await expect(stuck.renew()).rejects.toMatchObject({
      name: 'LockLostError',
      reason: 'released-by-operator',
    })
  })

  it('pause now: says it paused when its write landed and a run wrote before the settle read', async () => {
    const { store, lock, elsewhere, stored } = setup()
    const held = await leaseOf(lock('job/1').tryAcquire())
    if (!held) throw new Error('not acquired')
    store.script('replace', 'answer-lost')
    store.script('read', 'ok', async () => {
      // A bare Lock, which does not skip paused jobs, takes the released record.
      await leaseOf(elsewhere('core-user').tryAcquire())
      return undefined
    })
    const result = await operatorFor(lock('ops')).pause({ now: true, note: 'incident' })
    expect(result).toMatchObject({ wasHeld: true, endedLease: true, record: { owner: 'paused by ops' } })
    expect(result?.after).toMatchObject({ owner: 'core-user' })
    expect(stored()).toMatchObject({ owner: 'core-user', paused: { by: 'ops', note: 'incident' } })
    await expect(held.renew()).rejects.toMatchObject({ reason: 'released-by-operator' })
  })

  it('pause: says it paused when its write landed and the holder wrote over it before the settle read', async () => {
    const { store, lock, stored } = setup()
    const lease = await leaseOf(lock('job/1').tryAcquire())
    if (!lease) throw new Error('not acquired')
    store.script('replace', 'answer-lost')
    store.script('read', 'ok', async () => {
      await lease.saveCheckpoint({ at: 1 })
      return undefined
    })
    const result = await operatorFor(lock('ops')).pause({ note: 'n' })
    expect(result).toMatchObject({ wasHeld: true, endedLease: false, after: { state: { at: 1 } } })
    expect(stored()).toMatchObject({ token: lease.record.token, state: { at: 1 }, paused: { note: 'n' } })
  })

  it('force-release: says it may have landed, not that nothing was written, when no read can settle it', async () => {
    const { store, lock } = setup()
    await leaseOf(lock('stuck').tryAcquire())
    store.script('replace', 'answer-lost', 'answer-lost', 'answer-lost', 'answer-lost')
    store.script('read', 'ok', 'transient', 'transient', 'transient', 'transient', 'transient')
    const error = await operatorFor(lock('ops'))
      .forceRelease()
      .catch((e: unknown) => e)
    expect(error).toBeInstanceOf(LockStoreError)
    expect((error as Error).message).toMatch(/may have been written/)
    expect((error as Error).message).not.toMatch(/nothing was written/)
  })
})

describe('an operator never ends a lease it did not judge', () => {
  it('force-release over the version judged refuses, writing nothing, once a newer run holds the lock', async () => {
    const { lock, stored } = setup()
    const stuck = await leaseOf(lock('stuck').tryAcquire())
    const judged = await operatorFor(lock('ops')).inspect()
    await operatorFor(lock('ops')).forceRelease()
    const next = await leaseOf(lock('job/2').tryAcquire())
    // A retry of the same command, on what the operator saw before.
    const error = await operatorFor(lock('ops'))
      .forceRelease({ etag: judged?.etag ?? '' })
      .catch((e: unknown) => e)
    expect(error).toBeInstanceOf(LockConflictError)
    expect(error).toMatchObject({ reason: 'changed' })
    expect((error as Error).message).toMatch(/nothing was written/)
    expect(stored()).toMatchObject({ token: next?.record.token, owner: 'job/2' })
    await next?.renew()
    expect(next?.signal.aborted).toBe(false)
    expect(stuck?.isHeld).toBe(true) // not told yet: it hears at its next write
    await expect(stuck?.renew()).rejects.toBeInstanceOf(LockLostError)
  })

  it('pause now over the version judged refuses once the record changed', async () => {
    const { lock, stored } = setup()
    const lease = await leaseOf(lock('job/1').tryAcquire())
    const judged = await operatorFor(lock('ops')).inspect()
    await lease?.renew()
    await expect(
      operatorFor(lock('ops')).pause({ now: true, etag: judged?.etag ?? '' }),
    ).rejects.toMatchObject({
      reason: 'changed',
    })
    expect(stored()).toMatchObject({ token: lease?.record.token, owner: 'job/1' })
    expect(stored().paused).toBeUndefined()
  })
})

describe('the record names the lease an operator ended', () => {
  it('force-release writes ended_by with the ended lease, the operator and when; the next acquisition keeps it', async () => {
    const { time, lock, stored } = setup()
    const stuck = await leaseOf(lock('stuck').tryAcquire())
    await operatorFor(lock('ops')).forceRelease()
    expect(stored().ended_by).toEqual({
      token: stuck?.record.token,
      owner: 'stuck',
      by: 'ops',
      action: 'force-release',
      at: expect.any(Number),
    })
    // Stamped from what one answer, dated to the second, told of the store's clock.
    expect(Math.abs((stored().ended_by?.at ?? Number.NaN) - time.now / 1000)).toBeLessThanOrEqual(0.501)
    const ended = stored().ended_by
    await leaseOf(lock('job/2').tryAcquire())
    expect(stored().ended_by).toEqual(ended)
  })

  it('a plain pause ends nothing and names nothing', async () => {
    const { lock, stored } = setup()
    await leaseOf(lock('job/1').tryAcquire())
    await operatorFor(lock('ops')).pause()
    expect(stored().ended_by).toBeUndefined()
  })

  it.each([
    ['not an object', 'ops'],
    ['without a token', { owner: 'a', by: 'b', action: 'pause', at: 1 }],
    ['with an owner that is not text', { token: 1, owner: 2, by: 'b', action: 'pause', at: 1 }],
    ['without who', { token: 1, owner: 'a', action: 'pause', at: 1 }],
    ['without an action', { token: 1, owner: 'a', by: 'b', at: 1 }],
    ['at a negative time', { token: 1, owner: 'a', by: 'b', action: 'pause', at: -1 }],
  ])('an ended_by %s is a corrupted record', (_, endedBy) => {
    const raw = JSON.stringify({ v: 1, token: 5, expires_at: 0, owner: 'x', ended_by: endedBy })
    expect(() => parseRecord(raw, KEY)).toThrow(/"ended_by" has a wrong type/)
  })
})
