import { describe, expect, it } from 'vitest'
import { acquisitionRecord, runningTick } from '../../lib/core/holder-record.js'
import { parseRecord } from '../../lib/core/parse-record.js'
import type { LockRecord } from '../../lib/core/record.js'
import { LockCorruptedError, LockLostError } from '../../lib/index.js'
import { keepHistory } from '../../lib/schedule/history.js'
import { leaseOf } from '../support/lease-of.js'
import { simLocks } from '../support/sim-locks.js'

const KEY = 'jobs/replace'
const OLD_TICK = '2026-11-25T03:00:00Z'
const NEW_TICK = '2026-11-25T03:05:00Z'

const setup = () => simLocks(KEY, { recordRun: keepHistory(10) })

/** Replace a holder whose record says it runs an older tick than `tick` (the lifecycle's rule, inlined). */
const olderThan = (tick: string) => (holder: LockRecord) => {
  const holding = runningTick(holder)
  return holding !== undefined && Date.parse(holding) < Date.parse(tick)
}

describe('replacing a live holder (replaceIf)', () => {
  it('writes the tick an acquisition runs for into running, bound to its token, and a release clears it', async () => {
    const { lock, record } = setup()
    const lease = await leaseOf(lock('old').tryAcquire({ tick: OLD_TICK }))
    expect(record().running).toEqual({ token: lease?.record.token, tick: OLD_TICK })
    await lease?.release()
    expect(record()).not.toHaveProperty('running')
    const untimed = await leaseOf(lock('other').tryAcquire())
    expect(untimed).not.toBeNull()
    expect(record()).not.toHaveProperty('running')
  })

  it('takes the lock from a run of an older tick, with a higher token, and says whom it replaced', async () => {
    const { lock, record } = setup()
    const old = await leaseOf(lock('old').tryAcquire({ tick: OLD_TICK }))
    const attempt = await lock('new').tryAcquire({ tick: NEW_TICK, replaceIf: olderThan(NEW_TICK) })
    expect(attempt.status).toBe('acquired')
    if (attempt.status !== 'acquired' || !old) throw new Error('unreachable')
    expect(attempt.lease.record.token).toBeGreaterThan(old.record.token)
    expect(attempt.replaced).toMatchObject({ owner: 'old', token: old.record.token })
    expect(record()).toMatchObject({
      owner: 'new',
      token: attempt.lease.record.token,
      running: { token: attempt.lease.record.token, tick: NEW_TICK },
      replaced: { token: old.record.token, owner: 'old', tick: OLD_TICK },
    })
    expect(record().history?.at(-1)).toMatchObject({
      token: old.record.token,
      owner: 'old',
      tick: OLD_TICK,
      outcome: 'replaced',
    })
  })

  it('aborts the replaced lease at its next write, with reason replaced, and refuses its release', async () => {
    const { lock, record } = setup()
    const old = await leaseOf(lock('old').tryAcquire({ tick: OLD_TICK }))
    const attempt = await lock('new').tryAcquire({ tick: NEW_TICK, replaceIf: olderThan(NEW_TICK) })
    if (!old || attempt.status !== 'acquired') throw new Error('unreachable')
    expect(old.signal.aborted).toBe(false) // nothing tells it before it writes
    const renewal = await old.renew().catch((error: unknown) => error)
    expect(renewal).toBeInstanceOf(LockLostError)
    expect(renewal).toMatchObject({ reason: 'replaced', token: old.record.token })
    expect(old.signal.reason).toBe(renewal)
    const before = JSON.stringify(record())
    await expect(old.release({ outcome: 'failed' })).rejects.toMatchObject({ reason: 'replaced' })
    expect(JSON.stringify(record())).toBe(before) // its release changed nothing
    expect(attempt.lease.isHeld).toBe(true)
  })

  it('also tells the replaced run after its replacer released (the replaced field stays)', async () => {
    const { lock } = setup()
    const old = await leaseOf(lock('old').tryAcquire({ tick: OLD_TICK }))
    const attempt = await lock('new').tryAcquire({ tick: NEW_TICK, replaceIf: olderThan(NEW_TICK) })
    if (!old || attempt.status !== 'acquired') throw new Error('unreachable')
    await attempt.lease.release({ outcome: 'completed', fields: { last_run: NEW_TICK } })
    await expect(old.renew()).rejects.toMatchObject({ reason: 'replaced' })
  })

  it('leaves a holder alone when replaceIf says no, and asks it nothing for a free lock', async () => {
    const { lock } = setup()
    const asked: LockRecord[] = []
    const never = (holder: LockRecord) => {
      asked.push(holder)
      return false
    }
    const free = await lock('first').tryAcquire({ tick: OLD_TICK, replaceIf: never })
    expect(free.status).toBe('acquired')
    expect(asked).toEqual([])
    const held = await lock('second').tryAcquire({ tick: OLD_TICK, replaceIf: never })
    expect(held).toMatchObject({ status: 'held', holder: { owner: 'first' } })
    expect(asked).toHaveLength(1)
  })

  it('asks skipIf first: a record to skip is never replaced', async () => {
    const { lock } = setup()
    await lock('old').tryAcquire({ tick: OLD_TICK })
    const attempt = await lock('new').tryAcquire({
      tick: NEW_TICK,
      skipIf: () => true,
      replaceIf: () => true,
    })
    expect(attempt.status).toBe('skipped')
  })

  it('does not replace an expired lease: it takes it over as abandoned', async () => {
    const { lock, record, time } = setup()
    await lock('old').tryAcquire({ tick: OLD_TICK })
    time.advance(13_000) // past the token (a second ahead, the latest the store's clock might read) + ttl + margin
    const attempt = await lock('new').tryAcquire({ tick: NEW_TICK, replaceIf: () => true })
    expect(attempt.status).toBe('acquired')
    expect(attempt.status === 'acquired' && attempt.replaced).toBeFalsy()
    expect(record()).not.toHaveProperty('replaced')
    expect(record().history?.at(-1)).toMatchObject({ owner: 'old', tick: OLD_TICK, outcome: 'abandoned' })
  })

  it('one of two replacers wins; the other finds the winner holding, with a newer tick', async () => {
    const { lock } = setup()
    await lock('old').tryAcquire({ tick: OLD_TICK })
    const later = '2026-11-25T03:10:00Z'
    const [a, b] = await Promise.all([
      lock('a').tryAcquire({ tick: NEW_TICK, replaceIf: olderThan(NEW_TICK) }),
      lock('b').tryAcquire({ tick: NEW_TICK, replaceIf: olderThan(NEW_TICK) }),
    ])
    expect([a.status, b.status].sort()).toEqual(['acquired', 'held'])
    // A third, of a later tick, replaces the winner in turn.
    const c = await lock('c').tryAcquire({ tick: later, replaceIf: olderThan(later) })
    expect(c.status).toBe('acquired')
  })
})

