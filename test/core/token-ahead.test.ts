import { describe, expect, it } from 'vitest'
import { LockConflictError, LockLostError, LockOptionsError } from '../../lib/index.js'
import { leaseOf } from '../support/lease-of.js'
import { operatorFor } from '../support/operator-for.js'
import { simLocks } from '../support/sim-locks.js'

const KEY = 'jobs/ahead'
const MINUTE = 60_000

function setup() {
  const { time, store, lock, record, writes } = simLocks(KEY)
  /** An outside writer's record: not through the library. */
  const put = (fields: Record<string, unknown>) =>
    store.putRaw(KEY, JSON.stringify({ v: 1, expires_at: 0, owner: 'script', ...fields }))
  const secondsFromNow = (ms: number) => (time.now + ms) / 1000
  return { time, store, lock, put, record, writes, secondsFromNow }
}

const rejection = (promise: Promise<unknown>): Promise<unknown> =>
  promise.then(
    (value) => {
      throw new Error(`expected a rejection, got ${JSON.stringify(value)}`)
    },
    (error: unknown) => error,
  )

describe('a token more than 10 s ahead of the store clock (only an outside write makes one)', () => {
  it('is refused by every acquisition, held or not, however long it waits: a typed error naming the repair, nothing written', async () => {
    const { time, store, lock, put, writes } = setup()
    put({ token: time.now + MINUTE })
    const before = store.peek(KEY)
    for (const attempt of [
      () => leaseOf(lock('a').tryAcquire()),
      () => lock('a').tryAcquire(),
      () => lock('a').acquire({ waitMs: 5_000 }),
      () => lock('a').runExclusive(async () => 'ran'),
    ]) {
      const error = await rejection(attempt())
      expect(error).toBeInstanceOf(LockConflictError)
      expect(error).toMatchObject({ name: 'LockConflictError', reason: 'record-ahead-of-clock', key: KEY })
      expect((error as Error).message).toMatch(/lambda-singleton reset .*--back-to-clock/)
      expect((error as Error).message).toMatch(
        /new LockOperator\(\{ store, key \}\)\.reset\(\{ backToClock: true \}\)/,
      )
      expect((error as Error).message).toMatch(/writes a released record with a token from the store's clock/)
    }
    expect(store.peek(KEY)).toBe(before)
    expect(writes()).toBe(0)
  })

  it('is refused once the lease that carries it ends, not while it is held', async () => {
    const { time, lock, put, secondsFromNow, writes } = setup()
    put({ token: time.now + MINUTE, expires_at: secondsFromNow(5_000), owner: 'outside' })
    expect(await lock('a').tryAcquire()).toMatchObject({ status: 'held', holder: { owner: 'outside' } })
    time.advance(10_000)
    expect(await rejection(leaseOf(lock('a').tryAcquire()))).toMatchObject({
      reason: 'record-ahead-of-clock',
    })
    expect(writes()).toBe(0)
  })

  it('is refused by forceRelease too, writing nothing', async () => {
    const { time, store, lock, put, secondsFromNow } = setup()
    put({ token: time.now + MINUTE, expires_at: secondsFromNow(MINUTE), owner: 'stuck' })
    const before = store.peek(KEY)
    const error = await rejection(operatorFor(lock('ops')).forceRelease())
    expect(error).toBeInstanceOf(LockConflictError)
    expect(error).toMatchObject({ reason: 'record-ahead-of-clock' })
    expect(store.peek(KEY)).toBe(before)
  })

  it('is reported by inspect as what blocks the lock, held or not', async () => {
    const { time, lock, put, secondsFromNow } = setup()
    put({ token: time.now + MINUTE })
    expect(await operatorFor(lock('a')).inspect()).toMatchObject({
      held: false,
      blocked: 'record-ahead-of-clock',
    })
    put({ token: time.now + MINUTE, expires_at: secondsFromNow(MINUTE) })
    expect(await operatorFor(lock('a')).inspect()).toMatchObject({
      held: true,
      blocked: 'record-ahead-of-clock',
    })
  })

  it('is a token 10 s ahead of the latest the store clock may read, not of a guess of it', async () => {
    const { time, lock, put } = setup()
    // One answer dated to the second: the latest the store's clock may read is up to 1 s ahead.
    await operatorFor(lock('a')).inspect()
    put({ token: time.now + 10_000 })
    expect((await operatorFor(lock('a')).inspect())?.blocked).toBeUndefined()
    put({ token: time.now + 12_000 })
    expect((await operatorFor(lock('a')).inspect())?.blocked).toBe('record-ahead-of-clock')
  })
})

describe('reset back to the clock', () => {
  it('cannot be done without asking: reset never lowers a token', async () => {
    const { time, lock, put, record } = setup()
    const ahead = time.now + MINUTE
    put({ token: ahead })
    // Below it is too low; above it is ahead of the clock.
    expect(await rejection(operatorFor(lock('ops')).reset({ token: time.now }))).toMatchObject({
      reason: 'token-too-low',
    })
    expect(await rejection(operatorFor(lock('ops')).reset({ token: ahead + 1 }))).toMatchObject({
      reason: 'token-ahead-of-clock',
    })
    expect(record()).toMatchObject({ token: ahead, owner: 'script' })
  })

  it('writes a released record with a token from the store clock, below the one ahead, and the lock works again', async () => {
    const { time, lock, put, record } = setup()
    const ahead = time.now + MINUTE
    put({ token: ahead, cursor: 7 })
    const asked = time.now
    const reset = await operatorFor(lock('ops')).reset({ backToClock: true })
    // The latest the store's clock may read, known to the second: at most a second above it.
    expect(reset.token).toBeGreaterThanOrEqual(asked)
    expect(reset.token).toBeLessThanOrEqual(asked + 1_000)
    // A record of its own, like every reset: nothing of the outside one is kept.
    expect(reset).toEqual({ v: 1, token: reset.token, expires_at: 0, owner: 'reset by ops' })
    expect(record()).toEqual(reset)
    const lease = await leaseOf(lock('a').tryAcquire())
    expect(lease?.record.token).toBeGreaterThan(reset.token)
    expect(lease?.record.token).toBeLessThan(ahead)
  })

  it('is above every token the lock handed out before the outside write', async () => {
    const { time, lock, put } = setup()
    const lease = await leaseOf(lock('a').tryAcquire())
    const handedOut = await lease?.fencingToken()
    await lease?.release()
    put({ token: time.now + MINUTE })
    const reset = await operatorFor(lock('ops')).reset({ backToClock: true })
    expect(reset.token).toBeGreaterThan(handedOut ?? Number.POSITIVE_INFINITY)
  })

  it('repairs a lock whose tokens are exhausted', async () => {
    const { lock, put } = setup()
    put({ token: Number.MAX_SAFE_INTEGER })
    expect(await rejection(leaseOf(lock('a').tryAcquire()))).toMatchObject({ reason: 'tokens-exhausted' })
    await operatorFor(lock('ops')).reset({ backToClock: true })
    expect((await leaseOf(lock('a').tryAcquire()))?.record.token).toBeLessThan(Number.MAX_SAFE_INTEGER)
  })

  it('is done by an operator that read the token ahead itself, and a new lock then takes it', async () => {
    const { time, lock, put } = setup()
    put({ token: time.now + MINUTE })
    const ops = operatorFor(lock('ops'))
    expect(await ops.inspect()).toMatchObject({ blocked: 'record-ahead-of-clock' })
    const reset = await ops.reset({ backToClock: true })
    expect((await leaseOf(lock('next').tryAcquire()))?.record.token).toBeGreaterThan(reset.token)
  })

  it('leaves another lock that read the token ahead refusing: it cannot tell the reset from a deletion', async () => {
    const { time, lock, put } = setup()
    put({ token: time.now + MINUTE })
    const warm = lock('warm')
    expect(await rejection(leaseOf(warm.tryAcquire()))).toMatchObject({ reason: 'record-ahead-of-clock' })
    await operatorFor(lock('ops')).reset({ backToClock: true })
    expect(await rejection(leaseOf(warm.tryAcquire()))).toMatchObject({ reason: 'record-ahead-of-clock' })
    // A new process knows only what the store says.
    expect(await leaseOf(lock('cold').tryAcquire())).not.toBeNull()
  })

  it('refuses, like any reset, a record that may be held, unless forced; forced, it fences the holder off', async () => {
    const { time, lock, put, record, secondsFromNow } = setup()
    put({ token: time.now + MINUTE, expires_at: secondsFromNow(MINUTE), owner: 'outside' })
    expect(await rejection(operatorFor(lock('ops')).reset({ backToClock: true }))).toMatchObject({
      reason: 'not-released',
    })
    expect(record()).toMatchObject({ owner: 'outside' })
    await operatorFor(lock('ops')).reset({ backToClock: true, force: true })
    expect(record()).toMatchObject({ expires_at: 0, owner: 'reset by ops' })

    const holder = await leaseOf(lock('holder').tryAcquire())
    expect(await rejection(operatorFor(lock('ops')).reset({ backToClock: true }))).toMatchObject({
      reason: 'not-released',
    })
    await operatorFor(lock('ops')).reset({ backToClock: true, force: true })
    await expect(holder?.renew()).rejects.toBeInstanceOf(LockLostError)
  })

  it('replaces a corrupted object that shows a token far ahead, or none, when it shows itself released', async () => {
    const { time, store, lock } = setup()
    store.putRaw(KEY, JSON.stringify({ v: 1, token: String(time.now + MINUTE), expires_at: 0, owner: 'x' }))
    expect(await rejection(operatorFor(lock('ops')).reset({ token: time.now + 1 }))).toMatchObject({
      reason: 'token-too-low',
    })
    expect(await operatorFor(lock('ops')).reset({ backToClock: true })).toMatchObject({ expires_at: 0 })
  })

  it('creates the record where there is none', async () => {
    const { time, lock, record } = setup()
    const reset = await operatorFor(lock('ops')).reset({ backToClock: true })
    expect(reset.token).toBeGreaterThanOrEqual(time.now)
    expect(record()).toEqual(reset)
  })

  it.each([
    ['both a token and backToClock', { token: 5, backToClock: true }],
    ['neither', {}],
  ])('is refused before any request given %s', async (_, options) => {
    const { store, lock } = setup()
    const error = await rejection(operatorFor(lock('ops')).reset(options))
    expect(error).toBeInstanceOf(LockOptionsError)
    expect((error as Error).message).toMatch(/either a token or backToClock/)
    expect(store.requests.read).toBe(0)
  })
})
