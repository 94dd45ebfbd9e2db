import { describe, expect, it } from 'vitest'
import { Lock, LockConflictError, LockOptionsError } from '../../lib/index.js'
import { leaseOf } from '../support/lease-of.js'
import { operatorFor } from '../support/operator-for.js'
import { ScriptedStore } from '../support/scripted-store.js'
import { SimTime } from '../support/sim-clock.js'

const KEY = 'jobs/operated'

function setup() {
  const time = new SimTime()
  const store = new ScriptedStore({ clock: time.serverClock })
  const lock = (owner: string) =>
    new Lock({
      store,
      key: KEY,
      owner,
      ttlMs: 600_000,
      clockSkewMarginMs: 1_000,
      clock: time.localClock(),
      random: () => 0.5,
    })
  const put = (body: Record<string, unknown> | string) =>
    store.memory.putRaw(KEY, typeof body === 'string' ? body : JSON.stringify({ v: 1, owner: 'x', ...body }))
  const record = () => JSON.parse(store.memory.peek(KEY) ?? 'null')
  /** Another process's write, landing between the operator's read and its write. */
  const meanwhile = (body: Record<string, unknown>) => () => {
    put(body)
    return undefined
  }
  return { time, store, lock, put, record, meanwhile }
}

describe('forceRelease', () => {
  it('frees a held lock with a higher token, naming the operator, and keeps the rest of the record', async () => {
    const { lock, record } = setup()
    const stuck = await leaseOf(lock('stuck').tryAcquire())
    await stuck?.saveCheckpoint({ cursor: 3 })
    const freed = await operatorFor(lock('ops')).forceRelease()
    expect(freed).toMatchObject({ expires_at: 0 })
    expect(freed?.token).toBeGreaterThan(stuck?.record.token ?? Number.POSITIVE_INFINITY)
    expect(record()).toMatchObject({
      token: freed?.token,
      run: 1, // the stuck run: a force-release counts none
      expires_at: 0,
      owner: 'force-released by ops',
      state: { cursor: 3 },
    })
  })

  it('refuses, writing nothing of its own, when the lock changed between its read and its write', async () => {
    const { store, lock, record, meanwhile } = setup()
    await leaseOf(lock('stuck').tryAcquire())
    store.script('replace', meanwhile({ token: 2, expires_at: 4_000_000_000, owner: 'new holder' }))
    const error = await operatorFor(lock('ops'))
      .forceRelease()
      .catch((e: unknown) => e)
    expect(error).toBeInstanceOf(LockConflictError)
    expect(error).toMatchObject({ reason: 'changed', key: KEY })
    expect(String(error)).toMatch(
      /the lock changed while being released \(precondition-failed\); nothing was written/,
    )
    expect(record()).toMatchObject({ token: 2, owner: 'new holder' })
  })

  it('refuses too when a write in flight (409) turns out to be another lease taking the lock', async () => {
    const { store, lock, record, put } = setup()
    await leaseOf(lock('stuck').tryAcquire())
    store.script('replace', () => {
      put({ token: 2, expires_at: 4_000_000_000, owner: 'new holder' })
      return 'conflict'
    })
    const error = await operatorFor(lock('ops'))
      .forceRelease()
      .catch((e: unknown) => e)
    expect(error).toMatchObject({ name: 'LockConflictError', reason: 'changed' })
    expect(String(error)).toMatch(/while being released \(conflict\)/)
    expect(record()).toMatchObject({ token: 2, owner: 'new holder' })
    expect(store.count('replace')).toBe(1)
  })

  describe('of the lease it judged (`lease`, as the CLI)', () => {
    it('ends that lease though it renewed since it was judged, naming it in ended_by', async () => {
      const { lock, record } = setup()
      const stuck = await leaseOf(lock('stuck').tryAcquire())
      const judged = await operatorFor(lock('ops')).inspect()
      await stuck?.renew()
      const freed = await operatorFor(lock('ops')).forceRelease({ lease: judged ?? undefined })
      expect(freed?.token).toBeGreaterThan(stuck?.record.token ?? Number.POSITIVE_INFINITY)
      expect(record()).toMatchObject({
        token: freed?.token,
        expires_at: 0,
        ended_by: { token: stuck?.record.token, owner: 'stuck', by: 'ops', action: 'force-release' },
      })
    })

    it('ends that lease when it renews between the read and the write', async () => {
      const { store, lock, record } = setup()
      const stuck = await leaseOf(lock('stuck').tryAcquire())
      const judged = await operatorFor(lock('ops')).inspect()
      store.script('replace', async () => {
        await stuck?.renew()
        return undefined
      })
      const freed = await operatorFor(lock('ops')).forceRelease({ lease: judged ?? undefined })
      expect(record()).toMatchObject({ token: freed?.token, ended_by: { token: stuck?.record.token } })
    })

    it('refuses, writing nothing, when another lease took the lock since it was judged', async () => {
      const { lock, record } = setup()
      const stuck = await leaseOf(lock('stuck').tryAcquire())
      const judged = await operatorFor(lock('ops')).inspect()
      await stuck?.release()
      const next = await leaseOf(lock('next').tryAcquire())
      const error = await operatorFor(lock('ops'))
        .forceRelease({ lease: judged ?? undefined })
        .catch((e: unknown) => e)
      expect(error).toBeInstanceOf(LockConflictError)
      expect(error).toMatchObject({ reason: 'changed', key: KEY })
      expect(String(error)).toMatch(
        /the lease it judged \(token \d+ of stuck\) is over: next holds token \d+ now/,
      )
      expect(record()).toMatchObject({ token: next?.record.token, owner: 'next' })
    })

    it('refuses, writing nothing, when that lease was released since it was judged', async () => {
      const { lock, record } = setup()
      const stuck = await leaseOf(lock('stuck').tryAcquire())
      const judged = await operatorFor(lock('ops')).inspect()
      await stuck?.release()
      const released = record()
      const error = await operatorFor(lock('ops'))
        .forceRelease({ lease: judged ?? undefined })
        .catch((e: unknown) => e)
      expect(error).toMatchObject({ name: 'LockConflictError', reason: 'changed' })
      expect(String(error)).toMatch(/the lease it judged \(token \d+ of stuck\) was released since/)
      expect(record()).toEqual(released)
    })

    it('refuses when another lease takes the lock between its read and its write', async () => {
      const { store, lock, record, meanwhile } = setup()
      const stuck = await leaseOf(lock('stuck').tryAcquire())
      const judged = await operatorFor(lock('ops')).inspect()
      store.script('replace', meanwhile({ token: 2, expires_at: 4_000_000_000, owner: 'new holder' }))
      const error = await operatorFor(lock('ops'))
        .forceRelease({ lease: judged ?? undefined })
        .catch((e: unknown) => e)
      expect(error).toMatchObject({ name: 'LockConflictError', reason: 'changed' })
      expect(record()).toMatchObject({ token: 2, owner: 'new holder' })
      expect(stuck?.record.token).not.toBe(2)
    })

    it('takes a refusal of a version that is still there as final, not as a change to write over again', async () => {
      const { store, lock } = setup()
      await leaseOf(lock('stuck').tryAcquire())
      const judged = await operatorFor(lock('ops')).inspect()
      store.script('replace', 'precondition-failed', 'precondition-failed')
      const error = await operatorFor(lock('ops'))
        .forceRelease({ lease: judged ?? undefined })
        .catch((e: unknown) => e)
      expect(error).toMatchObject({ name: 'LockConflictError', reason: 'changed' })
      expect(store.count('replace')).toBe(1)
    })

    it.each([
      ['the same owner took it again (a new token)', { sameToken: false, owner: 'stuck' }],
      ['another owner holds it under the same token', { sameToken: true, owner: 'impostor' }],
    ])('refuses when %s, writing nothing', async (_, shape) => {
      const { lock, record, put } = setup()
      const stuck = await leaseOf(lock('stuck').tryAcquire())
      const judged = await operatorFor(lock('ops')).inspect()
      const token = shape.sameToken ? stuck?.record.token : (stuck?.record.token ?? 0) + 1_000
      put({ token, expires_at: 4_000_000_000, owner: shape.owner })
      const before = record()
      const error = await operatorFor(lock('ops'))
        .forceRelease({ lease: judged ?? undefined })
        .catch((e: unknown) => e)
      expect(error).toMatchObject({ name: 'LockConflictError', reason: 'changed' })
      expect(String(error)).toMatch(new RegExp(`is over: ${shape.owner} holds token ${token} now`))
      expect(record()).toEqual(before)
    })

    it('resolves null when the object is deleted between its read and its write', async () => {
      const { store, lock } = setup()
      await leaseOf(lock('stuck').tryAcquire())
      const judged = await operatorFor(lock('ops')).inspect()
      store.script('replace', (memory) => {
        memory.delete(KEY)
        return undefined
      })
      expect(await operatorFor(lock('ops')).forceRelease({ lease: judged ?? undefined })).toBeNull()
    })

    it('passes a store failure on as it is, reading nothing more', async () => {
      const { store, lock } = setup()
      await leaseOf(lock('stuck').tryAcquire())
      const judged = await operatorFor(lock('ops')).inspect()
      const reads = store.count('read')
      store.script('replace', 'fatal')
      const error = await operatorFor(lock('ops'))
        .forceRelease({ lease: judged ?? undefined })
        .catch((e: unknown) => e)
      expect(error).toMatchObject({ name: 'LockStoreError', retryable: false })
      expect(store.count('read') - reads).toBe(1) // its own look, no second
    })

    it('gives up, writing nothing, when the lease renews under every write until its budget is spent', async () => {
      const { store, lock, time, record, put } = setup()
      const stuck = await leaseOf(lock('stuck').tryAcquire())
      const judged = await operatorFor(lock('ops')).inspect()
      // The holder's renewal, as it lands: the same lease, a later expiry, a new version.
      const renewal = () => {
        time.advance(3_000)
        const { v, ...renewed } = record()
        put({ ...renewed, expires_at: renewed.expires_at + 3 })
        return undefined
      }
      store.script('replace', ...Array.from({ length: 12 }, () => renewal))
      const error = await operatorFor(lock('ops'))
        .forceRelease({ lease: judged ?? undefined })
        .catch((e: unknown) => e)
      expect(error).toMatchObject({ name: 'LockStoreError', retryable: true, key: KEY })
      expect(String(error)).toMatch(/kept changing while being released; nothing was written/)
      expect(record()).toMatchObject({ owner: 'stuck', token: stuck?.record.token })
      expect(store.count('replace')).toBe(4) // 3 s each: the fourth is past the 10 s budget
    })

    it('with an etag alone, still refuses a version its lease renewed since', async () => {
      const { lock } = setup()
      const stuck = await leaseOf(lock('stuck').tryAcquire())
      const judged = await operatorFor(lock('ops')).inspect()
      await stuck?.renew()
      const error = await operatorFor(lock('ops'))
        .forceRelease({ etag: judged?.etag })
        .catch((e: unknown) => e)
      expect(error).toMatchObject({ name: 'LockConflictError', reason: 'changed' })
    })
  })

  it('rides out transient store failures on its read and its write', async () => {
    const { store, lock, record } = setup()
    const stuck = await leaseOf(lock('stuck').tryAcquire())
    store.script('read', 'transient').script('replace', 'transient')
    const freed = await operatorFor(lock('ops')).forceRelease()
    expect(freed?.token).toBeGreaterThan(stuck?.record.token ?? Number.POSITIVE_INFINITY)
    expect(record()).toMatchObject({ token: freed?.token, expires_at: 0 })
  })
})

