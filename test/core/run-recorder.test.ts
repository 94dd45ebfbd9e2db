import { describe, expect, it, vi } from 'vitest'
import type { RunRecorder } from '../../lib/core/lock-options.js'
import type { HistoryEntry, LockRecord } from '../../lib/core/record.js'
import { Lock, LockOptionsError } from '../../lib/index.js'
import { MemoryLockStore } from '../../lib/memory/index.js'
import { leaseOf } from '../support/lease-of.js'
import { SimTime } from '../support/sim-clock.js'

const KEY = 'jobs/recorded'

function setup(recordRun: RunRecorder) {
  const time = new SimTime()
  const store = new MemoryLockStore({ clock: time.serverClock, clockResolutionMs: 1_000 })
  const lock = (owner: string) =>
    new Lock({
      store,
      key: KEY,
      owner,
      ttlMs: 10_000,
      clockSkewMarginMs: 1_000,
      recordRun,
      clock: time.localClock(),
    })
  const record = (): LockRecord => JSON.parse(store.peek(KEY) ?? 'null')
  return { time, store, lock, record }
}

describe('the run recorder: what a job keeps of each run a write ends', () => {
  it('is handed each run a write ends (a release, an abandoned lease taken over), and what it returns is written, with no request added', async () => {
    const ended: HistoryEntry[] = []
    const { lock, record, store, time } = setup((next, run) => {
      ended.push(run)
      return { ...next, last_outcome: run.outcome }
    })
    const first = await leaseOf(lock('job/1').tryAcquire())
    const writes = [vi.spyOn(store, 'create'), vi.spyOn(store, 'replace'), vi.spyOn(store, 'read')]
    await first?.release({ outcome: 'completed' })
    expect(writes.map((spy) => spy.mock.calls.length)).toEqual([0, 1, 0])
    expect(record()).toMatchObject({ expires_at: 0, last_outcome: 'completed' })
    expect(ended).toEqual([
      expect.objectContaining({ token: first?.record.token, owner: 'job/1', outcome: 'completed' }),
    ])

    const crashed = await leaseOf(lock('job/2').tryAcquire())
    time.advance(20_000)
    const next = await leaseOf(lock('job/3').tryAcquire())
    expect(ended.at(-1)).toMatchObject({ token: crashed?.record.token, owner: 'job/2', outcome: 'abandoned' })
    expect(record()).toMatchObject({ token: next?.record.token, owner: 'job/3', last_outcome: 'abandoned' })
  })

  it('is not asked when a write ends no run: a release without an outcome, a renewal, an acquisition of a free lock', async () => {
    let calls = 0
    const { lock } = setup((next) => {
      calls++
      return next
    })
    const lease = await leaseOf(lock('job/1').tryAcquire())
    await lease?.renew()
    await lease?.release()
    await (await leaseOf(lock('job/2').tryAcquire()))?.release()
    expect(calls).toBe(0)
  })

  it('cannot change the lease: token, term, owner and run are the lock’s own, written after what it returns', async () => {
    const { lock, record, time } = setup((next) => ({
      ...next,
      token: 1,
      expires_at: 9_999_999_999,
      owner: 'intruder',
      run: 99,
      acquired_at: 0,
      ttl_ms: 1,
      v: 2,
      note: 'kept',
    }))
    const crashed = await leaseOf(lock('job/1').tryAcquire())
    time.advance(20_000)
    const next = await leaseOf(lock('job/2').tryAcquire())
    expect(next?.record.token).toBeGreaterThan(crashed?.record.token ?? Number.POSITIVE_INFINITY)
    const taken = record()
    expect(taken).toMatchObject({
      v: 1,
      token: next?.record.token,
      owner: 'job/2',
      run: 2,
      ttl_ms: 10_000,
      note: 'kept',
    })
    expect(taken.expires_at).toBeLessThan(9_999_999_999)
    await next?.release({ outcome: 'completed' })
    expect(record()).toMatchObject({ v: 1, token: next?.record.token, owner: 'job/2', run: 2, expires_at: 0 })
  })

  it('refuses a recorder that hands back no record, writing nothing: the checkpoint and cursor stay', async () => {
    const { lock, record } = setup(() => undefined as unknown as LockRecord)
    const lease = await leaseOf(lock('job/1').tryAcquire())
    await lease?.saveCheckpoint({ page: 3 })
    const before = record()
    await expect(lease?.release({ outcome: 'completed' })).rejects.toThrow(LockOptionsError)
    expect(record()).toEqual(before)
  })
})
