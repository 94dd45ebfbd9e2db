import { describe, expect, it } from 'vitest'
import {
  type HistoryEntry,
  type LockRecord,
  MAX_RECORD_BYTES,
  MAX_STATE_BYTES,
  parseRecord,
  serializeRecord,
  withHistory,
} from '../../lib/core/record.js'
import { Lock, LockCorruptedError, LockOptionsError } from '../../lib/index.js'
import { MemoryLockStore } from '../../lib/memory/index.js'
import { leaseOf } from '../support/lease-of.js'
import { SimTime } from '../support/sim-clock.js'

const KEY = 'jobs/history'

function setup(historySize = 10, owner = 'job/1') {
  const time = new SimTime()
  const store = new MemoryLockStore({ clock: time.serverClock, clockResolutionMs: 1_000 })
  const lock = (name = owner) =>
    new Lock({
      store,
      key: KEY,
      owner: name,
      ttlMs: 10_000,
      clockSkewMarginMs: 1_000,
      historySize,
      clock: time.localClock(),
    })
  const record = (): LockRecord => JSON.parse(store.peek(KEY) ?? 'null')
  return { time, store, lock, record }
}

const entry = (token: number, fields: Partial<HistoryEntry> = {}): HistoryEntry => ({
  token,
  owner: 'job/1',
  started: 1_800_000_000,
  ended: 1_800_000_001.5,
  outcome: 'completed',
  ...fields,
})
const base = { v: 1, token: 5, expires_at: 0, owner: 'job/1' }

describe('the history field of the record', () => {
  it('reads records without it, and with entries of every outcome, a newer outcome and newer entry fields included', () => {
    expect(parseRecord(JSON.stringify(base), KEY)).not.toHaveProperty('history')
    const history = [
      entry(1, { tick: '2026-11-21T03:00:00Z' }),
      entry(2, { outcome: 'failed' }),
      entry(3, { outcome: 'abandoned' }),
      entry(4, { outcome: 'lost' }),
      entry(5, { outcome: 'cancelled', note: 'from a newer release' }),
    ]
    expect(parseRecord(JSON.stringify({ ...base, history }), KEY).history).toEqual(history)
    expect(parseRecord(JSON.stringify({ ...base, history: [] }), KEY).history).toEqual([])
  })

  it.each([
    ['not an array', { token: 1 }],
    ['an entry that is not an object', [1]],
    ['an entry without a token', [{ ...entry(1), token: undefined }]],
    ['a negative token', [entry(-1)]],
    ['a fractional token', [entry(1.5)]],
    ['an owner that is not a string', [entry(1, { owner: 7 as unknown as string })]],
    ['a tick that is not a string', [entry(1, { tick: 7 as unknown as string })]],
    ['a start that is not a number', [entry(1, { started: '1800000000' as unknown as number })]],
    ['a negative end', [entry(1, { ended: -1 })]],
    ['no outcome', [{ ...entry(1), outcome: undefined }]],
    ['an array as an entry', [[entry(1)]]],
  ])('refuses a history that is %s as a corrupted record', (_, history) => {
    const raw = JSON.stringify({ ...base, history })
    expect(() => parseRecord(raw, KEY)).toThrow(LockCorruptedError)
    expect(() => parseRecord(raw, KEY)).toThrow(/"history" has a wrong type/)
  })

  it('withHistory keeps the last n entries, oldest first, and leaves the record alone with 0', () => {
    let record: LockRecord = { ...base, v: 1 }
    for (let token = 1; token <= 4; token++) record = withHistory(record, entry(token), 3)
    expect(record.history?.map((e) => e.token)).toEqual([2, 3, 4])
    expect(withHistory(record, entry(9), 0)).toBe(record)
    // A smaller size trims at the next append.
    expect(withHistory(record, entry(5), 2).history?.map((e) => e.token)).toEqual([4, 5])
  })

  it('withHistory drops the oldest entries, down to none, so that the record stays within MAX_RECORD_BYTES', () => {
    const pad = 'p'.repeat(MAX_RECORD_BYTES - 3_000)
    let record: LockRecord = { ...base, v: 1, pad }
    const big = (token: number) => entry(token, { owner: 'o'.repeat(900) })
    for (let token = 1; token <= 10; token++) record = withHistory(record, big(token), 10)
    expect(Buffer.byteLength(serializeRecord(record))).toBeLessThanOrEqual(MAX_RECORD_BYTES)
    const kept = record.history ?? []
    expect(kept.map((e) => e.token)).toEqual([9, 10])
    // One more would not have fitted.
    expect(Buffer.byteLength(serializeRecord({ ...record, history: [big(8), ...kept] }))).toBeGreaterThan(
      MAX_RECORD_BYTES,
    )
    const full: LockRecord = { ...base, v: 1, pad: 'p'.repeat(MAX_RECORD_BYTES - 100) }
    expect(withHistory(full, big(11), 10)).not.toHaveProperty('history')
  })
})

