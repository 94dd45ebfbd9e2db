import { describe, expect, it } from 'vitest'
import { Lock, LockStoreError } from '../../lib/index.js'
import { leaseOf } from '../support/lease-of.js'
import { operatorFor } from '../support/operator-for.js'
import { ScriptedStore, type Step } from '../support/scripted-store.js'
import { SimTime } from '../support/sim-clock.js'

const KEY = 'jobs/flaky'
const TTL = 10_000
const MARGIN = 1_000
/** Every retry waits this long: half of a 1 s backoff cap, with `random` fixed at 0.5. */
const DELAY = 500

function setup(attempts = 100) {
  const time = new SimTime()
  const store = new ScriptedStore({ clock: time.serverClock })
  const lock = (owner = 'me') =>
    new Lock({
      store,
      key: KEY,
      owner,
      ttlMs: TTL,
      clockSkewMarginMs: MARGIN,
      clock: time.localClock(),
      retry: { attempts, baseMs: 1_000, capMs: 1_000 },
      random: () => 0.5,
    })
  /** Steps that fail transiently, noting when each try was made. */
  const failing = (tries: number[], count = 1_000): Step[] =>
    Array.from({ length: count }, () => () => {
      tries.push(time.now)
      return 'transient' as const
    })
  const record = () => JSON.parse(store.memory.peek(KEY) ?? 'null')
  return { time, store, lock, failing, record }
}

describe('transient store failures', () => {
  it('are retried, up to retry.attempts tries in all, then reported retryable with the last failure as cause', async () => {
    const { store, lock } = setup(3)
    store.script('read', 'transient', 'transient', 'transient', 'transient')
    const error = await leaseOf(lock().tryAcquire()).catch((e: unknown) => e)
    expect(error).toBeInstanceOf(LockStoreError)
    expect(error).toMatchObject({ retryable: true, key: KEY, cause: { name: 'LockStoreError' } })
    expect(store.calls).toEqual(['read', 'read', 'read'])
  })

  it('are retried with one try left as long as retry.attempts allows', async () => {
    const { store, lock } = setup(3)
    store.script('read', 'transient', 'transient')
    expect(await leaseOf(lock().tryAcquire())).toMatchObject({ owner: 'me', record: { run: 1 } })
    expect(store.calls).toEqual(['read', 'read', 'read', 'create'])
  })

  it('other failures are not retried, on a read or on a write', async () => {
    const { store, lock } = setup()
    store.script('read', 'fatal')
    await expect(leaseOf(lock().tryAcquire())).rejects.toMatchObject({ retryable: false })
    expect(store.calls).toEqual(['read'])
    store.calls.length = 0
    store.script('create', 'fatal')
    await expect(leaseOf(lock().tryAcquire())).rejects.toMatchObject({ retryable: false })
    expect(store.calls).toEqual(['read', 'create'])
  })

  it('other errors than store errors are not retried either', async () => {
    const { store, lock } = setup()
    store.script('read', () => {
      throw new TypeError('a bug in a store')
    })
    await expect(leaseOf(lock().tryAcquire())).rejects.toBeInstanceOf(TypeError)
    expect(store.calls).toEqual(['read'])
  })

  it('are retried by an acquisition only while a try can start before the lease it asks for would end', async () => {
    const { time, store, lock, failing } = setup()
    const tries: number[] = []
    const start = time.now
    store.script('read', ...failing(tries))
    await expect(leaseOf(lock().tryAcquire())).rejects.toMatchObject({ retryable: true })
    const deadline = start + TTL - MARGIN
    expect(Math.max(...tries)).toBeLessThan(deadline)
    expect(Math.max(...tries) + DELAY).toBeGreaterThanOrEqual(deadline)
  })

  it('are retried by a renewal until the lease’s own end, then reported without losing the lease', async () => {
    const { time, store, lock, failing } = setup()
    const lease = await leaseOf(lock().tryAcquire())
    const deadline = lease?.expiresAt.getTime() ?? 0
    time.advance(1_000)
    const tries: number[] = []
    store.script('replace', ...failing(tries))
    await expect(lease?.renew()).rejects.toMatchObject({ name: 'LockStoreError', retryable: true })
    expect(Math.max(...tries)).toBeLessThan(deadline)
    expect(Math.max(...tries) + DELAY).toBeGreaterThanOrEqual(deadline)
    expect(lease?.isHeld).toBe(true)
  })

  it('are retried by a checkpoint until the lease’s own end', async () => {
    const { time, store, lock, failing } = setup()
    const lease = await leaseOf(lock().tryAcquire())
    const deadline = lease?.expiresAt.getTime() ?? 0
    time.advance(1_000)
    const tries: number[] = []
    store.script('replace', ...failing(tries))
    await expect(lease?.saveCheckpoint({ at: 1 })).rejects.toMatchObject({ retryable: true })
    expect(Math.max(...tries) + DELAY).toBeGreaterThanOrEqual(deadline)
  })

  it('are retried by a release for 5 s even with less of the lease left, so the lock is freed', async () => {
    const { time, store, lock, record } = setup()
    const lease = await leaseOf(lock().tryAcquire())
    time.advance((lease?.remainingMs ?? 0) - 100)
    store.script('replace', 'transient', 'transient', 'transient', 'transient')
    await lease?.release().catch(() => undefined) // its end passed while it retried
    expect(record()).toMatchObject({ token: lease?.record.token, expires_at: 0 })
  })

  it('are retried when freeing the record of a lease that ran out unrenewed', async () => {
    const { time, store, lock, record } = setup()
    const a = lock()
    const lease = await leaseOf(a.tryAcquire())
    time.advance(TTL - MARGIN)
    expect(lease?.isLost).toBe(true)
    store.script('replace', 'transient')
    await expect(lease?.release()).rejects.toMatchObject({ reason: 'expired' })
    expect(record()).toMatchObject({ token: lease?.record.token, expires_at: 0 })
    store.calls.length = 0
    const next = await leaseOf(a.tryAcquire())
    expect(next?.record.token).toBeGreaterThan(lease?.record.token ?? Number.POSITIVE_INFINITY)
    expect(next?.record.run).toBe(2)
    expect(store.calls).toEqual(['replace']) // what it freed is its cache: no read needed
  })

  it('are retried by inspect', async () => {
    const { store, lock } = setup()
    const lease = await leaseOf(lock('holder').tryAcquire())
    store.script('read', 'transient')
    expect(await operatorFor(lock()).inspect()).toMatchObject({ token: lease?.record.token, owner: 'holder' })
  })
})

