import { describe, expect, it } from 'vitest'
import { parseRecord } from '../../lib/core/parse-record.js'
import {
  type HistoryEntry,
  type LockRecord,
  MAX_RECORD_BYTES,
  MAX_STATE_BYTES,
  serializeRecord,
  withinRecordSize,
} from '../../lib/core/record.js'
import { Lock, LockCorruptedError, LockOptionsError } from '../../lib/index.js'
import { MemoryLockStore } from '../../lib/memory/index.js'
import { HISTORY_HEADROOM_BYTES, keepHistory, withHistory } from '../../lib/schedule/history.js'
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
      recordRun: keepHistory(historySize),
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

  it('withHistory drops the oldest entries, down to none, leaving room under MAX_RECORD_BYTES for the next write', () => {
    const pad = 'p'.repeat(MAX_RECORD_BYTES - 4_000)
    let record: LockRecord = { ...base, v: 1, pad }
    const big = (token: number) => entry(token, { owner: 'o'.repeat(900) })
    for (let token = 1; token <= 10; token++) record = withHistory(record, big(token), 10)
    const room = MAX_RECORD_BYTES - HISTORY_HEADROOM_BYTES
    expect(Buffer.byteLength(serializeRecord(record))).toBeLessThanOrEqual(room)
    const kept = record.history ?? []
    expect(kept.map((e) => e.token)).toEqual([9, 10])
    // One more would not have left the room.
    expect(Buffer.byteLength(serializeRecord({ ...record, history: [big(8), ...kept] }))).toBeGreaterThan(
      room,
    )
    const full: LockRecord = { ...base, v: 1, pad: 'p'.repeat(MAX_RECORD_BYTES - 100) }
    expect(withHistory(full, big(11), 10)).not.toHaveProperty('history')
  })

  it('withinRecordSize drops exactly as many of the oldest entries as the limit needs, and nothing else', () => {
    const record: LockRecord = {
      ...base,
      v: 1,
      state: 's'.repeat(1_000),
      cursor: 7,
      history: [1, 2, 3, 4].map((t) => entry(t)),
    }
    const size = (r: LockRecord) => Buffer.byteLength(serializeRecord(r))
    expect(withinRecordSize(record, size(record))).toBe(record)
    for (const dropped of [1, 2, 3]) {
      const smaller = { ...record, history: record.history?.slice(dropped) }
      expect(withinRecordSize(record, size(smaller))).toEqual(smaller)
      expect(withinRecordSize(record, size(smaller) - 1).history?.length ?? 0).toBe(3 - dropped)
    }
    const { history: _history, ...without } = record
    expect(withinRecordSize(record, size(without as LockRecord))).toEqual(without)
    // Too large without any history: left as it is, for the write to refuse.
    expect(withinRecordSize(record, 10)).toEqual(without)
    expect(withinRecordSize(without as LockRecord, 10)).toBe(without)
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
        token: lease?.record.token,
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
      history: [{ token: lease?.record.token, tick: 't1', outcome: 'lost' }],
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
        token: crashed?.record.token,
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

  it('refuses a history size that is not a whole number of runs from 0 to 100', () => {
    for (const size of [-1, 2.5, 101, Number.POSITIVE_INFINITY, Number.NaN]) {
      expect(() => keepHistory(size)).toThrow(LockOptionsError)
    }
    expect(() => keepHistory(0)).not.toThrow()
    expect(() => keepHistory(100)).not.toThrow()
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
      last = lease?.record.token ?? 0
    }
    const size = Buffer.byteLength(store.peek(KEY) ?? '')
    expect(size).toBeLessThanOrEqual(MAX_RECORD_BYTES)
    const history = record().history ?? []
    expect(history.length).toBeGreaterThan(0)
    expect(history.length).toBeLessThan(10)
    expect(history.at(-1)?.token).toBe(last)
  })
})

