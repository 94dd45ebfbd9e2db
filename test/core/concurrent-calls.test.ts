import { describe, expect, it } from 'vitest'
import type { LockRecord } from '../../lib/extend.js'
import { AcquireStatus, type Acquisition, Lock } from '../../lib/index.js'
import { MemoryLockStore } from '../../lib/memory/index.js'
import { operatorFor } from '../support/operator-for.js'
import { ManualClock } from '../support/sim-clock.js'

/**
 * Interleavings inside one process (docs/guarantees.md, I1 and I2): two calls at once on one
 * `Lock` instance, as a module-level lock serves concurrent invocations on Lambda Managed
 * Instances; an operator writing between an acquisition's write and its hand-out; an
 * invocation that stalls past its own end while it acquires.
 */
const KEY = 'jobs/concurrent'

function setup() {
  const clock = new ManualClock()
  // Dates to the second, as S3 and DynamoDB give them: every new token has a wait.
  const store = new MemoryLockStore({ clock, clockResolutionMs: 1_000 })
  const lock = (owner: string) =>
    new Lock({ store, key: KEY, owner, ttlMs: 10_000, clockSkewMarginMs: 1_000, clock, random: () => 0.5 })
  const stored = (): LockRecord | null => JSON.parse(store.peek(KEY) ?? 'null')
  return { clock, store, lock, stored }
}

const acquired = (results: readonly Acquisition[]) =>
  results.filter((result) => result.status === AcquireStatus.Acquired)

describe('two calls at once on one Lock instance', () => {
  it('hands the lease to one of two concurrent tryAcquire calls with the same owner', async () => {
    const { clock, lock } = setup()
    const shared = lock('server/1')
    const results = await clock.run(Promise.all([shared.tryAcquire(), shared.tryAcquire()]))
    expect(acquired(results)).toHaveLength(1)
    expect(results.map((result) => result.status).sort()).toEqual(['acquired', 'held'])
  })

  it('hands the lease to one of two concurrent calls for the same owner on a warm instance', async () => {
    const { clock, lock } = setup()
    const shared = lock('server/1')
    const first = await clock.run(shared.tryAcquire())
    if (first.status !== AcquireStatus.Acquired) throw new Error('not acquired')
    await clock.run(first.lease.release())
    // The instance's own released write is cached: both calls may start blind.
    const results = await clock.run(
      Promise.all([shared.tryAcquire({ owner: 'fn/req-1' }), shared.tryAcquire({ owner: 'fn/req-1' })]),
    )
    expect(acquired(results)).toHaveLength(1)
  })

  it('lets one of two concurrent runExclusive calls run, never both', async () => {
    const { clock, lock } = setup()
    const shared = lock('server/1')
    let running = 0
    let most = 0
    const routine = async () => {
      running++
      most = Math.max(most, running)
      await clock.sleep(2_000)
      running--
    }
    const results = await clock.run(Promise.all([shared.runExclusive(routine), shared.runExclusive(routine)]))
    expect(most).toBe(1)
    expect(results.filter((result) => result.status === 'ran')).toHaveLength(1)
  })
})

describe('an acquisition and a write that lands after it', () => {
  it('hands out a lease that is still the stored one: nothing waits between its write and its hand-out', async () => {
    const { clock, store, lock, stored } = setup()
    const operator = operatorFor(lock('operator@host'))
    const contender = lock('worker')
    // The operator force-releases 1 ms after the contender's write has landed and been answered.
    const replace = store.replace.bind(store)
    const create = store.create.bind(store)
    const thenForceRelease = async <T>(write: Promise<T>) => {
      const answer = await write
      clock.schedule(1, () => void operator.forceRelease())
      return answer
    }
    store.create = (key, body, options) => thenForceRelease(create(key, body, options))
    store.replace = (key, body, etag, options) => thenForceRelease(replace(key, body, etag, options))
    let atHandOut: LockRecord | null = null
    const result = await clock.run(
      contender.tryAcquire().then((acquisition) => {
        atHandOut = stored()
        return acquisition
      }),
    )
    if (result.status !== AcquireStatus.Acquired) throw new Error(`not acquired: ${result.status}`)
    expect(atHandOut).toMatchObject({ token: result.lease.record.token, owner: 'worker' })
  })
})

describe('an invocation that stalls past its own end while it acquires', () => {
  it('writes no record that has ended before it was written, and no negative ttl', async () => {
    const { clock, store, lock, stored } = setup()
    const contender = lock('fn/req-1')
    const holdUntil = clock.now() + 3_000
    // The read answers after the invocation's end (a stalled event loop, a slow network).
    const read = store.read.bind(store)
    store.read = async (key, options) => {
      await clock.sleep(5_000)
      return read(key, options)
    }
    const outcome = await clock.run(
      contender.tryAcquire({ holdUntil }).then(
        (acquisition) => acquisition.status,
        (error: Error) => error.name,
      ),
    )
    expect(outcome).not.toBe(AcquireStatus.Acquired)
    expect(stored()).toBeNull()
  })
})