describe('an abort signal', () => {
  it("is handed to an attempt's reads, never to its writes: a write once sent is not abandoned", async () => {
    const { store, lock } = setup()
    const { signal } = new AbortController()
    await lock().tryAcquire({ signal })
    expect(store.calls).toEqual(['read', 'create'])
    expect(store.signals).toEqual([signal, undefined])
  })

  it('that aborts while a write is under way leaves the write to its answer: landed, it is the lease', async () => {
    const { store, lock } = setup()
    const controller = new AbortController()
    store.script('create', () => {
      controller.abort(new Error('shutting down'))
      return 'ok'
    })
    const result = await lock().tryAcquire({ signal: controller.signal })
    // The caller stopped, yet its record landed: it gets the lease, to release, not a lock held by nobody.
    expect(result.status).toBe('acquired')
    if (result.status === 'acquired') await result.lease.release()
    expect(JSON.parse(store.memory.peek(KEY) ?? '{}')).toMatchObject({ expires_at: 0 })
  })

  it("waits, after a write whose answer was lost and a read that could not tell, until a read tells: the landed lease is the caller's", async () => {
    const { store, lock } = setup()
    const controller = new AbortController()
    store.script('read', 'ok', 'transient')
    store.script('create', () => {
      controller.abort(new Error('shutting down'))
      return 'answer-lost'
    })
    const result = await lock().tryAcquire({ signal: controller.signal })
    expect(result.status).toBe('acquired')
    if (result.status === 'acquired') await result.lease.release()
    expect(JSON.parse(store.memory.peek(KEY) ?? '{}')).toMatchObject({ expires_at: 0 })
  })

  it('stops the retries at once, with its reason', async () => {
    const { store, lock } = setup()
    const controller = new AbortController()
    store.script('read', () => {
      controller.abort(new Error('shutting down'))
      return 'transient'
    })
    await expect(lock().tryAcquire({ signal: controller.signal })).rejects.toThrow('shutting down')
    expect(store.calls).toEqual(['read'])
  })
})