describe('history never wedges a lock', () => {
  it('thirty runs with a checkpoint near the largest, the longest owners and long ticks are never refused, and keep their checkpoint and cursor', async () => {
    const { time, lock, record, store } = setup(10)
    const checkpoint = 'c'.repeat(MAX_STATE_BYTES - 2)
    const cursor = { next: 'k'.repeat(200) }
    // Ticks and owners of every length up to the longest, so that history is trimmed at every
    // granularity: a run whose acquisition adds a few bytes more than the last release left.
    const tick = (n: number) => `2026-11-21T03:00:00.000Z/${'t'.repeat((n * 97) % 400)}`
    const owner = (n: number) => `run-${n}/`.padEnd(n % 5 === 0 ? 1024 : 40 + ((n * 131) % 300), 'o')
    for (let n = 1; n <= 30; n++) {
      const lease = await leaseOf(lock(owner(n)).tryAcquire({ tick: tick(n) }))
      if (!lease) throw new Error(`run ${n} was not acquired`)
      if (n === 1) await lease.saveCursor(cursor)
      await lease.saveCheckpoint(checkpoint)
      await lease.renew()
      if (n % 3 === 0) {
        // A crashed run: the next acquisition records it as abandoned, in its own write.
        time.advance(20_000)
        continue
      }
      await lease.release({ outcome: 'failed', tick: tick(n) })
    }
    const last = await leaseOf(lock(owner(31)).tryAcquire({ tick: tick(31) }))
    expect(last).not.toBeNull()
    expect(record()).toMatchObject({ state: checkpoint, cursor })
    expect(record().history?.length).toBeGreaterThan(0)
    expect(Buffer.byteLength(store.peek(KEY) ?? '')).toBeLessThanOrEqual(MAX_RECORD_BYTES)
  })

  it('an acquisition over a record a release filled to the cap trims history rather than fail', async () => {
    const { lock, record, store } = setup(10)
    // As a release of an earlier version left it: history up to exactly the cap.
    const full = withHistory(
      { ...base, v: 1, state: 's'.repeat(MAX_STATE_BYTES - 2) },
      entry(1, { owner: 'o'.repeat(1024) }),
      10,
    )
    let filled = full
    for (let token = 2; Buffer.byteLength(serializeRecord(filled)) < MAX_RECORD_BYTES - 200; token++) {
      filled = { ...filled, history: [...(filled.history ?? []), entry(token, { owner: 'o'.repeat(600) })] }
    }
    store.putRaw(KEY, serializeRecord(filled))
    const lease = await leaseOf(lock('o'.repeat(1024)).tryAcquire({ tick: 't'.repeat(100) }))
    expect(lease).not.toBeNull()
    expect(record().state).toBe(filled.state)
    await lease?.saveCheckpoint('s'.repeat(MAX_STATE_BYTES - 2))
    await lease?.release({ outcome: 'completed', tick: 't'.repeat(100) })
    expect(Buffer.byteLength(store.peek(KEY) ?? '')).toBeLessThanOrEqual(MAX_RECORD_BYTES)
    expect(record().history?.at(-1)).toMatchObject({ token: lease?.record.token, outcome: 'completed' })
  })

  it('a checkpoint of the largest size is written over a full history of long runs, the oldest runs making room', async () => {
    const { lock, record } = setup(10)
    for (let n = 1; n <= 10; n++) {
      const lease = await leaseOf(lock(`run-${n}/`.padEnd(1024, 'o')).tryAcquire())
      await lease?.release({ outcome: 'completed', tick: 't'.repeat(1_000) })
    }
    expect(record().history).toHaveLength(10)
    const lease = await leaseOf(lock('big').tryAcquire())
    const checkpoint = 'c'.repeat(MAX_STATE_BYTES - 2)
    await lease?.saveCheckpoint(checkpoint)
    await lease?.renew()
    await lease?.release({ outcome: 'failed' })
    expect(record().state).toBe(checkpoint)
    expect(record().history?.at(-1)).toMatchObject({ owner: 'big', outcome: 'failed' })
  })
})
