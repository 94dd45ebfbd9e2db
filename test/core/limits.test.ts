import { describe, expect, it } from 'vitest'
import { MAX_RECORD_BYTES, MAX_RECORD_DEPTH } from '../../lib/extend.js'
import { LockConflictError, LockCorruptedError, LockOptionsError } from '../../lib/index.js'
import { leaseOf } from '../support/lease-of.js'
import { operatorFor } from '../support/operator-for.js'
import { simLocks } from '../support/sim-locks.js'

const KEY = 'jobs/nightly'
const LAST_TOKEN = Number.MAX_SAFE_INTEGER

function setup() {
  const { time, store, lock: contender, writes } = simLocks(KEY)
  const put = (fields: Record<string, unknown>) =>
    store.putRaw(KEY, JSON.stringify({ v: 1, token: 1, expires_at: 0, owner: 'old', ...fields }))
  return { time, store, contender, writes, put }
}

/** `levels` arrays, one in another, around a number. */
const nested = (levels: number): string => `${'['.repeat(levels)}1${']'.repeat(levels)}`

/** A released record padded with an extra field to exactly `bytes` bytes. */
const recordOfSize = (bytes: number): string => {
  const empty = JSON.stringify({ v: 1, token: 3, expires_at: 0, owner: 'old', notes: '' })
  return JSON.stringify({
    v: 1,
    token: 3,
    expires_at: 0,
    owner: 'old',
    notes: 'n'.repeat(bytes - empty.length),
  })
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
    it('reads a record whose token is the largest safe integer', async () => {
      const { contender, put } = setup()
      put({ token: LAST_TOKEN, expires_at: 2_000_000_000 })
      expect(await operatorFor(contender('b')).inspect()).toMatchObject({ token: LAST_TOKEN, held: true })
    })

    it('refuses to acquire above the largest safe token (tokens-exhausted) and writes nothing', async () => {
      const { contender, store, writes, put } = setup()
      put({ token: LAST_TOKEN })
      const before = store.peek(KEY)
      const error = await rejection(leaseOf(contender('a').tryAcquire()))
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
      expect(await rejection(operatorFor(contender('op')).forceRelease())).toMatchObject({
        reason: 'tokens-exhausted',
      })
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
      expect(await rejection(operatorFor(contender('op')).reset({ token }))).toBeInstanceOf(LockOptionsError)
      expect(store.requests.read).toBe(reads)
      expect((await leaseOf(contender('a').tryAcquire()))?.record.token).toBeGreaterThan(7)
    })

    it('never writes an unsafe token: the last usable one is far ahead of the clock, so it is not followed either', async () => {
      const { contender, store, writes, put } = setup()
      // Far ahead of the store's clock: reset refuses it, so only an outside writer puts it there.
      expect(await rejection(operatorFor(contender('op')).reset({ token: LAST_TOKEN - 1 }))).toMatchObject({
        reason: 'token-ahead-of-clock',
      })
      put({ token: LAST_TOKEN - 1 })
      expect(await rejection(leaseOf(contender('a').tryAcquire()))).toMatchObject({
        reason: 'record-ahead-of-clock',
      })
      put({ token: LAST_TOKEN })
      expect(await rejection(leaseOf(contender('b').tryAcquire()))).toMatchObject({
        reason: 'tokens-exhausted',
      })
      expect(JSON.parse(store.peek(KEY) ?? '')).toMatchObject({ token: LAST_TOKEN, expires_at: 0 })
      expect(writes()).toBe(0)
      expect(await operatorFor(contender('c')).inspect()).toMatchObject({ token: LAST_TOKEN, held: false })
    })
  })

  describe('records', () => {
    it('refuses a record nested too deep to be written back (60 KB, 30 000 levels) as corrupted, from acquire and inspect alike', async () => {
      const { contender, store, writes } = setup()
      const body = `{"v":1,"token":3,"expires_at":0,"owner":"old","extra":${nested(30_000)}}`
      store.putRaw(KEY, body)
      for (const call of [
        () => leaseOf(contender('a').tryAcquire()),
        () => operatorFor(contender('a')).inspect(),
      ]) {
        const error = await rejection(call())
        expect(error).toBeInstanceOf(LockCorruptedError)
        expect((error as LockCorruptedError).message).toMatch(/nested more than 100 levels deep/)
        expect((error as LockCorruptedError).raw).toBe(body)
      }
      expect(store.peek(KEY)).toBe(body)
      expect(writes()).toBe(0)
    })

    it('keeps a record nested exactly as deep as allowed across an acquisition', async () => {
      const { contender, put, store } = setup()
      // The record is the first level, so its field may nest one level less.
      const extra = JSON.parse(nested(MAX_RECORD_DEPTH - 1))
      put({ extra })
      const lease = await leaseOf(contender('a').tryAcquire())
      expect(lease?.record.token).toBeGreaterThan(1)
      expect(JSON.parse(store.peek(KEY) ?? '').extra).toEqual(extra)
      await expect(operatorFor(contender('b')).inspect()).resolves.toMatchObject({ held: true })
    })

    it('refuses one level more as corrupted', async () => {
      const { contender, put } = setup()
      put({ extra: JSON.parse(nested(MAX_RECORD_DEPTH)) })
      expect(await rejection(leaseOf(contender('a').tryAcquire()))).toBeInstanceOf(LockCorruptedError)
    })

    it('lets an operator reset a record nested too deep', async () => {
      const { contender, store } = setup()
      store.putRaw(KEY, `{"v":1,"token":3,"expires_at":0,"owner":"old","extra":${nested(30_000)}}`)
      await operatorFor(contender('op')).reset({ token: 10 })
      expect((await leaseOf(contender('a').tryAcquire()))?.record.token).toBeGreaterThan(10)
    })

    it.each([
      ['nested too deep', JSON.parse(nested(MAX_RECORD_DEPTH))],
      [
        'that contains itself',
        (() => {
          const loop: Record<string, unknown> = {}
          loop.self = loop
          return loop
        })(),
      ],
      ['that JSON cannot hold', { count: 10n }],
      ['that is no JSON value', () => 1],
    ])(
      'refuses a checkpoint or a cursor %s with LockOptionsError, writing nothing and keeping the lease',
      async (_, value) => {
        const { contender, store, writes } = setup()
        const lease = await leaseOf(contender('a').tryAcquire())
        const before = store.peek(KEY)
        const written = writes()
        for (const [write, what] of [
          [(v: never) => lease?.saveCheckpoint(v), /^Checkpoint state /],
          [(v: never) => lease?.saveCursor(v), /^Cursor /],
        ] as const) {
          const error = await rejection(write(value as never) ?? Promise.resolve())
          expect(error).toBeInstanceOf(LockOptionsError)
          expect(error).toMatchObject({ key: KEY, message: expect.stringMatching(what) })
        }
        expect(store.peek(KEY)).toBe(before)
        expect(writes()).toBe(written)
        await lease?.saveCheckpoint({ done: 1 })
        await lease?.saveCursor({ after: 2 })
        expect(JSON.parse(store.peek(KEY) ?? '')).toMatchObject({ state: { done: 1 }, cursor: { after: 2 } })
      },
    )

    it('keeps the reason JSON gave for a value it cannot hold', async () => {
      const { contender } = setup()
      const lease = await leaseOf(contender('a').tryAcquire())
      const error = await rejection(lease?.saveCursor({ count: 10n } as never) ?? Promise.resolve())
      expect((error as LockOptionsError).cause).toBeInstanceOf(TypeError)
      expect((error as Error).message).toMatch(/cannot be written as JSON/)
    })

    it('refuses a checkpoint or a cursor beyond what its store says it holds, with LockOptionsError, before writing', async () => {
      const { contender, store, writes } = setup()
      const tooSmall = (_field: string, value: unknown) =>
        JSON.stringify(value).includes('e-200') ? 'a number too small for this store' : undefined
      Object.assign(store, { limits: { recordDepth: 4, unstorable: tooSmall } })
      const lease = await leaseOf(contender('a').tryAcquire())
      const written = writes()
      const deep = await rejection(lease?.saveCheckpoint(JSON.parse(nested(4))) ?? Promise.resolve())
      expect(deep).toBeInstanceOf(LockOptionsError)
      expect((deep as Error).message).toMatch(/^Checkpoint state nests more than 3 levels deep/)
      const tiny = await rejection(lease?.saveCursor({ tiny: 1e-200 }) ?? Promise.resolve())
      expect(tiny).toBeInstanceOf(LockOptionsError)
      expect((tiny as Error).message).toMatch(/^Cursor cannot be stored as it is: a number too small/)
      expect(writes()).toBe(written)
      // The record is the first of its levels: a field may nest one level fewer.
      await lease?.saveCheckpoint(JSON.parse(nested(3)))
    })

    it('takes a checkpoint and a cursor nested as deep as a record field may be', async () => {
      const { contender, store } = setup()
      const lease = await leaseOf(contender('a').tryAcquire())
      // They sit one level below the record, like any field.
      const deepest = JSON.parse(nested(MAX_RECORD_DEPTH - 1))
      await lease?.saveCheckpoint(deepest)
      await lease?.saveCursor(deepest)
      expect(JSON.parse(store.peek(KEY) ?? '')).toMatchObject({ state: deepest, cursor: deepest })
    })

    it('refuses to acquire a valid record of exactly 64 KiB (record-too-large), writing nothing, and inspect says so', async () => {
      const { contender, store, writes } = setup()
      const body = recordOfSize(MAX_RECORD_BYTES)
      expect(Buffer.byteLength(body)).toBe(64 * 1024)
      store.putRaw(KEY, body)
      const error = await rejection(leaseOf(contender('a').tryAcquire()))
      expect(error).toBeInstanceOf(LockConflictError)
      expect(error).toMatchObject({ reason: 'record-too-large' })
      expect(await operatorFor(contender('a')).inspect()).toMatchObject({
        token: 3,
        held: false,
        blocked: 'record-too-large',
      })
      expect(store.peek(KEY)).toBe(body)
      expect(writes()).toBe(0)
    })

    it('agrees in inspect and in acquire on where a record stops leaving room for an acquisition', async () => {
      const { contender, store } = setup()
      let fits = 0
      for (let bytes = MAX_RECORD_BYTES - 200; bytes <= MAX_RECORD_BYTES; bytes += 4) {
        store.putRaw(KEY, recordOfSize(bytes))
        const lock = contender('a')
        const info = await operatorFor(lock).inspect()
        const acquired = await leaseOf(lock.tryAcquire()).then(
          (lease) => lease !== null,
          (error: unknown) => {
            expect(error).toMatchObject({ reason: 'record-too-large' })
            return false
          },
        )
        expect(info?.blocked === undefined, `a record of ${bytes} bytes`).toBe(acquired)
        if (acquired) fits++
      }
      // The range spans the boundary: some sizes fit and some do not.
      expect(fits).toBeGreaterThan(0)
      expect(fits).toBeLessThan(51)
    })

    it('says nothing of blocking for an ordinary record', async () => {
      const { contender } = setup()
      await leaseOf(contender('a').tryAcquire())
      const info = await operatorFor(contender('b')).inspect()
      expect(info).not.toHaveProperty('blocked')
    })

    it('reports a lock whose tokens are exhausted as blocked in inspect', async () => {
      const { contender, put } = setup()
      put({ token: LAST_TOKEN })
      expect(await operatorFor(contender('a')).inspect()).toMatchObject({
        held: false,
        blocked: 'tokens-exhausted',
      })
    })
  })
})
