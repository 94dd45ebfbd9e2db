import { describe, expect, it } from 'vitest'
import { AcquireStatus, Lock, LockStoreError } from '../../lib/index.js'
import { leaseOf } from '../support/lease-of.js'
import { ScriptedStore } from '../support/scripted-store.js'
import { SimTime } from '../support/sim-clock.js'

const KEY = 'jobs/rounds'

function setup() {
  const time = new SimTime()
  const store = new ScriptedStore({ clock: time.serverClock })
  const lock = (owner = 'me') =>
    new Lock({ store, key: KEY, owner, clock: time.localClock(), random: () => 0.5 })
  const put = (record: Record<string, unknown>) =>
    store.memory.putRaw(KEY, JSON.stringify({ v: 1, owner: 'someone', ...record }))
  /** The store's time before any acquisition: a first token is at or above it. */
  const start = time.now
  return { time, store, lock, put, start }
}

describe('an acquisition meeting a 409 (another conditional write in flight)', () => {
  it('waits the retry backoff, drawn from the lock’s random source, then reads and tries again', async () => {
    const { time, store, lock, start } = setup()
    let firstAt = 0
    let retriedAt = 0
    store.script(
      'create',
      () => {
        firstAt = time.now
        return 'conflict'
      },
      () => {
        retriedAt = time.now
        return 'ok'
      },
    )
    const lease = await leaseOf(lock().tryAcquire())
    expect(lease).toMatchObject({ record: { run: 1 } })
    expect(lease?.record.token).toBeGreaterThanOrEqual(start)
    // Half (random 0.5) of the first 50 ms backoff cap, then the new token's own wait (under a
    // second: the estimate of the store's clock is a second wide at most).
    expect(retriedAt - firstAt).toBeGreaterThanOrEqual(25)
    expect(retriedAt - firstAt).toBeLessThan(25 + 1_000)
    expect(store.calls).toEqual(['read', 'create', 'read', 'create'])
  })

  it('on a record it writes over, takes the lock once the write in flight turns out not to have landed', async () => {
    const { store, lock, put } = setup()
    put({ token: 6, expires_at: 0 })
    store.script('replace', 'conflict')
    const lease = await leaseOf(lock().tryAcquire())
    expect(lease?.record.token).toBeGreaterThan(6)
    // The record was as the first write expected it: a 409 is no sign of an engine that
    // contradicts itself, only of a write in flight.
    expect(store.calls).toEqual(['read', 'replace', 'read', 'replace'])
  })

  it('gives up after 8 contended rounds, retryably', async () => {
    const { store, lock } = setup()
    store.script('create', ...Array.from({ length: 20 }, () => 'conflict' as const))
    const error = await leaseOf(lock().tryAcquire()).catch((e: unknown) => e)
    expect(error).toBeInstanceOf(LockStoreError)
    expect(error).toMatchObject({ retryable: true, key: KEY })
    expect(store.count('create')).toBe(8)
  })
})

describe('a reader that may not see whether the object exists (S3 answers 403 to a GET without ListBucket)', () => {
  it('creates the object when it is indeed absent', async () => {
    const { store, lock, start } = setup()
    store.script('read', 'denied')
    const lease = await leaseOf(lock().tryAcquire())
    expect(lease).toMatchObject({ record: { run: 1 } })
    expect(lease?.record.token).toBeGreaterThanOrEqual(start)
    expect(store.calls).toEqual(['read', 'create'])
  })

  it('reads again when the create finds the object there after all, and takes it when free', async () => {
    const { store, lock, put } = setup()
    put({ token: 6, expires_at: 0 })
    store.script('read', 'denied')
    const lease = await leaseOf(lock().tryAcquire())
    expect(lease?.record.token).toBeGreaterThan(6)
    expect(lease).toMatchObject({ record: { run: 1 } }) // the record counted no runs
    expect(store.calls).toEqual(['read', 'create', 'read', 'replace'])
  })

  it('says so, not retryably, when the object exists and still may not be read', async () => {
    const { store, lock, put } = setup()
    put({ token: 6, expires_at: 0 })
    store.script('read', 'denied', 'denied', 'denied')
    const error = await leaseOf(lock().tryAcquire()).catch((e: unknown) => e)
    expect(error).toBeInstanceOf(LockStoreError)
    expect(error).toMatchObject({ retryable: false, key: KEY })
    expect(store.calls).toEqual(['read', 'create', 'read'])
  })

  it('does not take a 409 on its create for a denial: it waits and tries again', async () => {
    const { store, lock, start } = setup()
    store.script('read', 'denied', 'denied').script('create', 'conflict')
    const lease = await leaseOf(lock().tryAcquire())
    expect(lease).toMatchObject({ record: { run: 1 } })
    expect(lease?.record.token).toBeGreaterThanOrEqual(start)
    expect(store.calls).toEqual(['read', 'create', 'read', 'create'])
  })
})

describe('an acquisition that loses a race (412: another contender wrote first)', () => {
  it('reads at once, with no backoff, and names the winner as the holder', async () => {
    const { time, store, lock, put } = setup()
    put({ token: 6, expires_at: 0 })
    let lostAt = 0
    let readAt = 0
    store
      .script('read', 'ok', () => {
        readAt = time.now
        return undefined
      })
      .script('replace', (memory) => {
        memory.putRaw(
          KEY,
          JSON.stringify({ v: 1, token: 7, expires_at: time.now / 1_000 + 60, owner: 'winner' }),
        )
        lostAt = time.now
        return undefined
      })
    const result = await lock().tryAcquire()
    expect(result).toMatchObject({ status: AcquireStatus.Held, holder: { owner: 'winner', token: 7 } })
    expect(store.calls).toEqual(['read', 'replace', 'read'])
    expect(readAt - lostAt).toBe(0)
  })
})
