import { describe, expect, it } from 'vitest'
import { Lock, LockConflictError, LockOptionsError } from '../../lib/index.js'
import { MemoryLockStore } from '../../lib/memory/index.js'
import { SimTime } from '../support/sim-clock.js'

const KEY = 'jobs/nightly'
const LAST_TOKEN = Number.MAX_SAFE_INTEGER

function setup() {
  const time = new SimTime()
  const store = new MemoryLockStore({ clock: time.serverClock })
  const contender = (owner: string) =>
    new Lock({
      store,
      key: KEY,
      owner,
      ttlMs: 10_000,
      clockSkewMarginMs: 1_000,
      clock: time.localClock(),
      random: () => 0.5,
    })
  const writes = () => store.requests.create + store.requests.replace
  const put = (fields: Record<string, unknown>) =>
    store.putRaw(KEY, JSON.stringify({ v: 1, token: 1, expires_at: 0, owner: 'old', ...fields }))
  return { time, store, contender, writes, put }
}

const rejection = (promise: Promise<unknown>): Promise<unknown> =>
  promise.then(
    (value) => {
      throw new Error(`expected a rejection, got ${JSON.stringify(value)}`)
    },
    (error: unknown) => error,
  )

describe('a lock at the limits of its record', () => {
  describe('tokens', () => {
    it('hands out the largest safe integer as a token, and reads it back', async () => {
      const { contender, put } = setup()
      put({ token: LAST_TOKEN - 1 })
      const lease = await contender('a').tryAcquire()
      expect(lease?.token).toBe(LAST_TOKEN)
      expect(await contender('b').inspect()).toMatchObject({ token: LAST_TOKEN, held: true })
    })

    it('refuses to acquire above the largest safe token (tokens-exhausted) and writes nothing', async () => {
      const { contender, store, writes, put } = setup()
      put({ token: LAST_TOKEN })
      const before = store.peek(KEY)
      const error = await rejection(contender('a').tryAcquire())
      expect(error).toBeInstanceOf(LockConflictError)
      expect(error).toMatchObject({ reason: 'tokens-exhausted', key: KEY })
      const waited = await rejection(contender('a').acquire({ waitMs: 5_000 }))
      expect(waited).toMatchObject({ reason: 'tokens-exhausted' })
      expect(store.peek(KEY)).toBe(before)
      expect(writes()).toBe(0)
    })

    it('refuses to force-release above the largest safe token and writes nothing', async () => {
      const { contender, store, put } = setup()
      put({ token: LAST_TOKEN, expires_at: 2_000_000_000 })
      const before = store.peek(KEY)
      expect(await rejection(contender('op').forceRelease())).toMatchObject({ reason: 'tokens-exhausted' })
      expect(store.peek(KEY)).toBe(before)
    })

    it.each([
      ['the largest safe integer', LAST_TOKEN],
      ['2^53', 2 ** 53],
      ['a fraction', 1.5],
      ['a negative number', -1],
      ['NaN', Number.NaN],
    ])('refuses to reset to %s before any request, leaving the lock usable', async (_, token) => {
      const { contender, store, put } = setup()
      put({ token: 7 })
      const reads = store.requests.read
      expect(await rejection(contender('op').reset({ token }))).toBeInstanceOf(LockOptionsError)
      expect(store.requests.read).toBe(reads)
      expect((await contender('a').tryAcquire())?.token).toBe(8)
    })

    it('never writes an unsafe token: after a reset to the last usable one, one more acquisition, then a typed refusal', async () => {
      const { contender, store } = setup()
      await contender('op').reset({ token: LAST_TOKEN - 1 })
      const lease = await contender('a').tryAcquire()
      expect(lease?.token).toBe(LAST_TOKEN)
      await lease?.release()
      expect(await rejection(contender('b').tryAcquire())).toMatchObject({ reason: 'tokens-exhausted' })
      expect(JSON.parse(store.peek(KEY) ?? '')).toMatchObject({ token: LAST_TOKEN, expires_at: 0 })
      expect(await contender('c').inspect()).toMatchObject({ token: LAST_TOKEN, held: false })
    })
  })
})