describe('the running and replaced fields of the record', () => {
  const base = { v: 1, token: 5, expires_at: 1_800_000_000, owner: 'job/1' }

  it('reads them, and refuses them with a wrong type, writing nothing', () => {
    const running = { token: 5, tick: OLD_TICK }
    const replaced = { token: 4, owner: 'job/0', tick: OLD_TICK, at: 1_799_999_999.5 }
    expect(parseRecord(JSON.stringify({ ...base, running, replaced }), KEY)).toMatchObject({
      running,
      replaced,
    })
    const untimed = { token: 4, owner: 'job/0', at: 1_799_999_999.5 } // a replaced run that named no tick
    expect(parseRecord(JSON.stringify({ ...base, replaced: untimed }), KEY).replaced).toEqual(untimed)
    for (const wrong of [
      { running: { token: 5 } },
      { running: { token: -1, tick: OLD_TICK } },
      { running: 'tick' },
      { running: null },
      { running: [5, OLD_TICK] },
      { replaced: null },
      { replaced: [4, 'x', 1] },
      { replaced: { token: 4, at: 1 } },
      { replaced: { token: 4, owner: 'x', at: -1 } },
      { replaced: { token: 4, owner: 'x', tick: 3, at: 1 } },
    ]) {
      expect(() => parseRecord(JSON.stringify({ ...base, ...wrong }), KEY)).toThrow(LockCorruptedError)
    }
  })

  it('trusts running only with the record’s own token (an older writer keeps a stale one)', () => {
    expect(runningTick({ ...base, running: { token: 5, tick: OLD_TICK } } as LockRecord)).toBe(OLD_TICK)
    expect(runningTick({ ...base, running: { token: 4, tick: OLD_TICK } } as LockRecord)).toBeUndefined()
    expect(runningTick(base as LockRecord)).toBeUndefined()
  })

  it('an acquisition drops a stale running it does not write anew', () => {
    const term = { expires_at: 1_800_000_100, serverNow: 1_800_000_000_000, ttlMs: 10_000, deadline: 0 }
    const previous = { ...base, expires_at: 0, running: { token: 5, tick: OLD_TICK } } as LockRecord
    expect(acquisitionRecord(previous, 'job/2', 6, term)).not.toHaveProperty('running')
    expect(acquisitionRecord(previous, 'job/2', 6, term, { tick: NEW_TICK }).running).toEqual({
      token: 6,
      tick: NEW_TICK,
    })
  })
})
