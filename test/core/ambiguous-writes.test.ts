import { describe, expect, it } from 'vitest'
import { serverClockOf } from '../../lib/core/server-clock.js'
import { Lock, LockLostError } from '../../lib/index.js'
import { leaseOf } from '../support/lease-of.js'
import { ScriptedStore } from '../support/scripted-store.js'
import { SimTime } from '../support/sim-clock.js'

/**
 * A write that fails may have landed before its answer was lost, and a store that retried a
 * write itself may report our own first try as a lost race. Before writing again the lock reads
 * the object back: our own body means ours landed; another's means we lost; no change means
 * another try is both safe and needed.
 */
const KEY = 'jobs/ambiguous'

function setup() {
  const time = new SimTime()
  const store = new ScriptedStore({ clock: time.serverClock })
  const lock = (owner = 'me') =>
    new Lock({
      store,
      key: KEY,
      owner,
      ttlMs: 10_000,
      clockSkewMarginMs: 1_000,
      clock: time.localClock(),
      retry: { attempts: 4, baseMs: 100, capMs: 100 },
      random: () => 0.5,
    })
  const record = () => JSON.parse(store.memory.peek(KEY) ?? 'null')
  const other = JSON.stringify({ v: 1, token: 1, expires_at: 4_000_000_000, owner: 'other' })
  /** A lease taken a second ago (so a renewal writes a new body), with the calls it cost forgotten. */
  let holder: Lock | undefined
  const held = async () => {
    holder = lock()
    const lease = await leaseOf(holder.tryAcquire())
    if (!lease) throw new Error('expected the lock to be free')
    time.advance(1_000)
    store.calls.length = 0
    return lease
  }
  /** The store's time before any acquisition: a first token is at or above it. */
  const start = time.now
  /** How far the holder's guess of the store's clock may be off now. */
  const halfWidth = () => (holder && serverClockOf(store, holder.clock).at()?.halfWidth) ?? Number.NaN
  return { time, store, lock, record, other, held, start, halfWidth }
}

describe('a create whose outcome is unknown', () => {
  it('is recognised as ours when it landed though its answer was lost, and is not sent again', async () => {
    const { store, lock, record, start } = setup()
    store.script('create', 'answer-lost')
    const lease = await leaseOf(lock().tryAcquire())
    expect(lease).toMatchObject({ owner: 'me', record: { run: 1 } })
    expect(lease?.record.token).toBeGreaterThanOrEqual(start)
    expect(store.calls).toEqual(['read', 'create', 'read'])
    await lease?.renew() // it holds the etag of what landed
    expect(record()).toMatchObject({ token: lease?.record.token, owner: 'me' })
  })

  it('is sent again when the read-back shows it did not land', async () => {
    const { store, lock, start } = setup()
    store.script('create', 'transient')
    const lease = await leaseOf(lock().tryAcquire())
    expect(lease).toMatchObject({ owner: 'me', record: { run: 1 } })
    expect(lease?.record.token).toBeGreaterThanOrEqual(start)
    expect(store.calls).toEqual(['read', 'create', 'read', 'create'])
  })

  it('lost the race, and is not sent again, when the read-back shows another contender’s record', async () => {
    const { store, lock, record, other } = setup()
    store.script('create', (memory) => {
      memory.putRaw(KEY, other)
      return 'transient'
    })
    // The read-back that settled the write named the winner: no read more.
    expect(await lock().tryAcquire()).toMatchObject({ status: 'held', holder: { owner: 'other' } })
    expect(store.count('create')).toBe(1)
    expect(store.count('read')).toBe(2)
    expect(record()).toMatchObject({ owner: 'other' })
  })

  it('is settled by reading when the store answers an ambiguous 412: our own record means it landed', async () => {
    const { store, lock, start } = setup()
    store.script('create', 'ambiguous')
    const lease = await leaseOf(lock().tryAcquire())
    expect(lease).toMatchObject({ owner: 'me', record: { run: 1 } })
    expect(lease?.record.token).toBeGreaterThanOrEqual(start)
    expect(store.count('create')).toBe(1)
  })

  it('reads an ambiguous 412 back again when the first read-back fails, and recognises its own write', async () => {
    const { store, lock, start } = setup()
    store.script('create', 'ambiguous').script('read', 'ok', 'transient')
    const lease = await leaseOf(lock().tryAcquire())
    expect(lease).toMatchObject({ owner: 'me', record: { run: 1 } })
    expect(lease?.record.token).toBeGreaterThanOrEqual(start)
    expect(store.calls).toEqual(['read', 'create', 'read', 'read'])
  })

  it('is settled by reading when a retried create fails its condition: it may have failed against our own first try', async () => {
    const { store, lock, start } = setup()
    // The first try lands unanswered and cannot be read back; the second fails its condition.
    store.script('create', 'answer-lost').script('read', 'ok', 'transient')
    const lease = await leaseOf(lock().tryAcquire())
    expect(lease).toMatchObject({ owner: 'me', record: { run: 1 } })
    expect(lease?.record.token).toBeGreaterThanOrEqual(start)
    expect(store.calls).toEqual(['read', 'create', 'read', 'create', 'read'])
  })

  it('takes a plain 412 on its first try as a lost race, and reads once to name the winner', async () => {
    const { store, lock, other } = setup()
    store.script('create', (memory) => {
      memory.putRaw(KEY, other)
      return 'ok' // the create itself now fails its condition
    })
    expect(await lock().tryAcquire()).toMatchObject({ status: 'held', holder: { owner: 'other' } })
    expect(store.calls).toEqual(['read', 'create', 'read'])
  })
})

