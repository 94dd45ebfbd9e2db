import { describe, expect, it } from 'vitest'
import type { LockRecord } from '../../lib/core/record.js'
import type {
  LockStore,
  ReadResult,
  StoreCallOptions,
  TakeRequest,
  TakeResult,
  WriteResult,
} from '../../lib/core/store.js'
import { Lock, LockLostError, LockStoreError } from '../../lib/index.js'
import { MemoryLockStore } from '../../lib/memory/index.js'
import { ManualClock } from '../support/sim-clock.js'

/**
 * A store that takes a released lock in one request (`LockStore.take`, DynamoDB's UpdateItem):
 * a lock without a record of its own in hand takes instead of reading, and hands out the taken
 * lease's token only once its raise has put one from the store's clock in the record
 * (docs/guarantees.md, I2).
 */
const KEY = 'jobs/taken'

/** The memory store, taking, with a count of every call and a switch to lose take answers. */
class TakingStore implements LockStore {
  readonly memory: MemoryLockStore
  readonly clockResolutionMs = 1_000
  readonly calls: string[] = []
  /** Takes to apply and then answer with a timeout, as a lost answer does. */
  loseTakeAnswers = 0
  /** Replaces wait for this before they reach the store. */
  gate: Promise<void> = Promise.resolve()

  constructor(clock: ManualClock) {
    this.memory = new MemoryLockStore({ clock, clockResolutionMs: 1_000, takes: true })
  }

  read(key: string, options?: StoreCallOptions): Promise<ReadResult> {
    this.calls.push('read')
    return this.memory.read(key, options)
  }

  create(key: string, body: string, options?: StoreCallOptions): Promise<WriteResult> {
    this.calls.push('create')
    return this.memory.create(key, body, options)
  }

  async replace(key: string, body: string, etag: string, options?: StoreCallOptions): Promise<WriteResult> {
    this.calls.push('replace')
    await this.gate
    return this.memory.replace(key, body, etag, options)
  }

  async take(key: string, take: TakeRequest, options?: StoreCallOptions): Promise<TakeResult> {
    this.calls.push('take')
    const taking = this.memory.take
    if (!taking) throw new Error('the memory store does not take')
    const result = await taking.call(this.memory, key, take, options)
    if (this.loseTakeAnswers > 0) {
      this.loseTakeAnswers--
      throw new LockStoreError('the answer was lost', { key, retryable: true })
    }
    return result
  }

  record(): LockRecord {
    const body = this.memory.peek(KEY)
    if (body === undefined) throw new Error('no record')
    return JSON.parse(body) as LockRecord
  }
}

function setup() {
  const clock = new ManualClock()
  const store = new TakingStore(clock)
  const lock = (owner = 'run-b') =>
    new Lock({ store, key: KEY, owner, ttlMs: 60_000, clockSkewMarginMs: 1_000, clock, random: () => 0.5 })
  /** A record released by an earlier run, with `token`, as another process left it. */
  const released = (token: number, fields: Record<string, unknown> = {}) =>
    store.memory.putRaw(
      KEY,
      JSON.stringify({ v: 1, token, run: 4, expires_at: 0, owner: 'run-a', state: { page: 7 }, ...fields }),
    )
  return { clock, store, lock, released }
}

