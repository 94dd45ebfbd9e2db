import { describe, expect, it } from 'vitest'
import { parseRecord } from '../../lib/core/parse-record.js'
import { type LockRecord, rebaseOnOperatorWrite, serializeRecord } from '../../lib/core/record.js'
import { Lock, LockConflictError, LockCorruptedError, LockLostError } from '../../lib/index.js'
import { MemoryLockStore } from '../../lib/memory/index.js'
import { withSchedule } from '../../lib/schedule/fields.js'
import { leaseOf } from '../support/lease-of.js'
import { operatorFor } from '../support/operator-for.js'
import { SimTime } from '../support/sim-clock.js'

const KEY = 'jobs/nightly'

function setup() {
  const time = new SimTime()
  const store = new MemoryLockStore({ clock: time.serverClock, clockResolutionMs: 1_000 })
  const contender = (owner: string) =>
    new Lock({ store, key: KEY, owner, ttlMs: 10_000, clockSkewMarginMs: 1_000, clock: time.localClock() })
  const stored = (): LockRecord => JSON.parse(store.peek(KEY) ?? 'null')
  return { time, store, contender, operator: operatorFor(contender('alice@ops')), stored }
}

const base: LockRecord = { v: 1, token: 5, run: 2, expires_at: 100, owner: 'job/1', cursor: { a: 1, b: 2 } }

describe('the record while paused', () => {
  it('reads version 1 and 2, a pause with or without a note, and a count of failed runs', () => {
    const paused = { ...base, v: 2, paused: { by: 'a', at: 0, note: '' }, failures: 0, failed_run: 0 }
    expect(parseRecord(JSON.stringify(paused), KEY)).toEqual(paused)
    expect(parseRecord(JSON.stringify({ ...base, v: 2, paused: { by: 'a', at: 1.5 } }), KEY).paused).toEqual({
      by: 'a',
      at: 1.5,
    })
  })

  it.each([
    ['a pause that is not an object', 'yes'],
    ['a pause that is null', null],
    ['a pause that is an array', []],
    ['a pause with no one', { at: 1 }],
    ['a pause by a number', { by: 1, at: 1 }],
    ['a pause at no time', { by: 'a' }],
    ['a pause at a negative time', { by: 'a', at: -1 }],
    ['a pause at a time written as text', { by: 'a', at: '1' }],
    ['a note that is not text', { by: 'a', at: 1, note: 5 }],
  ])('refuses %s', (_, paused) => {
    expect(() => parseRecord(JSON.stringify({ ...base, v: 2, paused }), KEY)).toThrow(
      /"paused" has a wrong type/,
    )
  })

  it.each([
    ['failures', -1],
    ['failures', 1.5],
    ['failures', '1'],
    ['failed_run', -1],
    ['failed_run', 'x'],
  ])('refuses a %s of %j', (field, value) => {
    expect(() => parseRecord(JSON.stringify({ ...base, [field]: value }), KEY)).toThrow(
      `"${field}" has a wrong type`,
    )
  })

  it('is written as version 2 exactly while paused, whatever version the record says', () => {
    const pause = { by: 'a', at: 1 }
    expect(JSON.parse(serializeRecord({ ...base, paused: pause })).v).toBe(2)
    expect(JSON.parse(serializeRecord({ ...base, v: 2 })).v).toBe(1)
    expect(withSchedule(base, { paused: pause }).v).toBe(2)
    expect(withSchedule({ ...base, v: 2, paused: pause }, { paused: null }).v).toBe(1)
    expect(withSchedule({ ...base, failures: 2 }, { failures: null, failed_run: 3 })).toEqual({
      ...base,
      failed_run: 3,
    })
    expect(withSchedule({ ...base, failures: 2 }, {})).toEqual({ ...base, failures: 2 })
  })

  it("carries an operator's change over a holder's write only when nothing else changed", () => {
    const pause = { by: 'op', at: 9, note: 'n' }
    const next = { ...base, expires_at: 200, failures: 1, failed_run: 2 }
    // Paused meanwhile: the pause is carried over, the holder's own fields stay.
    expect(rebaseOnOperatorWrite(base, { ...base, v: 2, paused: pause }, next)).toEqual({
      ...next,
      v: 2,
      paused: pause,
    })
    // Keys in another order are the same record.
    const reordered = {
      cursor: { b: 2, a: 1 },
      owner: 'job/1',
      expires_at: 100,
      run: 2,
      token: 5,
      v: 1 as const,
    }
    expect(rebaseOnOperatorWrite(base, reordered, next)).toEqual(next)
    // Resumed meanwhile: the pause and the count go; the holder's count of its own is not revived.
    const was = { ...base, v: 2 as const, paused: pause, failures: 3, failed_run: 1 }
    expect(rebaseOnOperatorWrite(was, base, { ...was, expires_at: 0 })).toEqual({ ...base, expires_at: 0 })
    // Anything else changed: someone else wrote, and it is not ours to carry.
    expect(rebaseOnOperatorWrite(base, { ...base, token: 6 }, next)).toBeUndefined()
    expect(rebaseOnOperatorWrite(base, { ...base, owner: 'job/2' }, next)).toBeUndefined()
    expect(rebaseOnOperatorWrite(base, { ...base, cursor: { a: 1 } }, next)).toBeUndefined()
    expect(rebaseOnOperatorWrite(base, { ...base, extra: 1 }, next)).toBeUndefined()
  })
})