describe('a renewal whose outcome is unknown', () => {
  it('costs one request when it is answered', async () => {
    const { store, held } = setup()
    await (await held()).renew()
    expect(store.calls).toEqual(['replace'])
  })

  it('is recognised as ours when it landed though its answer was lost, and is not sent again', async () => {
    const { store, held, record, halfWidth } = setup()
    const lease = await held()
    store.script('replace', 'answer-lost')
    const offBy = halfWidth() // how far its guess of the store's clock may be off
    await lease.renew()
    expect(store.calls).toEqual(['replace', 'read'])
    // Renewed: ttl - margin - that (to the ms, rounded down).
    expect(lease.remainingMs).toBeLessThanOrEqual(10_000 - 1_000 - offBy)
    expect(lease.remainingMs).toBeGreaterThan(10_000 - 1_000 - offBy - 1)
    await lease.release() // with the etag of what landed
    expect(record()).toMatchObject({ token: lease.record.token, expires_at: 0 })
  })

  it('is sent again when the read-back shows the object unchanged', async () => {
    const { store, held } = setup()
    const lease = await held()
    store.script('replace', 'transient')
    await lease.renew()
    expect(store.calls).toEqual(['replace', 'read', 'replace'])
  })

  it('is sent again when the read-back cannot tell whether the object exists (a 403 to the reader)', async () => {
    const { store, held } = setup()
    const lease = await held()
    store.script('replace', 'transient').script('read', 'denied')
    await lease.renew()
    expect(store.calls).toEqual(['replace', 'read', 'replace'])
    expect(lease.isHeld).toBe(true)
  })

  it('means the lease was taken over when the read-back finds another holder’s record', async () => {
    const { store, held, other } = setup()
    const lease = await held()
    store.script('replace', (memory) => {
      memory.putRaw(KEY, other)
      return 'transient'
    })
    await expect(lease.renew()).rejects.toMatchObject({ name: 'LockLostError', reason: 'taken-over' })
    expect(store.count('replace')).toBe(1)
  })

  it('means the lease was lost to a delete when the read-back finds no object', async () => {
    const { store, held } = setup()
    const lease = await held()
    store.script('replace', (memory) => {
      memory.delete(KEY)
      return 'transient'
    })
    const error = await lease.renew().catch((e: unknown) => e)
    expect(error).toBeInstanceOf(LockLostError)
    expect(error).toMatchObject({ reason: 'deleted' })
    expect(store.count('replace')).toBe(1)
  })
})
