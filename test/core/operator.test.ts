import { describe, expect, expectTypeOf, it } from 'vitest'
import { Lock, LockConflictError, LockLostError, LockOptionsError } from '../../lib/index.js'
import { MemoryLockStore } from '../../lib/memory/index.js'
import { LockOperator } from '../../lib/operator.js'
import { leaseOf } from '../support/lease-of.js'
import { operatorFor } from '../support/operator-for.js'
import { SimTime } from '../support/sim-clock.js'

const KEY = 'jobs/nightly'
const TTL_MS = 10_000
const MARGIN_MS = 1_000

function setup() {
  const time = new SimTime()
  const store = new MemoryLockStore({ clock: time.serverClock, clockResolutionMs: 1_000 })
  const contender = (owner: string) =>
    new Lock({
      store,
      key: KEY,
      owner,
      ttlMs: TTL_MS,
      clockSkewMarginMs: MARGIN_MS,
      clock: time.localClock(),
      random: () => 0.5,
    })
  const operator = operatorFor(contender('operator'))
  /** Seconds since the epoch, `ms` from now by the store's clock. */
  const secondsFromNow = (ms: number) => (time.now + ms) / 1000
  return { time, store, contender, operator, secondsFromNow }
}

/** The reset's refusal, after checking that nothing was written. */
async function refusal(store: MemoryLockStore, reset: Promise<unknown>): Promise<LockConflictError> {
  const before = store.peek(KEY)
  const error = await reset.then(
    (value) => {
      throw new Error(`expected a refusal, got ${JSON.stringify(value)}`)
    },
    (e: unknown) => e,
  )
  expect(error).toBeInstanceOf(LockConflictError)
  expect(store.peek(KEY)).toBe(before)
  return error as LockConflictError
}

describe('reset (operator)', () => {
  describe('refuses what it cannot prove released or expired, unless forced', () => {
    it('refuses to reset a held record of a version it does not know, and resets it when forced', async () => {
      const { store, operator, contender, secondsFromNow } = setup()
      store.putRaw(
        KEY,
        JSON.stringify({ v: 3, token: 5, expires_at: secondsFromNow(60_000), owner: 'newer' }),
      )
      const error = await refusal(store, operator.reset({ token: 10 }))
      expect(error.reason).toBe('not-released')
      await operator.reset({ token: 10, force: true })
      expect((await leaseOf(contender('a').tryAcquire()))?.record.token).toBeGreaterThan(10)
    })

    it('refuses to reset a body that shows no expiry at all (not JSON), and resets it when forced', async () => {
      const { store, operator } = setup()
      store.putRaw(KEY, 'garbage')
      expect((await refusal(store, operator.reset({ token: 10 }))).reason).toBe('not-released')
      expect(await operator.reset({ token: 10, force: true })).toMatchObject({
        token: 10,
        expires_at: 0,
      })
    })

    it('refuses to reset a valid held record, and when forced fences its holder off', async () => {
      const { store, operator, contender } = setup()
      const lease = await leaseOf(contender('a').tryAcquire())
      const above = (lease?.record.token ?? 0) + 1
      expect((await refusal(store, operator.reset({ token: above }))).reason).toBe('not-released')
      await operator.reset({ token: above, force: true })
      await expect(lease?.renew()).rejects.toBeInstanceOf(LockLostError)
    })

    it('refuses a record that expired less than the clock-skew margin ago', async () => {
      const { store, operator, time, secondsFromNow } = setup()
      store.putRaw(KEY, JSON.stringify({ v: 3, token: 5, expires_at: secondsFromNow(0), owner: 'newer' }))
      time.advance(MARGIN_MS / 2)
      expect((await refusal(store, operator.reset({ token: 10 }))).reason).toBe('not-released')
    })

    it.each([
      ['a valid record whose lease expired', { v: 1, expires_at: 'past' }],
      ['a body of an unknown version that shows itself released', { v: 3, expires_at: 0 }],
      ['a body of an unknown version that shows itself expired', { v: 2, expires_at: 'past' }],
      ['a body with a wrong field that shows itself released', { v: 1, expires_at: 0, last_run: 5 }],
    ])('resets without force %s', async (_, fields) => {
      const { store, operator, secondsFromNow } = setup()
      const expiresAt = fields.expires_at === 'past' ? secondsFromNow(-60_000) : fields.expires_at
      store.putRaw(KEY, JSON.stringify({ token: 5, owner: 'old', ...fields, expires_at: expiresAt }))
      expect(await operator.reset({ token: 6 })).toMatchObject({ token: 6, expires_at: 0 })
    })
  })

  describe('never goes below a token the object shows, forced or not', () => {
    it.each([
      ['a string', JSON.stringify({ v: 1, token: '5', expires_at: 0, owner: 'x' }), 5],
      ['a padded string', JSON.stringify({ v: 1, token: ' 5.0 ', expires_at: 0, owner: 'x' }), 5],
      ['an exponent', '{"v":1,"token":5e0,"expires_at":0,"owner":"x","bad":}', 5],
      ['a truncated record', '{"v":1,"token":42,"expires_at":0,"own', 42],
      ['a wrapped record', JSON.stringify([{ token: 7 }, { lock: { token: '9' } }]), 9],
      ['an unsafe integer', JSON.stringify({ v: 1, token: 2 ** 53, expires_at: 0, owner: 'x' }), 2 ** 53],
    ])('takes the floor from a token written as %s', async (_, body, floor) => {
      const { store, operator, time } = setup()
      store.putRaw(KEY, body)
      // 10 s ahead of the store's clock is as high as reset goes (see operator-conflicts).
      for (const token of [1, Math.min(floor, time.now + 9_000)]) {
        for (const force of [false, true]) {
          expect((await refusal(store, operator.reset({ token, force }))).reason).toBe('token-too-low')
        }
      }
      if (floor < Number.MAX_SAFE_INTEGER - 1) await operator.reset({ token: floor + 1, force: true })
    })

    it('refuses a token at or below the one a valid released record carries', async () => {
      const { store, operator, contender } = setup()
      await (await leaseOf(contender('a').tryAcquire()))?.release()
      const last = await leaseOf(contender('a').tryAcquire())
      await last?.release()
      const token = last?.record.token ?? 0
      expect((await refusal(store, operator.reset({ token, force: true }))).reason).toBe('token-too-low')
      expect(await operator.reset({ token: token + 1 })).toMatchObject({ token: token + 1 })
    })
  })
})

