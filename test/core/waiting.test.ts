import { describe, expect, it } from 'vitest'
import { Lock, LockTimeoutError } from '../../lib/index.js'
import { leaseOf } from '../support/lease-of.js'
import { ScriptedStore } from '../support/scripted-store.js'
import { SimTime } from '../support/sim-clock.js'

const KEY = 'jobs/busy'

/** A lock held for an hour by someone else, and a contender that notes when it reads. */
async function setup() {
  const time = new SimTime()
  const store = new ScriptedStore({ clock: time.serverClock })
  const lock = (owner: string) =>
    new Lock({ store, key: KEY, owner, ttlMs: 3_600_000, clock: time.localClock(), random: () => 0.5 })
  const held = await leaseOf(lock('holder').tryAcquire())
  const reads: number[] = []
  store.script(
    'read',
    ...Array.from({ length: 1_000 }, () => () => {
      reads.push(time.now)
      return 'ok' as const
    }),
  )
  const gaps = () => reads.slice(1).map((at, i) => at - (reads[i] ?? 0))
  return { time, lock, reads, gaps, held }
}

describe('waiting for a held lock', () => {
  it('tries again after backoffs up to 100 ms, doubling to 2 s, by default', async () => {
    const { lock, gaps } = await setup()
    await lock('contender').tryAcquire({ waitMs: 10_000 })
    expect(gaps().slice(0, 7)).toEqual([50, 100, 200, 400, 800, 1_000, 1_000])
  })

  it('tries again after the backoffs it is given', async () => {
    const { lock, gaps } = await setup()
    await lock('contender').tryAcquire({ waitMs: 100, backoff: { baseMs: 10, capMs: 30 } })
    expect(gaps().slice(0, 4)).toEqual([5, 10, 15, 15])
  })

  it('answers at the end of the wait with what its last look saw, never looking after it', async () => {
    const { time, lock, reads } = await setup()
    const start = time.now
    expect(await lock('contender').tryAcquire({ waitMs: 1_234 })).toMatchObject({ status: 'held' })
    expect(reads.length).toBeGreaterThan(1)
    expect(reads.at(-1)).toBeLessThan(start + 1_234)
    expect(time.now).toBe(start + 1_234)
  })

  it('tries once, without waiting, by default', async () => {
    const { time, lock, reads } = await setup()
    const start = time.now
    expect(await lock('contender').tryAcquire()).toMatchObject({ status: 'held' })
    expect(reads).toEqual([start])
  })

  it('acquire() gives up with LockTimeoutError, naming the holder and how long it waited', async () => {
    const { lock, held } = await setup()
    const error = await lock('contender')
      .acquire({ waitMs: 5_000 })
      .catch((e: unknown) => e)
    expect(error).toBeInstanceOf(LockTimeoutError)
    expect(error).toMatchObject({
      key: KEY,
      waitedMs: 5_000,
      holder: { owner: 'holder', token: held?.record.token },
    })
  })
})