describe('a lock on a store that takes', () => {
  it('takes a released lock in one request, and hands the lease out as it lands', async () => {
    const { clock, store, lock, released } = setup()
    released(1_700_000_000_000)
    const result = await clock.run(lock().tryAcquire())
    expect(result.status).toBe('acquired')
    expect(store.calls[0]).toBe('take')
    expect(store.calls).not.toContain('read')
    if (result.status === 'acquired') await clock.run(result.lease.release())
  })

  it("sends the raise only once the holder's code has had its turn: the lease comes first", async () => {
    const { clock, store, lock, released } = setup()
    released(1_700_000_000_000)
    const result = await clock.run(lock().tryAcquire())
    if (result.status !== 'acquired') throw new Error(`expected the lock, got ${result.status}`)
    // The holder's code runs on from here, before a byte of the raise is built or sent.
    expect(store.calls).toEqual(['take'])
    await clock.run(clock.sleep(0))
    expect(store.calls).toEqual(['take', 'replace'])
    expect(result.lease.recordedToken).toBeGreaterThan(1_700_000_000_001)
    await clock.run(result.lease.release())
  })

  it('raises before any other write of the lease, even one made before the raise was sent', async () => {
    const { clock, store, lock, released } = setup()
    released(1_700_000_000_000)
    const result = await clock.run(lock().tryAcquire())
    if (result.status !== 'acquired') throw new Error(`expected the lock, got ${result.status}`)
    await clock.run(result.lease.release()) // a handler that returned at once
    expect(store.calls).toEqual(['take', 'replace', 'replace'])
    expect(store.record()).toMatchObject({ owner: 'run-b', expires_at: 0 })
    expect(store.record().token).toBeGreaterThan(1_700_000_000_001)
    await clock.run(clock.sleep(1_000))
    expect(store.calls).toHaveLength(3)
    expect(clock.pending).toBe(0)
  })

  it('keeps what the record held: the checkpoint, and the run count raised by one', async () => {
    const { clock, store, lock, released } = setup()
    released(1_700_000_000_000)
    const result = await clock.run(lock().tryAcquire())
    if (result.status !== 'acquired') throw new Error(`expected the lock, got ${result.status}`)
    await clock.run(result.lease.fencingToken())
    expect(store.record()).toMatchObject({ state: { page: 7 }, run: 5, owner: 'run-b' })
    await clock.run(result.lease.release())
  })

  it("raises the token from the store's clock before it hands it out", async () => {
    const { clock, store, lock, released } = setup()
    released(1_700_000_000_000)
    const result = await clock.run(lock().tryAcquire())
    if (result.status !== 'acquired') throw new Error(`expected the lock, got ${result.status}`)
    const token = await clock.run(result.lease.fencingToken())
    expect(token).toBeGreaterThan(1_700_000_000_001)
    expect(token).toBeGreaterThanOrEqual(clock.now() - 1_000)
    expect(store.record().token).toBe(token)
    expect(clock.now()).toBeGreaterThan(token)
    await clock.run(result.lease.release())
  })

  it("chooses the raised token by the store's clock as the take was sent: a slow answer does not add to its wait", async () => {
    const { clock, store, lock, released } = setup()
    released(1_000)
    await clock.advance(300) // 300 ms past the store's second
    const take = store.take.bind(store)
    // The take lands as it is sent, and its answer takes 400 ms to come back.
    store.take = async (key, request, options) => {
      const result = await take(key, request, options)
      await clock.sleep(400)
      return result
    }
    const sentAt = clock.now()
    const result = await clock.run(lock().tryAcquire())
    if (result.status !== 'acquired') throw new Error(`expected the lock, got ${result.status}`)
    const token = await clock.run(result.lease.fencingToken())
    // All the answer says is that the store's clock read its second (sentAt - 300) when it
    // landed: at most the turn of that second as the take was sent (and the drift allowed over
    // 400 ms: under a ms), 400 ms more by the answer.
    const turn = sentAt - 300 + 1_000
    expect(token).toBeGreaterThanOrEqual(turn)
    expect(token).toBeLessThanOrEqual(turn + 1)
    await clock.run(result.lease.release())
  })

  it('hands out a token above every one handed out before, after an older record was written back', async () => {
    const { clock, store, lock, released } = setup()
    released(1_000) // an old record, token 1000
    const old = store.memory.peek(KEY) as string
    // A run on another process takes it the usual way, and is handed a token from the clock.
    const first = await clock.run(lock('run-x').tryAcquire())
    if (first.status !== 'acquired') throw new Error(`expected the lock, got ${first.status}`)
    const handedOut = await clock.run(first.lease.fencingToken())
    await clock.run(first.lease.release())
    // Someone restores the old record from a backup.
    store.memory.putRaw(KEY, old)
    let open = () => {}
    store.gate = new Promise<void>((resolve) => {
      open = resolve
    })
    const second = await clock.run(lock('run-y').tryAcquire())
    if (second.status !== 'acquired') throw new Error(`expected the lock, got ${second.status}`)
    expect(store.record().token).toBe(1_001) // taken blind: the old token plus one
    open()
    expect(await clock.run(second.lease.fencingToken())).toBeGreaterThan(handedOut)
    await clock.run(second.lease.release())
  })

  it('says the lock is held, after one request, when another run holds it', async () => {
    const { clock, store, lock, released } = setup()
    released(1_700_000_000_000, { expires_at: (clock.now() + 30_000) / 1000, owner: 'run-a' })
    expect(await clock.run(lock().tryAcquire())).toMatchObject({ status: 'held', holder: { owner: 'run-a' } })
    expect(store.calls).toEqual(['take'])
  })

  it('skips a paused job without writing', async () => {
    const { clock, store, lock, released } = setup()
    released(1_700_000_000_000, { v: 2, paused: { by: 'ops', at: 1 } })
    const skipIf = (record: LockRecord) => record.paused !== undefined
    expect(await clock.run(lock().tryAcquire({ skipIf }))).toMatchObject({ status: 'skipped' })
    expect(store.calls).toEqual(['take'])
  })

  it('creates a record where there is none', async () => {
    const { clock, store, lock } = setup()
    const result = await clock.run(lock().tryAcquire())
    expect(result.status).toBe('acquired')
    expect(store.calls.slice(0, 2)).toEqual(['take', 'create'])
  })

  it('puts back the record it took when the run is to be skipped (its tick already ran)', async () => {
    const { clock, store, lock, released } = setup()
    released(1_700_000_000_000, { last_run: 'tick-9' })
    const before = store.record()
    const skipIf = (record: LockRecord) => record.last_run === 'tick-9'
    const result = await clock.run(lock().tryAcquire({ skipIf, tick: 'tick-9' }))
    expect(result).toMatchObject({ status: 'skipped', record: { owner: 'run-a', token: 1_700_000_000_000 } })
    expect(store.record()).toEqual(before)
  })

  it.each([
    ['an owner that is a number', { owner: 42 }],
    ['a history that is text', { history: 'oops' }],
  ])(
    'gives back a record no reader takes (%s), as it was, and refuses it as a read would',
    async (_, fields) => {
      const { clock, store, lock, released } = setup()
      released(1_700_000_000_000, fields)
      const before = store.memory.peek(KEY)
      await expect(clock.run(lock().tryAcquire())).rejects.toMatchObject({ name: 'LockCorruptedError' })
      expect(store.memory.peek(KEY)).toBe(before)
    },
  )

  it('counts a take whose answer was lost as landed when its retry finds it', async () => {
    const { clock, store, lock, released } = setup()
    released(1_700_000_000_000)
    store.loseTakeAnswers = 1
    const result = await clock.run(lock().tryAcquire())
    if (result.status !== 'acquired') throw new Error(`expected the lock, got ${result.status}`)
    expect(store.calls.slice(0, 2)).toEqual(['take', 'take'])
    expect(store.record().owner).toBe('run-b')
    expect(await clock.run(result.lease.fencingToken())).toBeGreaterThan(1_700_000_000_001)
    await clock.run(result.lease.release())
    expect(store.record().expires_at).toBe(0)
  })

  it('never hands out the taken token when the lease was force-released before its raise', async () => {
    const { clock, store, lock, released } = setup()
    released(1_700_000_000_000)
    let open = () => {}
    store.gate = new Promise<void>((resolve) => {
      open = resolve
    })
    const result = await clock.run(lock().tryAcquire())
    if (result.status !== 'acquired') throw new Error(`expected the lock, got ${result.status}`)
    // Before the raise lands, the record changes under it (an operator, from outside).
    const forced = { ...store.record(), expires_at: 0, owner: 'operator', token: 1_800_000_000_500 }
    store.memory.putRaw(KEY, JSON.stringify(forced))
    open()
    const error = await clock.run(result.lease.fencingToken()).catch((e: unknown) => e)
    expect(error).toBeInstanceOf(LockLostError)
  })

  it('writes the tick it runs for with the raised token, so a newer tick may replace it', async () => {
    const { clock, store, lock, released } = setup()
    released(1_700_000_000_000)
    const result = await clock.run(lock().tryAcquire({ tick: 'tick-10', watchMs: 5_000 }))
    if (result.status !== 'acquired') throw new Error(`expected the lock, got ${result.status}`)
    const token = await clock.run(result.lease.fencingToken())
    expect(store.record().running).toEqual({ token, tick: 'tick-10', watch_ms: 5_000 })
    await clock.run(result.lease.release())
  })
})