describe('reset', () => {
  it.each([
    ['a negative token', -1],
    ['a fractional token', 1.5],
    ['NaN', Number.NaN],
    ['an unsafe token', 2 ** 53],
  ])('refuses %s before any request', async (_, token) => {
    const { store, lock } = setup()
    await expect(operatorFor(lock('ops')).reset({ token })).rejects.toBeInstanceOf(LockOptionsError)
    await expect(operatorFor(lock('ops')).reset({ token })).rejects.toMatchObject({ key: KEY })
    expect(store.calls).toEqual([])
  })

  it('creates a released record with the token when there is no object', async () => {
    const { lock, record } = setup()
    expect(await operatorFor(lock('ops')).reset({ token: 9 })).toEqual({
      v: 1,
      token: 9,
      expires_at: 0,
      owner: 'reset by ops',
    })
    expect(record()).toEqual({ v: 1, token: 9, expires_at: 0, owner: 'reset by ops' })
  })

  it('replaces a released record only with a higher token', async () => {
    const { lock, put, record } = setup()
    put({ token: 5, expires_at: 0 })
    await expect(operatorFor(lock('ops')).reset({ token: 5 })).rejects.toMatchObject({
      reason: 'token-too-low',
    })
    expect(record()).toMatchObject({ token: 5, owner: 'x' })
    await operatorFor(lock('ops')).reset({ token: 6 })
    expect(record()).toMatchObject({ token: 6, owner: 'reset by ops' })
  })

  it('refuses to replace a held record', async () => {
    const { lock, record } = setup()
    const lease = await leaseOf(lock('a').tryAcquire())
    const above = (lease?.record.token ?? 0) + 1
    await expect(operatorFor(lock('ops')).reset({ token: above })).rejects.toMatchObject({
      reason: 'not-released',
    })
    expect(record()).toMatchObject({ token: lease?.record.token, owner: 'a' })
  })

  it("refuses a token more than 10 s ahead of the store's clock, writing nothing, and takes one 9 s ahead", async () => {
    const { time, store, lock, put, record } = setup()
    put({ token: 5, expires_at: 0 })
    // The store's clock is known to within a second here (one answer dated to the second).
    await expect(operatorFor(lock('ops')).reset({ token: time.now + 12_000 })).rejects.toMatchObject({
      name: 'LockConflictError',
      reason: 'token-ahead-of-clock',
      key: KEY,
    })
    expect(record()).toMatchObject({ token: 5, owner: 'x' })
    expect(store.count('create') + store.count('replace')).toBe(0)
    await operatorFor(lock('ops')).reset({ token: time.now + 9_000 })
    expect(record()).toMatchObject({ token: time.now + 9_000, owner: 'reset by ops' })
  })

  it('never goes below a token in a corrupted object, and takes one just above', async () => {
    const { lock, put, record } = setup()
    put({ v: 3, token: 100 })
    // It shows no expiry, so only a forced reset replaces it; force never lowers the token.
    await expect(operatorFor(lock('ops')).reset({ token: 100, force: true })).rejects.toMatchObject({
      reason: 'token-too-low',
    })
    await operatorFor(lock('ops')).reset({ token: 101, force: true })
    expect(record()).toMatchObject({ v: 1, token: 101 })
  })

  it.each([
    ['is not JSON', 'garbage'],
    ['is JSON null', 'null'],
  ])('resets, when forced, a corrupted object that %s to any token', async (_, body) => {
    const { lock, put, record } = setup()
    put(body)
    await operatorFor(lock('ops')).reset({ token: 50, force: true })
    expect(record()).toMatchObject({ token: 50, expires_at: 0 })
  })

  it('takes the floor from a token written as a string', async () => {
    const { lock, put, record } = setup()
    put(JSON.stringify({ token: '100' }))
    await expect(operatorFor(lock('ops')).reset({ token: 50, force: true })).rejects.toMatchObject({
      reason: 'token-too-low',
    })
    await operatorFor(lock('ops')).reset({ token: 101, force: true })
    expect(record()).toMatchObject({ token: 101, expires_at: 0 })
  })

  it('refuses, writing nothing of its own, when the object changed between its read and its write', async () => {
    const { store, lock, put, record, meanwhile } = setup()
    put({ token: 5, expires_at: 0 })
    store.script('replace', meanwhile({ token: 6, expires_at: 0, owner: 'quick' }))
    await expect(operatorFor(lock('ops')).reset({ token: 10 })).rejects.toMatchObject({ reason: 'changed' })
    expect(record()).toMatchObject({ token: 6, owner: 'quick' })
  })

  it('refuses, writing nothing of its own, when the object appeared between its read and its write', async () => {
    const { store, lock, record, meanwhile } = setup()
    store.script('create', meanwhile({ token: 1, expires_at: 0, owner: 'quick' }))
    await expect(operatorFor(lock('ops')).reset({ token: 10 })).rejects.toMatchObject({ reason: 'changed' })
    expect(record()).toMatchObject({ token: 1, owner: 'quick' })
  })
})
