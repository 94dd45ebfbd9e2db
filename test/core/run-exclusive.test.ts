import { describe, expect, it } from 'vitest'
import { Lock, LockLostError, LockOptionsError } from '../../lib/index.js'
import { leaseOf } from '../support/lease-of.js'
import { ScriptedStore } from '../support/scripted-store.js'
import { ManualClock } from '../support/sim-clock.js'

/** lock.runExclusive: acquire, renew while the routine runs, abort it when the lease is lost, release. */
const KEY = 'jobs/routine'

function setup() {
  const clock = new ManualClock()
  const store = new ScriptedStore({ clock })
  const lock = (owner = 'runner') =>
    new Lock({ store, key: KEY, owner, ttlMs: 6_000, clockSkewMarginMs: 1_000, clock, random: () => 0.5 })
  const record = () => JSON.parse(store.memory.peek(KEY) ?? 'null')
  return { clock, store, lock, record }
}

describe('lock.runExclusive', () => {
  it("runs the routine under a lease, releases it, and answers the routine's value", async () => {
    const { clock, lock, record } = setup()
    const start = clock.now()
    let token = Number.NaN
    const result = await clock.run(
      lock().runExclusive(async (lease) => {
        token = await lease.fencingToken()
        return `ran with ${token}`
      }),
    )
    expect(result).toEqual({ status: 'ran', value: `ran with ${token}` })
    expect(token).toBeGreaterThanOrEqual(start) // a first token: the store's time at the acquisition
    expect(record()).toMatchObject({ token, run: 1, expires_at: 0 })
  })

  it('clears the checkpoint when the routine completes, keeps it when it throws, and keeps the cursor', async () => {
    const { clock, lock, record } = setup()
    const failing = lock().runExclusive(async (lease) => {
      await lease.saveCheckpoint({ done: 3 })
      await lease.saveCursor('2026-11-20')
      throw new Error('job failed')
    })
    await expect(clock.run(failing)).rejects.toThrow('job failed')
    expect(record()).toMatchObject({ state: { done: 3 }, cursor: '2026-11-20' })
    const resumed = await clock.run(lock().runExclusive(async (lease) => lease.record.state))
    expect(resumed).toMatchObject({ status: 'ran', value: { done: 3 } })
    expect(record()).not.toHaveProperty('state')
    expect(record()).toMatchObject({ cursor: '2026-11-20', expires_at: 0 })
  })

  it('does not run the routine while another holds the lock, and names the holder', async () => {
    const { clock, lock } = setup()
    await clock.run(leaseOf(lock('other').tryAcquire()))
    let ran = false
    const result = await clock.run(
      lock().runExclusive(async () => {
        ran = true
      }),
    )
    expect(result).toMatchObject({ status: 'held', holder: { owner: 'other' } })
    expect(ran).toBe(false)
  })

  it('renews every third of the ttl by default while the routine runs, and stops when it ends', async () => {
    const { clock, store, lock } = setup()
    await clock.run(lock().runExclusive(async () => clock.sleep(7_000)))
    expect(store.count('replace')).toBe(3 + 1) // renewals at 2, 4 and 6 s, then the release
    expect(clock.pending).toBe(0) // no heartbeat timer outlives the routine
    await clock.advance(60_000)
    expect(store.count('replace')).toBe(4)
  })

  it('leaves no timer behind when the routine throws', async () => {
    const { clock, lock } = setup()
    const failing = lock().runExclusive(async () => {
      await clock.sleep(1_000)
      throw new Error('job failed')
    })
    await expect(clock.run(failing)).rejects.toThrow('job failed')
    expect(clock.pending).toBe(0)
  })

  it('frees the record of a lease that ran out unrenewed when nobody wrote since, and rejects with the loss', async () => {
    const { clock, store, lock, record } = setup()
    const start = clock.now()
    const cutOffUntil = start + 6_000 // every renewal fails until the lease has run out
    store.script(
      'replace',
      ...Array.from({ length: 100 }, () => () => (clock.now() < cutOffUntil ? 'transient' : 'ok')),
    )
    const run = lock().runExclusive(async () => clock.sleep(10_000))
    await expect(clock.run(run)).rejects.toMatchObject({ name: 'LockLostError', reason: 'expired' })
    expect(record()).toMatchObject({ run: 1, expires_at: 0 })
    expect(record().token).toBeGreaterThanOrEqual(start)
  })

  it('renews every heartbeatMs, asking each time for the ttl given to run', async () => {
    const { clock, store, lock, record } = setup()
    const ttls: number[] = []
    const run = lock().runExclusive(
      async () => {
        for (let second = 0; second < 3; second++) {
          await clock.sleep(1_000)
          ttls.push(record().ttl_ms)
        }
      },
      { ttlMs: 20_000, heartbeatMs: 1_000 },
    )
    await clock.run(run)
    expect(store.count('replace')).toBe(3 + 1)
    expect(ttls).toEqual([20_000, 20_000, 20_000])
  })

  it('refuses a heartbeat not below ttl - margin, before any request', async () => {
    const { clock, store, lock } = setup()
    await expect(
      clock.run(lock().runExclusive(async () => 1, { heartbeatMs: 5_000 })),
    ).rejects.toBeInstanceOf(LockOptionsError)
    expect(store.calls).toEqual([])
  })

  it('blames a default heartbeat that does not fit on the ttl given, not on a heartbeat never given', async () => {
    const { clock, lock } = setup()
    await expect(clock.run(lock().runExclusive(async () => 1, { ttlMs: 1_400 }))).rejects.toThrow(
      'runExclusive: ttlMs 1400 leaves 400 ms above the clock-skew margin (clockSkewMarginMs 1000): the default heartbeat, ' +
        'a third of ttlMs (466 ms), does not fit in it; raise ttlMs to at least 1501',
    )
  })

  it('aborts the routine’s signal when the lease is taken over, and rejects with that loss though the routine finished', async () => {
    const { clock, store, lock, record } = setup()
    let thief = 0
    const run = lock().runExclusive(async (lease) => {
      thief = lease.record.token + 1
      store.memory.putRaw(KEY, JSON.stringify({ ...record(), token: thief, owner: 'thief' }))
      await new Promise((resolve) => lease.signal.addEventListener('abort', resolve))
      return 'finished'
    })
    const error = await clock.run(run).catch((e: unknown) => e)
    expect(error).toBeInstanceOf(LockLostError)
    expect(error).toMatchObject({ reason: 'taken-over' })
    expect(record()).toMatchObject({ token: thief, owner: 'thief' }) // nothing released over the new holder
  })

  it('releases when the routine throws, and rethrows the routine’s error, not a failed release', async () => {
    const { clock, store, lock, record } = setup()
    await expect(
      clock.run(
        lock().runExclusive(async () => {
          throw new Error('job failed')
        }),
      ),
    ).rejects.toThrow('job failed')
    expect(record()).toMatchObject({ expires_at: 0 })
    store.script('replace', 'ok', 'fatal') // the acquisition lands, the release fails
    await expect(
      clock.run(
        lock().runExclusive(async () => {
          throw new Error('failed again')
        }),
      ),
    ).rejects.toThrow('failed again')
  })

  it('reports a release that fails after the routine succeeded', async () => {
    const { clock, store, lock } = setup()
    store.script('replace', 'fatal')
    await expect(clock.run(lock().runExclusive(async () => 'done'))).rejects.toMatchObject({
      name: 'LockStoreError',
      retryable: false,
    })
  })

  it('hands renewal failures that outlasted the retries to onHeartbeatError, and keeps the lease', async () => {
    const { clock, store, lock } = setup()
    store.script('replace', 'fatal')
    const failures: unknown[] = []
    const result = await clock.run(
      lock().runExclusive(async (lease) => clock.sleep(3_000).then(() => lease.signal.aborted), {
        onHeartbeatError: (error) => failures.push(error),
      }),
    )
    expect(failures).toEqual([expect.objectContaining({ name: 'LockStoreError' })])
    expect(result).toEqual({ status: 'ran', value: false })
  })
})
