import { describe, expect, it } from 'vitest'
import { serverClockOf } from '../../lib/core/server-clock.js'
import type { LockStore } from '../../lib/extend.js'
import {
  Lock,
  LockConflictError,
  LockCorruptedError,
  LockLostError,
  LockOptionsError,
  LockStoreError,
  LockTimeoutError,
  LostReason,
} from '../../lib/index.js'
import { MemoryLockStore } from '../../lib/memory/index.js'
import { leaseOf } from '../support/lease-of.js'
import { operatorFor } from '../support/operator-for.js'
import { SimTime } from '../support/sim-clock.js'

function setup(options: { ttlMs?: number; margin?: number } = {}) {
  const time = new SimTime()
  const store = new MemoryLockStore({ clock: time.serverClock, clockResolutionMs: 1_000 })
  const contender = (owner: string, offsetMs = 0) =>
    new Lock({
      store,
      key: 'jobs/nightly',
      owner,
      ttlMs: options.ttlMs ?? 10_000,
      clockSkewMarginMs: options.margin ?? 1_000,
      clock: time.localClock(offsetMs),
      random: () => 0.5,
    })
  const record = () => JSON.parse(store.peek('jobs/nightly') ?? 'null')
  return { time, store, contender, record }
}

describe('Lock (protocol core, in-memory store)', () => {
  it("creates the record, run 1, with a token at or above the store's time, when no object exists", async () => {
    const { time, contender, record } = setup()
    const asked = time.now
    const lease = await leaseOf(contender('a').tryAcquire())
    expect(lease?.record.token).toBeGreaterThanOrEqual(asked)
    expect(record()).toMatchObject({ v: 1, token: lease?.record.token, run: 1, owner: 'a', ttl_ms: 10_000 })
    // The lease is handed out as the write lands; its token only once the store's clock has passed it.
    expect(time.now).toBeLessThanOrEqual(lease?.record.token ?? 0)
    expect(await lease?.fencingToken()).toBe(lease?.record.token)
    expect(time.now).toBeGreaterThan(lease?.record.token ?? Number.POSITIVE_INFINITY)
    expect(record().expires_at).toBeGreaterThan(0)
  })

  it('answers null while another owner holds the lock, and attempt() tells who holds it', async () => {
    const { contender } = setup()
    const lease = await leaseOf(contender('a').tryAcquire())
    const b = contender('b')
    expect(await leaseOf(b.tryAcquire())).toBeNull()
    expect(await b.tryAcquire()).toMatchObject({
      status: 'held',
      holder: { owner: 'a', token: lease?.record.token },
    })
  })

  it('release zeroes expires_at, keeps the token, and the next acquisition gets a higher token', async () => {
    const { contender, record } = setup()
    const lease = await leaseOf(contender('a').tryAcquire())
    await lease?.release()
    expect(record()).toMatchObject({ token: lease?.record.token, run: 1, expires_at: 0 })
    const next = await leaseOf(contender('b').tryAcquire())
    expect(next?.record.token).toBeGreaterThan(lease?.record.token ?? Number.POSITIVE_INFINITY)
    expect(record()).toMatchObject({ token: next?.record.token, run: 2 })
  })

  it('re-acquires after its own release with a single conditional write and no read', async () => {
    const { contender, store } = setup()
    const a = contender('a')
    const first = await leaseOf(a.tryAcquire())
    await first?.release()
    const before = { ...store.requests }
    const lease = await leaseOf(a.tryAcquire())
    expect(lease?.record.token).toBeGreaterThan(first?.record.token ?? Number.POSITIVE_INFINITY)
    expect(lease?.record.run).toBe(2)
    expect(store.requests.read - before.read).toBe(0)
    expect(store.requests.replace - before.replace).toBe(1)
  })

  it('never takes a lease it holds for another owner from its cache (concurrent invocations in one process)', async () => {
    const { contender } = setup()
    const shared = contender('process')
    const first = await leaseOf(shared.tryAcquire({ owner: 'fn/request-1' }))
    expect(first?.record).toMatchObject({ owner: 'fn/request-1', run: 1 })
    expect(await leaseOf(shared.tryAcquire({ owner: 'fn/request-2' }))).toBeNull()
  })

  it('falls back to read + write when someone wrote since its cached write', async () => {
    const { contender, store } = setup()
    const a = contender('a')
    await (await leaseOf(a.tryAcquire()))?.release()
    const b = await leaseOf(contender('b').tryAcquire())
    await b?.release()
    const before = { ...store.requests }
    const lease = await leaseOf(a.tryAcquire())
    expect(lease?.record.token).toBeGreaterThan(b?.record.token ?? Number.POSITIVE_INFINITY)
    expect(lease?.record.run).toBe(3)
    expect(store.requests.read - before.read).toBe(1)
    expect(store.requests.replace - before.replace).toBe(2) // the stale blind try, then the real one
  })

  it('does not take an expired lease before the clock-skew margin has passed', async () => {
    const { time, contender, record } = setup({ ttlMs: 10_000, margin: 1_000 })
    const lease = await leaseOf(contender('a').tryAcquire())
    time.advance(record().expires_at * 1000 - time.now) // the record's expires_at, give or take the Date resolution
    expect(await leaseOf(contender('b').tryAcquire())).toBeNull()
    time.advance(3_000)
    expect((await leaseOf(contender('b').tryAcquire()))?.record.token).toBeGreaterThan(
      lease?.record.token ?? Number.POSITIVE_INFINITY,
    )
  })

  it('judges expiry by the store clock, not by a contender whose clock runs an hour ahead', async () => {
    const { contender } = setup()
    await leaseOf(contender('a').tryAcquire())
    expect(await leaseOf(contender('fast', 3_600_000).tryAcquire())).toBeNull()
  })

  it("hands its lease out as its write lands, with its whole ttl counted from the token (the latest the store's clock may read), and ends it the margin before the record's expiry", async () => {
    const { time, contender, record } = setup({ ttlMs: 10_000, margin: 1_000 })
    const asked = time.now
    const lease = await leaseOf(contender('a').tryAcquire())
    // The record's lease runs for ttl once the store's clock passes the token, so a holder that
    // waits for its token still has its whole ttl: nothing of it is lost to that wait.
    expect(record().expires_at * 1000).toBe((lease?.record.token ?? 0) + 10_000)
    expect(lease?.record.token).toBeGreaterThanOrEqual(asked)
    expect(lease?.remainingMs).toBeGreaterThan(10_000 - 1_000 - 50)
    // By the store's clock (here: the simulation's), the holder is done by expires_at - margin.
    expect(time.now + (lease?.remainingMs ?? 0)).toBeLessThanOrEqual(record().expires_at * 1000 - 1_000)
  })

  it('takes over a held lease at once, with a higher token, when the owner is its own (a retried invocation)', async () => {
    const { contender } = setup()
    const crashed = await leaseOf(contender('fn/request-1').tryAcquire())
    const retry = await leaseOf(contender('fn/request-1').tryAcquire())
    expect(retry?.record.token).toBeGreaterThan(crashed?.record.token ?? Number.POSITIVE_INFINITY)
    expect(retry?.record.run).toBe(2)
    await expect(crashed?.renew()).rejects.toBeInstanceOf(LockLostError)
  })

  it('reports an unsettled ambiguous write as a retryable failure, not as a lost race', async () => {
    const time = new SimTime()
    const inner = new MemoryLockStore({ clock: time.serverClock, clockResolutionMs: 1_000 })
    let reads = 0
    const store: LockStore = {
      clockResolutionMs: 1_000,
      // The first read works; every later one (the read-back after a failed write) fails.
      read: async (key) => {
        if (++reads > 1) throw new LockStoreError('injected read failure', { retryable: true })
        return inner.read(key)
      },
      create: async (key, body) => {
        const result = await inner.create(key, body)
        if (result.status === 'written')
          throw new LockStoreError('answer lost after the write', { retryable: true })
        return result
      },
      replace: (key, body, etag) => inner.replace(key, body, etag),
    }
    const lock = new Lock({ store, key: 'k', owner: 'a', clock: time.localClock(), random: () => 0 })
    const asked = time.now
    const error = await leaseOf(lock.tryAcquire()).catch((e: unknown) => e)
    expect(error).toMatchObject({ name: 'LockStoreError', retryable: true })
    expect(JSON.parse(inner.peek('k') ?? '{}')).toMatchObject({ owner: 'a', run: 1 }) // it had landed
    expect(JSON.parse(inner.peek('k') ?? '{}').token).toBeGreaterThanOrEqual(asked)
  })

  it('does not take over a live lease it handed out itself, even for the same owner', async () => {
    const { contender } = setup()
    const lock = contender('worker')
    const first = await leaseOf(lock.tryAcquire())
    expect(await lock.tryAcquire()).toMatchObject({ status: 'held', holder: { token: first?.record.token } })
    await first?.release()
    expect((await leaseOf(lock.tryAcquire()))?.record.token).toBeGreaterThan(
      first?.record.token ?? Number.POSITIVE_INFINITY,
    )
  })

  it('refuses an owner that can never fit, before any request', async () => {
    const { contender, store } = setup()
    const error = await leaseOf(contender('a').tryAcquire({ owner: 'x'.repeat(70_000) })).catch(
      (e: unknown) => e,
    )
    expect(error).toBeInstanceOf(LockOptionsError)
    expect(store.requests.read).toBe(0)
  })

  it('refuses, with a conflict, to write a record that would grow too large to read back', async () => {
    const { contender, store } = setup()
    const near = { v: 1, token: 3, expires_at: 0, owner: 'old', notes: 'n'.repeat(65_470) }
    store.putRaw('jobs/nightly', JSON.stringify(near))
    const before = store.peek('jobs/nightly')
    const error = await leaseOf(contender('a-rather-long-owner-name').tryAcquire()).catch((e: unknown) => e)
    expect(error).toBeInstanceOf(LockConflictError)
    expect(error).toMatchObject({ reason: 'record-too-large' })
    expect(store.peek('jobs/nightly')).toBe(before)
  })

  it('renews with the same token and a later expiry', async () => {
    const { time, store, contender, record } = setup()
    const asked = time.now
    const lock = contender('a')
    const lease = await leaseOf(lock.tryAcquire())
    await lease?.fencingToken() // its wait narrows the estimate of the store's clock with probes
    const first = record().expires_at
    time.advance(asked + 5_000 - time.now) // 5 s after the answer that dated the store's clock
    // How far its guess of the store's clock may be off (narrowed while it waited for its
    // token, loosened by 5 s of possible drift since).
    const halfWidth = serverClockOf(store, lock.clock).at()?.halfWidth ?? Number.NaN
    expect(halfWidth).toBeLessThan(50)
    await lease?.renew()
    expect(record()).toMatchObject({ token: lease?.record.token, run: 1 })
    expect(record().expires_at).toBeGreaterThan(first)
    // ttl - margin - that half-width (to the ms, rounded down).
    expect(lease?.remainingMs).toBeLessThanOrEqual(10_000 - 1_000 - halfWidth)
    expect(lease?.remainingMs).toBeGreaterThan(10_000 - 1_000 - halfWidth - 1)
    expect(time.now + (lease?.remainingMs ?? 0)).toBeLessThanOrEqual(record().expires_at * 1000 - 1_000)
  })

  it('refuses a renew after a takeover, fires the signal, and leaves the new holder untouched', async () => {
    const { contender, record } = setup()
    const lease = await leaseOf(contender('a').tryAcquire())
    const thief = await operatorFor(contender('operator')).forceRelease()
    const taken = JSON.stringify(record())
    const error = await lease?.renew().catch((e: unknown) => e)
    expect(error).toBeInstanceOf(LockLostError)
    expect(error).toMatchObject({
      reason: LostReason.ReleasedByOperator,
      token: lease?.record.token,
      current: { token: thief?.token, owner: 'force-released by operator' },
    })
    expect(lease?.signal.aborted).toBe(true)
    expect(lease?.signal.reason).toBe(error)
    expect(JSON.stringify(record())).toBe(taken)
    expect(thief?.token).toBeGreaterThan(lease?.record.token ?? Number.POSITIVE_INFINITY)
  })

  it('refuses a stale release and writes nothing', async () => {
    const { time, contender, store } = setup()
    const lease = await leaseOf(contender('a').tryAcquire())
    time.advance(20_000) // its own end passed first: it knows it expired
    await leaseOf(contender('b').tryAcquire())
    const taken = store.peek('jobs/nightly')
    await expect(lease?.release()).rejects.toMatchObject({ name: 'LockLostError', reason: 'expired' })
    expect(store.peek('jobs/nightly')).toBe(taken)
  })

  it('frees the record of a lease that ran out unrenewed when nobody wrote since, still reporting it lost', async () => {
    const { time, contender, record } = setup()
    const lease = await leaseOf(contender('a').tryAcquire())
    time.advance((lease?.remainingMs ?? 0) + 1) // past its own end, before anyone could take over (1 s margin)
    expect(lease?.signal.reason).toMatchObject({ reason: 'expired' })
    await expect(lease?.release({ fields: { last_run: 'tick' } })).rejects.toMatchObject({
      reason: 'expired',
    })
    expect(record()).toMatchObject({ token: lease?.record.token, expires_at: 0 })
    expect(record().last_run).toBeUndefined() // the run is not known to have completed
    const next = await leaseOf(contender('b').tryAcquire())
    expect(next?.record.token).toBeGreaterThan(lease?.record.token ?? Number.POSITIVE_INFINITY)
    expect(next?.record.run).toBe(2)
  })

  it('treats a second release as a no-op and a renew after release as an error', async () => {
    const { contender } = setup()
    const lease = await leaseOf(contender('a').tryAcquire())
    await lease?.release()
    await expect(lease?.release()).resolves.toBeUndefined()
    await expect(lease?.renew()).rejects.toMatchObject({ reason: LostReason.Released })
  })

  it('reports a deleted lock object as lost, and recreates it above the highest token it saw', async () => {
    const { contender, store } = setup()
    const a = contender('a')
    const lease = await leaseOf(a.tryAcquire())
    store.delete('jobs/nightly')
    await expect(lease?.renew()).rejects.toMatchObject({ reason: LostReason.Deleted })
    expect((await leaseOf(a.tryAcquire()))?.record.token).toBeGreaterThan(
      lease?.record.token ?? Number.POSITIVE_INFINITY,
    )
  })

  it('keeps unknown fields, the checkpoint and last_run across acquisitions', async () => {
    const { contender, store, record } = setup()
    store.putRaw(
      'jobs/nightly',
      JSON.stringify({ v: 1, token: 7, expires_at: 0, owner: 'x', future_field: [1] }),
    )
    const lease = await leaseOf(contender('a').tryAcquire())
    await lease?.saveCheckpoint({ cursor: 42 })
    await lease?.release({ fields: { last_run: '2026-11-21T03:00:00Z' } })
    expect(lease?.record.token).toBeGreaterThan(7)
    expect(lease?.record.run).toBe(1) // the record had no run count yet
    const next = await leaseOf(contender('b').tryAcquire())
    expect(next?.record.token).toBeGreaterThan(lease?.record.token ?? Number.POSITIVE_INFINITY)
    expect(next?.record.run).toBe(2)
    expect(next?.record.state).toEqual({ cursor: 42 })
    expect(record()).toMatchObject({
      future_field: [1],
      last_run: '2026-11-21T03:00:00Z',
      state: { cursor: 42 },
    })
  })

  it('refuses a checkpoint larger than the limit, writing nothing', async () => {
    const { contender, store } = setup()
    const lease = await leaseOf(contender('a').tryAcquire())
    const before = store.peek('jobs/nightly')
    await expect(lease?.saveCheckpoint('x'.repeat(70_000))).rejects.toBeInstanceOf(LockOptionsError)
    expect(store.peek('jobs/nightly')).toBe(before)
  })

  it('writes nothing, and answers skipped with the record, when skipIf matches it', async () => {
    const { contender, store } = setup()
    const a = contender('a')
    const lease = await leaseOf(a.tryAcquire())
    await lease?.release({ fields: { last_run: 'tick-1' } })
    const b = contender('b')
    const writes = store.requests.create + store.requests.replace
    expect(await leaseOf(b.tryAcquire({ skipIf: (record) => record.last_run === 'tick-1' }))).toBeNull()
    expect(
      await b.tryAcquire({ waitMs: 5_000, skipIf: (record) => record.last_run === 'tick-1' }),
    ).toMatchObject({ status: 'skipped', record: { last_run: 'tick-1', token: lease?.record.token } })
    expect(store.requests.create + store.requests.replace).toBe(writes)
  })

  it('inspects without writing', async () => {
    const { contender, store } = setup()
    const a = contender('a')
    expect(await operatorFor(a).inspect()).toBeNull()
    const lease = await leaseOf(a.tryAcquire())
    const writes = store.requests.create + store.requests.replace
    expect(await operatorFor(contender('b')).inspect()).toMatchObject({
      token: lease?.record.token,
      run: 1,
      owner: 'a',
      held: true,
    })
    expect(store.requests.create + store.requests.replace).toBe(writes)
  })

  describe('acquire with a wait', () => {
    it('gets the lock once the holder releases it', async () => {
      const { contender, store, time } = setup({ ttlMs: 600_000 })
      const holder = await leaseOf(contender('a').tryAcquire())
      time.localClock().schedule(3_000, () => void holder?.release())
      const reads = store.requests.read
      const lease = await contender('b').acquire({ waitMs: 30_000 })
      expect(lease.record.token).toBeGreaterThan(holder?.record.token ?? Number.POSITIVE_INFINITY)
      expect(lease.record.run).toBe(2)
      expect(store.requests.read - reads).toBeGreaterThan(1) // it tried while held, then got it
    })

    it('rejects LockTimeoutError naming the holder when the wait runs out', async () => {
      const { contender } = setup({ ttlMs: 600_000 })
      await leaseOf(contender('a').tryAcquire())
      const error = await contender('b')
        .acquire({ waitMs: 5_000 })
        .catch((e: unknown) => e)
      expect(error).toBeInstanceOf(LockTimeoutError)
      expect(error).toMatchObject({ holder: { owner: 'a' } })
      expect((error as LockTimeoutError).waitedMs).toBeGreaterThanOrEqual(5_000)
    })

    it('stops waiting when its signal aborts', async () => {
      const { contender } = setup({ ttlMs: 600_000 })
      await leaseOf(contender('a').tryAcquire())
      const controller = new AbortController()
      controller.abort(new Error('shutting down'))
      await expect(contender('b').acquire({ waitMs: 5_000, signal: controller.signal })).rejects.toThrow(
        'shutting down',
      )
    })
  })

  describe('corrupted lock objects', () => {
    const cases: [string, string][] = [
      ['not JSON', '{"token": 1'],
      ['a JSON array', '[1,2]'],
      ['an unknown version', JSON.stringify({ v: 3, token: 1, expires_at: 0, owner: 'a' })],
      ['a negative token', JSON.stringify({ v: 1, token: -1, expires_at: 0, owner: 'a' })],
      ['a fractional token', JSON.stringify({ v: 1, token: 1.5, expires_at: 0, owner: 'a' })],
      ['an unsafe token', JSON.stringify({ v: 1, token: 2 ** 53, expires_at: 0, owner: 'a' })],
      ['a string token', JSON.stringify({ v: 1, token: '1', expires_at: 0, owner: 'a' })],
      ['a missing expires_at', JSON.stringify({ v: 1, token: 1, owner: 'a' })],
      ['a missing owner', JSON.stringify({ v: 1, token: 1, expires_at: 0 })],
      ['a wrong last_run', JSON.stringify({ v: 1, token: 1, expires_at: 0, owner: 'a', last_run: 5 })],
      [
        'more than 64 KiB',
        JSON.stringify({ v: 1, token: 1, expires_at: 0, owner: 'a', pad: 'x'.repeat(70_000) }),
      ],
      ['an empty body', ''],
    ]
    it.each(cases)('refuses %s with LockCorruptedError and writes nothing', async (_, body) => {
      const { contender, store } = setup()
      store.putRaw('jobs/nightly', body)
      const writes = store.requests.create + store.requests.replace
      const error = await leaseOf(contender('a').tryAcquire()).catch((e: unknown) => e)
      expect(error).toBeInstanceOf(LockCorruptedError)
      expect((error as LockCorruptedError).raw).toBe(body.slice(0, 64 * 1024))
      expect(store.peek('jobs/nightly')).toBe(body)
      expect(store.requests.create + store.requests.replace).toBe(writes)
    })

    it('lets an operator reset a corrupted lock with an explicit token', async () => {
      const { contender, store } = setup()
      store.putRaw('jobs/nightly', 'garbage')
      const operator = operatorFor(contender('operator'))
      await operator.reset({ token: 100, force: true })
      const lease = await leaseOf(contender('a').tryAcquire())
      expect(lease?.record.token).toBeGreaterThan(100)
      expect(lease?.record.run).toBe(1) // a reset record counts no runs
    })

    it('lets an operator force-release a held lock, raising the token to fence off the holder', async () => {
      const { contender, record } = setup({ ttlMs: 600_000 })
      const stuck = await leaseOf(contender('a').tryAcquire())
      const freed = await operatorFor(contender('op')).forceRelease()
      expect(freed).toMatchObject({ expires_at: 0 })
      expect(freed?.token).toBeGreaterThan(stuck?.record.token ?? Number.POSITIVE_INFINITY)
      expect(record()).toMatchObject({ token: freed?.token, expires_at: 0 })
      await expect(stuck?.renew()).rejects.toMatchObject({ reason: 'released-by-operator' })
      expect((await leaseOf(contender('b').tryAcquire()))?.record.token).toBeGreaterThan(
        freed?.token ?? Number.POSITIVE_INFINITY,
      )
      expect(await operatorFor(setup().contender('op')).forceRelease()).toBeNull()
    })

    it('never resets below a token found in a corrupted object', async () => {
      const { contender, store } = setup()
      store.putRaw('jobs/nightly', JSON.stringify({ v: 3, token: 100, expires_at: 0, owner: 'future' }))
      await expect(operatorFor(contender('op')).reset({ token: 50 })).rejects.toThrow(/above the token 100/)
      await operatorFor(contender('op')).reset({ token: 101 })
    })

    it('refuses to reset a held lock or to lower its token', async () => {
      const { contender } = setup()
      const lease = await leaseOf(contender('a').tryAcquire())
      const above = (lease?.record.token ?? 0) + 1
      await expect(operatorFor(contender('op')).reset({ token: above })).rejects.toThrow(/not released/)
      await lease?.release()
      await expect(operatorFor(contender('op')).reset({ token: lease?.record.token ?? 0 })).rejects.toThrow(
        /above the current token/,
      )
    })
  })

  describe('options', () => {
    const store = new MemoryLockStore()
    it.each([
      ['an empty key', { key: '' }],
      ['a zero ttl', { key: 'k', ttlMs: 0 }],
      ['an infinite ttl', { key: 'k', ttlMs: Number.POSITIVE_INFINITY }],
      ['a negative margin', { key: 'k', clockSkewMarginMs: -1 }],
      ['a margin as long as the ttl', { key: 'k', ttlMs: 1_000, clockSkewMarginMs: 1_000 }],
      ['an absurd margin', { key: 'k', ttlMs: 3_600_000, clockSkewMarginMs: 3_000_000 }],
      ['an empty owner', { key: 'k', owner: '' }],
      ['zero retry attempts', { key: 'k', retry: { attempts: 0 } }],
    ])('refuses %s at construction', (_, options) => {
      expect(() => new Lock({ store, ...options })).toThrow(LockOptionsError)
    })

    it('refuses a per-call ttl not above the margin', async () => {
      const lock = new Lock({ store, key: 'k', clockSkewMarginMs: 1_000 })
      await expect(leaseOf(lock.tryAcquire({ ttlMs: 500 }))).rejects.toBeInstanceOf(LockOptionsError)
    })
  })
})