describe('a taken lease held to a fixed end, on a host whose clock is behind the store', () => {
  /** The store's clock: 20 s ahead of the host's, which stamps a take made before any answer. */
  const AHEAD_MS = 20_000

  it("ends by the store's clock, not the host's, while its raise has yet to land", async () => {
    const clock = new ManualClock()
    const storeClock = {
      now: () => clock.now() + AHEAD_MS,
      sleep: (ms: number, signal?: AbortSignal) => clock.sleep(ms, signal),
      schedule: (ms: number, callback: () => void) => clock.schedule(ms, callback),
    }
    const memory = new MemoryLockStore({ clock: storeClock, clockResolutionMs: 1_000, takes: true })
    memory.putRaw(KEY, JSON.stringify({ v: 1, token: 1_700_000_000_000, expires_at: 0, owner: 'run-a' }))
    // The host's raise does not get through (a network that drops its writes for a while).
    const host: LockStore = {
      clockResolutionMs: 1_000,
      read: (key, options) => memory.read(key, options),
      create: (key, body, options) => memory.create(key, body, options),
      replace: () => new Promise<WriteResult>(() => {}),
      take: (key, take, options) =>
        (memory.take as NonNullable<LockStore['take']>).call(memory, key, take, options),
    }
    const options = { key: KEY, ttlMs: 60_000, clockSkewMarginMs: 1_000, random: () => 0.5 }
    const first = await clock.run(
      new Lock({ ...options, store: host, owner: 'run-b', clock }).tryAcquire({
        holdUntil: clock.now() + 60_000,
      }),
    )
    if (first.status !== 'acquired') throw new Error(`expected the lock, got ${first.status}`)
    // The take stamped its end by the host's clock: 40 s from now by the store's. Past it, and
    // past the margin, a run on a host whose clock agrees with the store's takes the lock over.
    await clock.run(clock.sleep(45_000))
    const second = await clock.run(
      new Lock({ ...options, store: memory, owner: 'run-c', clock: storeClock }).tryAcquire(),
    )
    expect(second.status).toBe('acquired')
    // Two holders at once, unless the first knows its lease is over.
    expect(first.lease.remainingMs).toBeLessThanOrEqual(0)
  })
})