describe('the runs a lock records', () => {
  it('a release with an outcome adds its run, with its start and its end by the store clock; one without adds none', async () => {
    const { time, lock, record } = setup()
    const a = lock()
    const lease = await leaseOf(a.tryAcquire())
    time.advance(2_000)
    await lease?.release({ outcome: 'completed', tick: 't1' })
    expect(record().history).toEqual([
      {
        token: lease?.token,
        tick: 't1',
        owner: 'job/1',
        started: lease?.record.acquired_at,
        ended: expect.any(Number),
        outcome: 'completed',
      },
    ])
    const [run] = record().history ?? []
    // 2 s, as far as a store clock that tells whole seconds lets the ends be known.
    expect((run?.ended ?? 0) - (run?.started ?? 0)).toBeGreaterThanOrEqual(1)
    expect((run?.ended ?? 0) - (run?.started ?? 0)).toBeLessThanOrEqual(3)
    await (await leaseOf(a.tryAcquire()))?.release()
    expect(record().history).toHaveLength(1)
  })

  it('a lease that ran out unrenewed and frees the record itself records its run as lost', async () => {
    const { time, lock, record } = setup()
    const lease = await leaseOf(lock().tryAcquire())
    time.advance(9_500)
    await expect(lease?.release({ outcome: 'completed', tick: 't1' })).rejects.toMatchObject({
      reason: 'expired',
    })
    expect(record()).toMatchObject({
      expires_at: 0,
      history: [{ token: lease?.token, tick: 't1', outcome: 'lost' }],
    })
  })

  it('an acquisition over a lease never released records it as abandoned; over a released one, nothing', async () => {
    const { time, lock, record } = setup()
    const crashed = await leaseOf(lock('crashed/1').tryAcquire())
    const held = record()
    time.advance(20_000)
    const next = await leaseOf(lock('job/2').tryAcquire())
    expect(record().history).toEqual([
      {
        token: crashed?.token,
        owner: 'crashed/1',
        started: held.acquired_at,
        ended: held.expires_at,
        outcome: 'abandoned',
      },
    ])
    await next?.release()
    await leaseOf(lock('job/3').tryAcquire())
    expect(record().history).toHaveLength(1)
  })

  it('runExclusive records its routine as completed or failed', async () => {
    const { lock, record } = setup()
    const a = lock()
    await a.runExclusive(async () => 'ok')
    await expect(
      a.runExclusive(async () => {
        throw new Error('boom')
      }),
    ).rejects.toThrow('boom')
    expect(record().history?.map((e) => e.outcome)).toEqual(['completed', 'failed'])
  })

  it('a Lock keeps no history by default', async () => {
    const { store, time, record } = setup()
    const plain = new Lock({ store, key: KEY, owner: 'p', clock: time.localClock() })
    await (await leaseOf(plain.tryAcquire()))?.release({ outcome: 'completed' })
    expect(record()).not.toHaveProperty('history')
  })

  it('refuses a historySize that is not a whole number of runs from 0 to 100', () => {
    const store = new MemoryLockStore()
    for (const historySize of [-1, 2.5, 101, Number.POSITIVE_INFINITY]) {
      expect(() => new Lock({ store, key: KEY, historySize })).toThrow(LockOptionsError)
    }
    expect(() => new Lock({ store, key: KEY, historySize: 0 })).not.toThrow()
  })

  it('a full history beside the largest checkpoint still writes, whole with an ordinary owner', async () => {
    const { lock, record, store } = setup(10, 'nightly-report/6f1c2a4e-1d2b-4c5e-9f00-123456789abc')
    const a = lock()
    const checkpoint = 'c'.repeat(MAX_STATE_BYTES - 2) // a JSON string of MAX_STATE_BYTES bytes
    for (let n = 1; n <= 12; n++) {
      const lease = await leaseOf(a.tryAcquire())
      if (n === 1) await lease?.saveCheckpoint(checkpoint)
      // Failed runs keep their checkpoint.
      await lease?.release({ outcome: 'failed', tick: `2026-11-21T${String(n).padStart(2, '0')}:00:00.000Z` })
    }
    expect(record().state).toBe(checkpoint)
    expect(record().history).toHaveLength(10)
    expect(Buffer.byteLength(store.peek(KEY) ?? '')).toBeLessThanOrEqual(MAX_RECORD_BYTES)
  })

  it('with the longest owner, the largest checkpoint and a full history, it keeps as many runs as fit, newest last', async () => {
    const { lock, record, store } = setup(10, 'o'.repeat(1024))
    const a = lock()
    let last = 0
    for (let n = 1; n <= 12; n++) {
      const lease = await leaseOf(a.tryAcquire())
      if (n === 1) await lease?.saveCheckpoint('c'.repeat(MAX_STATE_BYTES - 2))
      await lease?.release({ outcome: 'failed', tick: 'x'.repeat(200) })
      last = lease?.token ?? 0
    }
    const size = Buffer.byteLength(store.peek(KEY) ?? '')
    expect(size).toBeLessThanOrEqual(MAX_RECORD_BYTES)
    const history = record().history ?? []
    expect(history.length).toBeGreaterThan(0)
    expect(history.length).toBeLessThan(10)
    expect(history.at(-1)?.token).toBe(last)
  })
})
