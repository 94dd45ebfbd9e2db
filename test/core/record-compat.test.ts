import { describe, expect, it, vi } from 'vitest'
import { type LockRecord, serializeRecord } from '../../lib/core/record.js'
import { Lock, LockCorruptedError } from '../../lib/index.js'
import { MemoryLockStore } from '../../lib/memory/index.js'
import { withSchedule } from '../../lib/schedule/fields.js'
import { leaseOf } from '../support/lease-of.js'
import { operatorFor } from '../support/operator-for.js'
import { SimTime } from '../support/sim-clock.js'
import { parseRecord as parseRecord10 } from './fixtures/record-1.0.js'

// In this file the Lock reads records as release 1.0 did: an old function, still deployed
// beside the new one (a rolling deploy, another region, a rollback), meeting what this release
// writes. Everything else (serializeRecord, withSchedule) is this release's.
vi.mock('../../lib/core/parse-record.js', async (importOriginal) => {
  const actual = await importOriginal<typeof import('../../lib/core/parse-record.js')>()
  const old = await import('./fixtures/record-1.0.js')
  return { ...actual, parseRecord: old.parseRecord }
})

const KEY = 'locks/nightly'

function setup() {
  const time = new SimTime()
  const store = new MemoryLockStore({ clock: time.serverClock, clockResolutionMs: 1_000 })
  const oldReader = new Lock({ store, key: KEY, owner: 'old/1', clock: time.localClock() })
  const released = (fields: Partial<LockRecord> = {}): LockRecord => ({
    v: 1,
    token: time.now - 60_000,
    run: 7,
    expires_at: 0,
    owner: 'new/1',
    ...fields,
  })
  return { time, store, oldReader, released }
}

describe('records of this release, read by release 1.0', () => {
  it('a paused record is version 2, which 1.0 refuses: it neither runs the job nor writes over the pause', async () => {
    const { store, oldReader, released } = setup()
    const paused = withSchedule(released(), { paused: { by: 'alice', at: 1_800_000_000, note: 'migration' } })
    const body = serializeRecord(paused)
    expect(JSON.parse(body).v).toBe(2)
    store.putRaw(KEY, body)
    const writes = store.requests.create + store.requests.replace
    const error = await oldReader.tryAcquire().catch((e: unknown) => e)
    expect(error).toBeInstanceOf(LockCorruptedError)
    expect((error as Error).message).toMatch(/"v" is 2, expected 1.*Nothing was written/)
    await expect(operatorFor(oldReader).forceRelease()).rejects.toBeInstanceOf(LockCorruptedError)
    expect(store.peek(KEY)).toBe(body)
    expect(store.requests.create + store.requests.replace).toBe(writes) // not even tried
    expect(() => parseRecord10(body, KEY)).toThrow(LockCorruptedError)
  })

  it('why the version: a paused field in a version 1 record would be kept by 1.0, but not obeyed', async () => {
    const { store, oldReader, released } = setup()
    store.putRaw(KEY, JSON.stringify({ ...released(), paused: { by: 'alice', at: 1_800_000_000 } }))
    const lease = await leaseOf(oldReader.tryAcquire())
    expect(lease).not.toBeNull() // the old reader runs the job
    await lease?.release()
    expect(JSON.parse(store.peek(KEY) ?? '')).toMatchObject({ paused: { by: 'alice' }, run: 8 })
  })

  it('an unpaused record stays version 1: 1.0 runs it, keeping the count of failed runs as it found it', async () => {
    const { store, oldReader, released } = setup()
    const failing = serializeRecord(withSchedule(released(), { failures: 2, failed_run: 7 }))
    expect(JSON.parse(failing).v).toBe(1)
    store.putRaw(KEY, failing)
    const lease = await leaseOf(oldReader.tryAcquire())
    await lease?.release()
    // Kept, not cleared: but run 8 (the old reader's) breaks the row, so this release counts afresh.
    expect(JSON.parse(store.peek(KEY) ?? '')).toMatchObject({ v: 1, failures: 2, failed_run: 7, run: 8 })
  })

  it('a record with a history stays version 1: 1.0 reads it, runs the job and keeps the history as it found it', async () => {
    const { store, oldReader, released } = setup()
    const history = [
      {
        token: 3,
        tick: '2026-11-21T03:00:00Z',
        owner: 'new/1',
        started: 1_800_000_000,
        ended: 1_800_000_002,
        outcome: 'completed',
      },
      { token: 4, owner: 'new/2', started: 1_800_000_100, ended: 1_800_000_160, outcome: 'abandoned' },
    ]
    const body = serializeRecord(released({ history }))
    expect(JSON.parse(body).v).toBe(1)
    expect(parseRecord10(body, KEY).history).toEqual(history)
    store.putRaw(KEY, body)
    const lease = await leaseOf(oldReader.tryAcquire())
    await lease?.release()
    // 1.0 adds no run of its own (it knows no history), and drops none.
    expect(JSON.parse(store.peek(KEY) ?? '')).toMatchObject({ v: 1, run: 8, owner: 'old/1', history })
  })

  it('a resumed record is version 1 again, which 1.0 reads', async () => {
    const { released } = setup()
    const paused = withSchedule(released(), { paused: { by: 'alice', at: 1 }, failures: 3, failed_run: 7 })
    const resumed = withSchedule(paused, { paused: null, failures: null, failed_run: null })
    expect(parseRecord10(serializeRecord(resumed), KEY)).toEqual(released())
  })
})