describe("the operator's side, apart from the contender's", () => {
  it('a Lock carries no operator call: pausing, resuming, freeing and resetting are a LockOperator’s', () => {
    const { contender, operator } = setup()
    const lock = contender('job/1')
    for (const call of ['inspect', 'forceRelease', 'reset', 'pause', 'resume']) {
      expect(call in lock).toBe(false)
      expect(typeof (operator as unknown as Record<string, unknown>)[call]).toBe('function')
    }
    expectTypeOf<Lock>().not.toHaveProperty('forceRelease')
    expectTypeOf<Lock>().not.toHaveProperty('pause')
  })

  it('names who acts in what it writes, and validates what it is made with like a Lock', async () => {
    const { store, contender } = setup()
    const stuck = await leaseOf(contender('job/1').tryAcquire())
    const operator = new LockOperator({ store, key: KEY, operator: 'alice@ops' })
    const released = await operator.forceRelease()
    expect(released).toMatchObject({ owner: 'force-released by alice@ops', ended_by: { by: 'alice@ops' } })
    expect(released?.token).toBeGreaterThan(stuck?.record.token ?? Number.POSITIVE_INFINITY)
    expect(() => new LockOperator({ store, key: '' })).toThrow(/key must be a non-empty string/)
    expect(() => new LockOperator({ store, key: KEY, operator: '' })).toThrow(
      /operator must be a non-empty string/,
    )
  })

  it('refuses the lease settings a Lock refuses: a ttl no longer than the clock-skew margin', () => {
    const { store } = setup()
    expect(() => new LockOperator({ store, key: KEY, ttlMs: 1_000, clockSkewMarginMs: 2_000 })).toThrow(
      LockOptionsError,
    )
  })

  it('inspect says run only where the record has one (a reset writes none)', async () => {
    const { operator, contender } = setup()
    await (await leaseOf(contender('job/1').tryAcquire()))?.release()
    expect(await operator.inspect()).toMatchObject({ run: 1 })
    await operator.reset({ backToClock: true })
    expect(await operator.inspect()).not.toHaveProperty('run')
  })
})