describe('pause and resume (operator)', () => {
  it('pauses a released lock, naming who, when and why, and resumes it back to version 1', async () => {
    const { time, store, contender, operator, stored } = setup()
    const lease = await leaseOf(contender('job/1').tryAcquire())
    await lease?.release()
    const before = stored()
    const result = await operator.pause({ note: 'migrating the table' })
    expect(result).toMatchObject({ wasHeld: false, endedLease: false, previous: before })
    // When, by the store's clock as the operator estimates it (its Date has 1 s resolution).
    const at = stored().paused?.at ?? 0
    expect(Math.abs(at * 1000 - time.now)).toBeLessThanOrEqual(1_000)
    expect(stored()).toEqual({
      ...before,
      v: 2,
      paused: { by: 'alice@ops', at, note: 'migrating the table' },
    })
    expect(result?.record).toEqual(stored())
    // Paused again: who, when and why are replaced.
    time.advance(5_000)
    await operatorFor(contender('bob')).pause()
    expect(stored().paused).toEqual({ by: 'bob', at: expect.any(Number) })
    // Stamped from what one answer, dated to the second, told of the store's clock.
    expect(Math.abs((stored().paused?.at ?? Number.NaN) - time.now / 1000)).toBeLessThanOrEqual(0.501)
    const resumed = await operator.resume()
    expect(resumed?.lifted).toMatchObject({ by: 'bob' })
    expect(stored()).toEqual(before)
    expect(resumed?.record).toEqual(before)
    // Not paused: nothing written.
    const writes = store.requests.replace
    expect(await operator.resume()).toEqual({ record: before, lifted: undefined })
    expect(store.requests.replace).toBe(writes)
  })

  it('says null when there is no lock, and refuses a record it does not read, writing nothing', async () => {
    const { store, operator } = setup()
    expect(await operator.pause()).toBeNull()
    expect(await operator.resume()).toBeNull()
    expect(store.peek(KEY)).toBeUndefined()
    store.putRaw(KEY, JSON.stringify({ v: 3, token: 1, expires_at: 0, owner: 'future' }))
    await expect(operator.pause()).rejects.toBeInstanceOf(LockCorruptedError)
    await expect(operator.resume()).rejects.toBeInstanceOf(LockCorruptedError)
    expect(store.requests.replace).toBe(0)
  })

  it('refuses when the lock changed between its read and its write', async () => {
    const { store, contender, operator } = setup()
    const lease = await leaseOf(contender('job/1').tryAcquire())
    await lease?.release()
    const replace = store.replace.bind(store)
    let raced = false
    store.replace = async (key, body, etag, options) => {
      if (!raced) {
        raced = true
        await leaseOf(contender('job/2').tryAcquire())
      }
      return replace(key, body, etag, options)
    }
    const error = await operator.pause().catch((e: unknown) => e)
    expect(error).toBeInstanceOf(LockConflictError)
    expect((error as LockConflictError).reason).toBe('changed')
    expect(JSON.parse(store.peek(KEY) ?? '').paused).toBeUndefined()
  })

  describe('when the holder renews between its read and its write', () => {
    /** Runs `meanwhile` once, just before the first write of the operator's that `mine` picks reaches the store. */
    const beforeFirstWrite = (
      store: MemoryLockStore,
      meanwhile: () => unknown,
      mine: (body: string) => boolean = () => true,
    ) => {
      const replace = store.replace.bind(store)
      let raced = false
      store.replace = async (key, body, etag, options) => {
        if (!raced && mine(body)) {
          raced = true
          await meanwhile()
        }
        return replace(key, body, etag, options)
      }
    }
    const pausing = (body: string) => body.includes('alice@ops')
    /** A record of another lease, as a run that took the lock in between wrote it. */
    const anotherLease = (store: MemoryLockStore, record: LockRecord) => () =>
      store.putRaw(KEY, JSON.stringify({ ...record, token: record.token + 5, owner: 'job/2' }))
    const held = async (contender: (owner: string) => Lock) => {
      const lease = await leaseOf(contender('job/1').tryAcquire())
      if (!lease) throw new Error('not acquired')
      return lease
    }

    it.each([
      ['pause', { now: false }],
      ['pause --now', { now: true }],
    ])('%s rides the renewal out: it is the lease it read', async (_, options) => {
      const { store, contender, operator, stored } = setup()
      const lease = await held(contender)
      beforeFirstWrite(store, () => lease.renew(), pausing)
      const result = await operator.pause({ note: 'n', ...options })
      expect(result).toMatchObject({ wasHeld: true, endedLease: options.now === true })
      expect(stored()).toMatchObject({ paused: { by: 'alice@ops', note: 'n' } })
      if (options.now) expect(stored().ended_by).toMatchObject({ token: lease.record.token, owner: 'job/1' })
      else expect(stored()).toMatchObject({ token: lease.record.token, owner: 'job/1' })
    })

    it('resume rides it out too', async () => {
      const { store, contender, operator, stored } = setup()
      const lease = await held(contender)
      await operator.pause({ note: 'n' })
      beforeFirstWrite(
        store,
        () => lease.renew(),
        (body) => !body.includes('"paused"'),
      )
      expect(await operator.resume()).toMatchObject({ lifted: { note: 'n' } })
      expect(stored().paused).toBeUndefined()
      expect(stored()).toMatchObject({ token: lease.record.token, owner: 'job/1' })
    })

    it('pause with an etag refuses it: an etag names one version only', async () => {
      const { store, contender, operator } = setup()
      const lease = await held(contender)
      const info = await operator.inspect()
      beforeFirstWrite(store, () => lease.renew(), pausing)
      const error = await operator.pause({ etag: info?.etag }).catch((e: unknown) => e)
      expect(error).toMatchObject({ name: 'LockConflictError', reason: 'changed' })
    })

    it('pause refuses when the object is deleted in between, writing nothing', async () => {
      const { store, contender, operator } = setup()
      await held(contender)
      beforeFirstWrite(store, () => store.delete(KEY))
      const error = await operator.pause().catch((e: unknown) => e)
      expect(error).toMatchObject({ name: 'LockConflictError', reason: 'changed' })
      expect(store.peek(KEY)).toBeUndefined()
    })

    it('resume still refuses another lease written in between, nothing written', async () => {
      const { store, contender, operator, stored } = setup()
      await held(contender)
      await operator.pause({ note: 'n' })
      beforeFirstWrite(store, anotherLease(store, stored()))
      const error = await operator.resume().catch((e: unknown) => e)
      expect(error).toMatchObject({ name: 'LockConflictError', reason: 'changed' })
      expect(stored()).toMatchObject({ owner: 'job/2', paused: { note: 'n' } })
    })

    it('pause still refuses another lease written in between, nothing written', async () => {
      const { store, contender, operator, stored } = setup()
      await held(contender)
      beforeFirstWrite(store, anotherLease(store, stored()))
      const error = await operator.pause().catch((e: unknown) => e)
      expect(error).toMatchObject({ name: 'LockConflictError', reason: 'changed' })
      expect(stored()).toMatchObject({ owner: 'job/2' })
      expect(stored().paused).toBeUndefined()
    })
  })

  it('leaves a held lock held: the holder renews, checkpoints and releases, keeping the pause', async () => {
    const { contender, operator, stored } = setup()
    const lease = await leaseOf(contender('job/1').tryAcquire())
    if (!lease) throw new Error('not acquired')
    const result = await operator.pause({ note: 'n' })
    expect(result).toMatchObject({ wasHeld: true, endedLease: false })
    expect(stored()).toMatchObject({ token: lease.record.token, owner: 'job/1', paused: { note: 'n' } })
    await lease.renew()
    await lease.saveCheckpoint({ at: 1 })
    expect(stored()).toMatchObject({
      v: 2,
      token: lease.record.token,
      state: { at: 1 },
      paused: { note: 'n' },
    })
    await operator.resume()
    await operator.pause({ note: 'again' })
    await lease.release({ clearState: true })
    expect(lease.signal.aborted).toBe(false)
    expect(stored()).toMatchObject({
      v: 2,
      token: lease.record.token,
      expires_at: 0,
      paused: { note: 'again' },
    })
    expect(stored().state).toBeUndefined()
    expect(lease.record).toEqual(stored())
  })

  it('with now, ends a held lease: a higher token, and the holder is refused at its next write', async () => {
    const { contender, operator, stored } = setup()
    const lease = await leaseOf(contender('job/1').tryAcquire())
    if (!lease) throw new Error('not acquired')
    const result = await operator.pause({ now: true })
    expect(result).toMatchObject({ wasHeld: true, endedLease: true })
    expect(stored()).toMatchObject({ v: 2, expires_at: 0, owner: 'paused by alice@ops' })
    expect(stored().token).toBeGreaterThan(lease.record.token)
    await expect(lease.renew()).rejects.toBeInstanceOf(LockLostError)
    expect(lease.signal.aborted).toBe(true)
    await expect(lease.release()).rejects.toBeInstanceOf(LockLostError)
    expect(stored()).toMatchObject({ paused: { by: 'alice@ops' } })
  })

  it('with now, leaves a lock that is not held as it is but for the pause', async () => {
    const { contender, operator, stored } = setup()
    await (await leaseOf(contender('job/1').tryAcquire()))?.release()
    const before = stored()
    expect(await operator.pause({ now: true })).toMatchObject({
      wasHeld: false,
      endedLease: false,
    })
    expect(stored()).toMatchObject({ token: before.token, owner: before.owner })
  })

  it('survives every write of this release: acquire, force-release and reset keep it', async () => {
    const { contender, operator, stored } = setup()
    await (await leaseOf(contender('job/1').tryAcquire()))?.release()
    await operator.pause({ note: 'kept' })
    // A Lock of its own does not know pausing (the lifecycle does): it acquires, keeping it.
    const lease = await leaseOf(contender('core-user').tryAcquire())
    expect(stored()).toMatchObject({ v: 2, owner: 'core-user', paused: { note: 'kept' } })
    await lease?.release()
    await operator.forceRelease()
    expect(stored()).toMatchObject({ v: 2, paused: { note: 'kept' } })
    await operator.reset({ token: stored().token + 1 })
    expect(stored()).toMatchObject({ v: 2, owner: 'reset by alice@ops', paused: { note: 'kept' } })
    await operator.reset({ backToClock: true, force: true })
    expect(stored()).toMatchObject({ v: 2, paused: { note: 'kept' } })
  })

  it('reset of an object it cannot read writes no pause', async () => {
    const { store, operator, stored } = setup()
    store.putRaw(KEY, JSON.stringify({ v: 3, token: 5, expires_at: 0, paused: { by: 'x', at: 1 } }))
    await operator.reset({ token: 10 })
    expect(stored()).toEqual({ v: 1, token: 10, expires_at: 0, owner: 'reset by alice@ops' })
  })
})

