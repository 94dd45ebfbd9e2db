import { describe, expect, it } from 'vitest'
import { Lock, LockConflictError } from '../../lib/index.js'
import { MemoryLockStore } from '../../lib/memory/index.js'
import { LockOperator } from '../../lib/operator.js'
import { leaseOf } from '../support/lease-of.js'
import { SimTime } from '../support/sim-clock.js'

const KEY = 'jobs/fenced'

function setup() {
  const time = new SimTime()
  const store = new MemoryLockStore({ clock: time.serverClock, clockResolutionMs: 1_000 })
  const lock = (owner: string) =>
    new Lock({ store, key: KEY, owner, ttlMs: 10_000, clockSkewMarginMs: 1_000, clock: time.localClock() })
  const operator = (name: string) =>
    new LockOperator({ store, key: KEY, operator: name, clockSkewMarginMs: 1_000, clock: time.localClock() })
  const put = (record: Record<string, unknown>) =>
    store.putRaw(KEY, JSON.stringify({ v: 1, expires_at: 0, owner: 'someone', ...record }))
  const token = () => JSON.parse(store.peek(KEY) ?? 'null')?.token
  return { time, store, lock, put, token, operator }
}

describe('the token floor: a lock never hands out a token at or below one handed out before', () => {
  it('takes the store time in ms as the token when it is above every token seen', async () => {
    const { time, lock, put } = setup()
    put({ token: 7 })
    const before = time.now
    const lease = await leaseOf(lock('a').tryAcquire())
    const token = await lease?.fencingToken()
    expect(token).toBeGreaterThan(before)
    // Handed out only once the store's clock has surely passed it.
    expect(time.now).toBeGreaterThan(token ?? Number.POSITIVE_INFINITY)
  })

  it("chooses the token by the store's clock as its read was sent: a slow answer does not add to its wait", async () => {
    const { time, store, lock, put } = setup()
    put({ token: 7 })
    time.advance(300) // 300 ms past the store's second
    const read = store.read.bind(store)
    // The read is made as it is sent, and its answer takes 400 ms to come back.
    store.read = async (key, options) => {
      const result = await read(key, options)
      time.advance(400)
      return result
    }
    const sentAt = time.now
    const lease = await leaseOf(lock('a').tryAcquire())
    const token = await lease?.fencingToken()
    // All the answer says is that the store's clock read its second (sentAt - 300): at most the
    // turn of that second as the read was sent (and the drift allowed over 400 ms: under a ms),
    // 400 ms more by the answer.
    const turn = sentAt - 300 + 1_000
    expect(token).toBeGreaterThanOrEqual(turn)
    expect(token).toBeLessThanOrEqual(turn + 1)
  })

  it("chooses the token over a record read ahead moments before (a Lambda's INIT) by the store's clock as that read was sent", async () => {
    const { time, lock, put } = setup()
    put({ token: 7 })
    time.advance(300) // 300 ms past the store's second
    const first = lock('a')
    const sentAt = time.now
    await first.readAhead()
    time.advance(400) // INIT ends, the first invocation comes
    const lease = await leaseOf(first.tryAcquire())
    const token = await lease?.fencingToken()
    // As after a read of its own: at most the turn of the second the read saw (sentAt - 300),
    // not the write's 400 ms later.
    const turn = sentAt - 300 + 1_000
    expect(token).toBeGreaterThanOrEqual(turn)
    expect(token).toBeLessThanOrEqual(turn + 1)
  })

  it('chooses the token over a record read ahead long before (provisioned concurrency) by the clock as the write is sent: W2 must not grow with its age', async () => {
    const { time, lock, put } = setup()
    put({ token: 7 })
    time.advance(300)
    const first = lock('a')
    await first.readAhead()
    time.advance(3_600_000) // an hour between INIT and the first invocation
    const writtenAt = time.now
    const lease = await leaseOf(first.tryAcquire())
    const token = await lease?.fencingToken()
    // The estimate loosened over the hour (drift allowed); the token is at least the store's
    // time as the write was sent, not the hour-old read's.
    expect(token).toBeGreaterThanOrEqual(writtenAt)
  })

  it('refuses to follow a token more than 10 s ahead of the store clock, writing nothing, and names the repair', async () => {
    const { time, store, lock, put } = setup()
    const ahead = time.now + 60_000 // an outside writer's; reset refuses such tokens
    put({ token: ahead })
    const before = { body: store.peek(KEY), now: time.now }
    const refused = await leaseOf(lock('a').tryAcquire()).catch((e: unknown) => e)
    expect(refused).toBeInstanceOf(LockConflictError)
    expect(refused).toMatchObject({ reason: 'record-ahead-of-clock', key: KEY })
    expect((refused as Error).message).toMatch(
      /more than 10 s ahead.*Nothing was written.*lambda-singleton reset .*--key jobs\/fenced --back-to-clock/,
    )
    // However long it may wait: the lock is free, and no wait makes the token followable.
    await expect(lock('b').acquire({ waitMs: 5_000 })).rejects.toMatchObject({
      reason: 'record-ahead-of-clock',
    })
    expect(store.peek(KEY)).toBe(before.body)
    expect(store.requests).toMatchObject({ create: 0, replace: 0 })
    expect(time.now - before.now).toBeLessThan(1_000)
  })

  it('never hands out a token that a deletion would let a later acquisition undercut (an outside token 60 s ahead)', async () => {
    const { time, store, lock, put } = setup()
    const handedOut: number[] = []
    const take = async (owner: string) => {
      const lease = await leaseOf(lock(owner).tryAcquire())
      if (lease) handedOut.push(await lease.fencingToken())
      return lease
    }
    put({ token: time.now + 60_000 })
    // Before: followed by +1 with no wait, a token the store's clock would reach only in a minute.
    const zombie = await take('zombie').catch((e: unknown) => e)
    store.delete(KEY)
    const next = await take('next')
    expect(handedOut.at(-1)).toBe(next?.record.token)
    expect(handedOut).toEqual([...handedOut].sort((a, b) => a - b))
    expect(new Set(handedOut).size).toBe(handedOut.length)
    expect(zombie).toMatchObject({ reason: 'record-ahead-of-clock' })
  })

  it('follows a token up to 10 s ahead of the store clock, and hands it out only once the clock has passed it', async () => {
    const { time, lock, put } = setup()
    const ahead = time.now + 8_000 // an operator's reset to their own clock's time
    put({ token: ahead })
    const lease = await leaseOf(lock('a').tryAcquire())
    expect(await lease?.fencingToken()).toBe(ahead + 1)
    expect(time.now).toBeGreaterThan(ahead + 1)
  })

  it('hands out a higher token after an outside write of a lower one over a live lease', async () => {
    const { lock, put } = setup()
    const zombie = await leaseOf(lock('zombie').tryAcquire())
    const zombieToken = await zombie?.fencingToken()
    put({ token: 1, expires_at: 0 })
    const next = await leaseOf(lock('next').tryAcquire())
    expect(await next?.fencingToken()).toBeGreaterThan(zombieToken ?? Number.POSITIVE_INFINITY)
  })

  it('hands out a higher token after the object is deleted, in a process that never saw the lock', async () => {
    const { store, lock } = setup()
    const zombie = await leaseOf(lock('zombie').tryAcquire())
    const zombieToken = await zombie?.fencingToken()
    store.delete(KEY)
    const next = await leaseOf(lock('next').tryAcquire())
    expect(await next?.fencingToken()).toBeGreaterThan(zombieToken ?? Number.POSITIVE_INFINITY)
  })

  it('may write a token no higher than one written before when the object is deleted before the store clock passed that one (W2); a token handed out after is above both', async () => {
    const { time, store, lock } = setup()
    const first = await leaseOf(lock('first').tryAcquire())
    const written = first?.record.token ?? Number.NaN
    // Deleted from outside while the store's clock is still short of the written token.
    expect(time.now).toBeLessThanOrEqual(written)
    store.delete(KEY)
    const next = await leaseOf(lock('next').tryAcquire())
    expect(next?.record.token).toBeLessThanOrEqual(written)
    // Only one of them is handed out before the store's clock passes the other's: whichever is
    // read first is below every token a later acquisition takes.
    const nextToken = await next?.fencingToken()
    expect(time.now).toBeGreaterThan(nextToken ?? Number.POSITIVE_INFINITY)
    const later = lock('later')
    await next?.release()
    const third = await leaseOf(later.tryAcquire())
    expect(await third?.fencingToken()).toBeGreaterThan(Math.max(nextToken ?? 0, written))
  })

  it('recreates a deleted object above the highest token it read, though it never wrote that one', async () => {
    const { time, store, lock, put, token } = setup()
    const ahead = time.now + 9_000 // ahead of the clock, within what reset accepts
    put({ token: ahead, expires_at: (time.now + 3_600_000) / 1000, owner: 'other' })
    const a = lock('a')
    expect(await a.tryAcquire()).toMatchObject({ status: 'held', holder: { token: ahead } })
    store.delete(KEY) // an outside delete or a restore from an old backup
    expect((await leaseOf(a.tryAcquire()))?.record.token).toBe(ahead + 1)
    expect(token()).toBe(ahead + 1)
  })

  it('refuses to recreate a deleted object after reading a token far ahead of the clock, rather than undercut it', async () => {
    const { time, store, lock, put } = setup()
    const ahead = time.now + 3_600_000
    put({ token: ahead, expires_at: (time.now + 3_600_000) / 1000, owner: 'other' })
    const a = lock('a')
    expect(await a.tryAcquire()).toMatchObject({ status: 'held', holder: { token: ahead } })
    store.delete(KEY)
    await expect(leaseOf(a.tryAcquire())).rejects.toMatchObject({ reason: 'record-ahead-of-clock' })
    expect(store.peek(KEY)).toBeUndefined()
  })

  it('refuses to reset at or below the token its own force-release wrote, even with the object gone', async () => {
    const { store, lock, operator } = setup()
    const stuck = await leaseOf(lock('stuck').tryAcquire())
    const ops = operator('ops')
    const released = await ops.forceRelease()
    expect(released?.token).toBeGreaterThan(stuck?.record.token ?? Number.POSITIVE_INFINITY)
    store.delete(KEY)
    const refused = await ops.reset({ token: released?.token ?? 0 }).catch((e: unknown) => e)
    expect(refused).toMatchObject({ reason: 'token-too-low', key: KEY })
    expect(store.peek(KEY)).toBeUndefined()
  })

  it('force-releases above the highest token it read, after an outside write turned the record back', async () => {
    const { time, put, token, operator } = setup()
    const ahead = time.now + 5_000
    put({ token: ahead, expires_at: (time.now + 60_000) / 1000, owner: 'stuck' })
    const ops = operator('ops')
    expect(await ops.inspect()).toMatchObject({ held: true, token: ahead })
    put({ token: 1, expires_at: (time.now + 60_000) / 1000, owner: 'stuck' })
    expect((await ops.forceRelease())?.token).toBe(ahead + 1)
    expect(token()).toBe(ahead + 1)
  })

  it('a contender that read a reset recreates a deleted object above it', async () => {
    const { time, store, lock, operator } = setup()
    const floor = time.now + 5_000 // ahead of the clock, within what reset accepts
    await operator('ops').reset({ token: floor })
    const a = lock('a')
    const first = await leaseOf(a.tryAcquire())
    await first?.release()
    store.delete(KEY)
    // Above what it read and wrote, and no further than the clock has gone meanwhile: the blind
    // write over its release found the object gone, and its create took the clock's time.
    const token = (await leaseOf(a.tryAcquire()))?.record.token ?? 0
    expect(token).toBeGreaterThan(first?.record.token ?? Number.POSITIVE_INFINITY)
    expect(token).toBeLessThan(floor + 1_000)
  })

  it('refuses to reset to a token more than 10 s ahead of the store clock, and writes nothing', async () => {
    const { time, store, operator } = setup()
    const refused = await operator('ops')
      .reset({ token: time.now + 11_000 + 1_000 })
      .catch((e: unknown) => e)
    expect(refused).toBeInstanceOf(LockConflictError)
    expect(refused).toMatchObject({ reason: 'token-ahead-of-clock', key: KEY })
    expect(store.peek(KEY)).toBeUndefined()
  })

  it('refuses to reset to a token it has already seen, even with the object gone, and writes nothing', async () => {
    const { store, lock, put, operator } = setup()
    put({ token: 4 })
    const lease = await leaseOf(lock('a').tryAcquire())
    await lease?.release()
    const ops = operator('ops')
    const seen = (await ops.inspect())?.token ?? 0
    expect(seen).toBe(lease?.record.token)
    store.delete(KEY)
    const refused = await ops.reset({ token: seen }).catch((e: unknown) => e)
    expect(refused).toBeInstanceOf(LockConflictError)
    expect(refused).toMatchObject({ reason: 'token-too-low', key: KEY })
    expect(store.peek(KEY)).toBeUndefined()
    expect(await ops.reset({ token: seen + 1 })).toMatchObject({ token: seen + 1, expires_at: 0 })
  })

  it('refuses token 0, the floor of a lock that has seen nothing, as too low rather than as malformed', async () => {
    const { operator } = setup()
    await expect(operator('ops').reset({ token: 0 })).rejects.toMatchObject({
      name: 'LockConflictError',
      reason: 'token-too-low',
    })
  })

  it("hands out a short lease at once with its whole ttl, written once; the token's wait comes out of it only for a holder that fences", async () => {
    const { time, store } = setup()
    const lock = new Lock({
      store,
      key: KEY,
      owner: 'short',
      ttlMs: 2_000,
      clockSkewMarginMs: 500,
      clock: time.localClock(),
    })
    const lease = await leaseOf(lock.tryAcquire())
    expect(store.requests).toMatchObject({ create: 1, replace: 0, probe: 0 })
    // ttl - margin: the record's ttl counts from the token, the latest the store's clock may read.
    expect(lease?.remainingMs).toBeGreaterThan(2_000 - 500 - 50)
    const before = lease?.remainingMs ?? 0
    await lease?.fencingToken()
    // Its one dated answer came as the store's second began: the wait is that second, and the
    // probes sent during it found the turn within a few ms. The lease still has time.
    expect(store.requests.probe).toBeGreaterThan(0)
    expect(before - (lease?.remainingMs ?? 0)).toBeLessThan(1_000 + 50)
    expect(lease?.remainingMs).toBeGreaterThan(2_000 - 500 - 1_000 - 50)
  })
})