describe('a skip decided on our own last write', () => {
  it('is confirmed by a read: a job resumed by someone else runs on the next attempt', async () => {
    const { contender, operator, store } = setup()
    const job = contender('job/1')
    const lease = await leaseOf(job.tryAcquire())
    // The run pauses the job itself as it releases (pauseAfterFailures does this).
    await lease?.release({ fields: { paused: { by: 'job/1', at: 1 } } })
    await operator.resume()
    const skipIfPaused = (record: LockRecord) => record.paused !== undefined
    const before = { ...store.requests }
    const attempt = await job.tryAcquire({ skipIf: skipIfPaused })
    expect(attempt.status).toBe('acquired')
    expect(store.requests.read - before.read).toBe(1) // the read that confirmed it
  })

  it('still skips when the read confirms it, and writes nothing', async () => {
    const { contender, store, stored } = setup()
    const job = contender('job/1')
    const lease = await leaseOf(job.tryAcquire())
    await lease?.release({ fields: { paused: { by: 'job/1', at: 1 } } })
    const written = store.peek(KEY)
    const attempt = await job.tryAcquire({ skipIf: (record) => record.paused !== undefined })
    expect(attempt).toMatchObject({ status: 'skipped', record: { paused: { by: 'job/1' } } })
    expect(store.peek(KEY)).toBe(written)
    expect(stored().expires_at).toBe(0)
  })
})
