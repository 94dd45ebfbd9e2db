import { describe, expect, it } from 'vitest'
import { Lock, LockLostError, LockOptionsError, LockStoreError } from '../../lib/index.js'
import { leaseOf } from '../support/lease-of.js'
import { ScriptedStore } from '../support/scripted-store.js'
import { SimTime, withoutTimers } from '../support/sim-clock.js'

/** What a holder's writes (renew, checkpoint, release) make of each answer of the store. */
const KEY = 'jobs/held'
const TTL = 10_000
const MARGIN = 1_000
/** What a retry of a renewal waits: half of the 1 s backoff cap, with `random` fixed at 0.5. */
const DELAY = 500
const THIEF_TOKEN = 1_800_000_060_000

function setup(options: { timers?: boolean } = {}) {
  const time = new SimTime()
  const store = new ScriptedStore({ clock: time.serverClock })
  const clock = options.timers === false ? withoutTimers(time.localClock()) : time.localClock()
  const lock = (owner = 'holder') =>
    new Lock({
      store,
      key: KEY,
      owner,
      ttlMs: TTL,
      clockSkewMarginMs: MARGIN,
      clock,
      retry: { attempts: 100, baseMs: 1_000, capMs: 1_000 },
      random: () => 0.5,
    })
  const record = () => JSON.parse(store.memory.peek(KEY) ?? 'null')
  // Another holder's record, with a token of a minute later than ours.
  const thief = JSON.stringify({ v: 1, token: THIEF_TOKEN, expires_at: 4_000_000_000, owner: 'thief' })
  /** A lease taken a second ago, with the calls it cost forgotten. */
  const held = async () => {
    const lease = await leaseOf(lock().tryAcquire())
    if (!lease) throw new Error('expected the lock to be free')
    time.advance(1_000)
    store.calls.length = 0
    return lease
  }
  return { time, store, lock, record, thief, held }
}

describe('a renewal', () => {
  it.each([
    ['as long as the margin', MARGIN],
    ['infinite', Number.POSITIVE_INFINITY],
    ['NaN', Number.NaN],
  ])('refuses a ttl %s, before any request', async (_, ttlMs) => {
    const { store, held } = setup()
    const lease = await held()
    await expect(lease.renew(ttlMs)).rejects.toBeInstanceOf(LockOptionsError)
    await expect(lease.renew(ttlMs)).rejects.toMatchObject({ key: KEY })
    expect(store.calls).toEqual([])
  })

  it('takes a ttl just above the margin, and keeps it for the renewals after', async () => {
    const { held, record } = setup()
    const lease = await held()
    await lease.renew(MARGIN + 1)
    expect(record()).toMatchObject({ ttl_ms: MARGIN + 1 })
    await lease.renew(20_000)
    await lease.renew()
    expect(record()).toMatchObject({ ttl_ms: 20_000 })
  })

  it('keeps the last_run a previous run recorded', async () => {
    const { store, lock, record } = setup()
    await (await leaseOf(lock('previous').tryAcquire()))?.release({ fields: { last_run: 'tick-1' } })
    store.memory.putRaw(KEY, JSON.stringify({ ...record(), expires_at: 0 }))
    const lease = await leaseOf(lock().tryAcquire())
    await lease?.renew()
    await lease?.saveCheckpoint({ at: 1 })
    expect(record()).toMatchObject({ last_run: 'tick-1', state: { at: 1 } })
  })

  it('after the lease was lost sends nothing, and rejects with the loss', async () => {
    const { store, held, thief } = setup()
    const lease = await held()
    store.memory.putRaw(KEY, thief)
    const lost = await lease.renew().catch((e: unknown) => e)
    store.calls.length = 0
    await expect(lease.renew()).rejects.toBe(lost)
    await expect(lease.saveCheckpoint({ at: 1 })).rejects.toBe(lost)
    await expect(lease.release()).rejects.toBe(lost)
    expect(store.calls).toEqual([])
  })

  it('tells a deleted object (404) from a takeover without reading it again', async () => {
    const { store, held } = setup()
    const lease = await held()
    store.memory.delete(KEY)
    await expect(lease.renew()).rejects.toMatchObject({ reason: 'deleted' })
    expect(store.calls).toEqual(['replace'])
    expect(lease.isHeld).toBe(false)
  })

  it('reads a 412 back: a missing object (Ceph answers 412 for it) means deleted, even after a failed read', async () => {
    const { store, held } = setup()
    const lease = await held()
    store.memory.delete(KEY)
    store.script('replace', 'precondition-failed').script('read', 'transient')
    await expect(lease.renew()).rejects.toMatchObject({ reason: 'deleted' })
  })

  it('reads a 412 back: another record means taken over, naming its holder', async () => {
    const { store, held, thief } = setup()
    const lease = await held()
    store.memory.putRaw(KEY, thief)
    const error = await lease.renew().catch((e: unknown) => e)
    expect(error).toBeInstanceOf(LockLostError)
    expect(error).toMatchObject({
      reason: 'taken-over',
      token: lease.record.token,
      current: { token: THIEF_TOKEN, owner: 'thief' },
    })
    expect((error as Error).message).toContain(`now token ${THIEF_TOKEN}, thief`)
  })

  it('reads a 412 back, and calls it a takeover when the object cannot be read at all', async () => {
    const { store, held } = setup()
    const lease = await held()
    store.script('replace', 'precondition-failed').script('read', 'fatal')
    const error = await lease.renew().catch((e: unknown) => e)
    expect(error).toMatchObject({ name: 'LockLostError', reason: 'taken-over' })
    expect((error as LockLostError).current).toBeUndefined()
  })

  it('retries after a pause when it meets a 409 and the object did not change', async () => {
    const { time, store, held } = setup()
    const lease = await held()
    store.script('replace', 'conflict')
    const sentAt = time.now
    await lease.renew()
    expect(store.calls).toEqual(['replace', 'read', 'replace'])
    expect(time.now - sentAt).toBe(500)
    expect(lease.isHeld).toBe(true)
  })

  it('is lost to a takeover when it meets a 409 and the object changed', async () => {
    const { store, held, thief } = setup()
    const lease = await held()
    store.script('replace', (memory) => {
      memory.putRaw(KEY, thief)
      return 'conflict'
    })
    await expect(lease.renew()).rejects.toMatchObject({ reason: 'taken-over', current: { owner: 'thief' } })
    expect(store.calls).toEqual(['replace', 'read']) // no second try against a record that is not ours
  })

  it('is lost when it meets a 409 and the object is gone', async () => {
    const { store, held } = setup()
    const lease = await held()
    store.script('replace', (memory) => {
      memory.delete(KEY)
      return 'conflict'
    })
    const error = await lease.renew().catch((e: unknown) => e)
    expect(error).toBeInstanceOf(LockLostError)
    expect((error as LockLostError).current).toBeUndefined()
  })

  it('meeting 409s again and again gives up retryably by the lease’s end, sending nothing past it', async () => {
    const { time, store, held } = setup({ timers: false })
    const lease = await held()
    const end = lease.expiresAt.getTime()
    const sent: number[] = []
    store.script(
      'replace',
      ...Array.from({ length: 100 }, () => () => {
        sent.push(time.now)
        return 'conflict' as const
      }),
    )
    const error = await lease.renew().catch((e: unknown) => e)
    expect(error).toBeInstanceOf(LockStoreError)
    expect(error).toMatchObject({ retryable: true, key: KEY })
    expect(Math.max(...sent)).toBeLessThanOrEqual(end)
    expect(Math.max(...sent) + DELAY).toBeGreaterThanOrEqual(end) // and right up to it
    expect(lease.isHeld).toBe(true)
  })

  it('that lands after the lease’s end passed still finds the lease lost', async () => {
    const { time, store, held, record } = setup()
    const lease = await held()
    store.script('replace', () => {
      time.advance(TTL) // the request hangs past the lease's end, then lands
      return 'ok'
    })
    await expect(lease.renew()).rejects.toMatchObject({ reason: 'expired' })
    expect(lease.isLost).toBe(true)
    expect(record()).toMatchObject({ token: lease.record.token })
  })

  it('that fails for good with time left rejects with the store’s error, and the lease stays held', async () => {
    const { store, held } = setup()
    const lease = await held()
    store.script('replace', 'fatal')
    const error = await lease.renew().catch((e: unknown) => e)
    expect(error).toBeInstanceOf(LockStoreError)
    expect(error).not.toBeInstanceOf(LockLostError)
    expect(lease.isHeld).toBe(true)
    expect(lease.signal.aborted).toBe(false)
    await lease.renew()
    expect(store.calls).toEqual(['replace', 'replace'])
  })

  it.each([
    ['its watchdog fired meanwhile', true],
    ['no timer ran (a frozen process)', false],
  ])(
    'that keeps failing past the lease’s end loses the lease, with the failure as cause, when %s',
    async (_, timers) => {
      const { time, store, held } = setup({ timers })
      const lease = await held()
      store.script('replace', () => {
        time.advance(lease.remainingMs) // the request times out exactly at the lease's end
        return 'transient'
      })
      const error = await lease.renew().catch((e: unknown) => e)
      expect(error).toBeInstanceOf(LockLostError)
      expect(error).toMatchObject({ reason: 'expired', cause: { name: 'LockStoreError' } })
      expect(lease.isLost).toBe(true)
      expect(lease.signal.aborted).toBe(true)
    },
  )
})

describe('a checkpoint', () => {
  it('is written as it was when saved, even when the job changes its object while a 409 is retried', async () => {
    const { store, held, record } = setup()
    const lease = await held()
    const checkpoint = { done: 1 }
    store.script('replace', () => {
      checkpoint.done = 2 // the job goes on with its object while the write waits to be retried
      return 'conflict'
    })
    await lease.saveCheckpoint(checkpoint)
    expect(store.calls).toEqual(['replace', 'read', 'replace'])
    expect(record().state).toEqual({ done: 1 })
    checkpoint.done = 3 // nor does a later write of the lease carry the job's object over
    await lease.release()
    expect(record().state).toEqual({ done: 1 })
  })

  it('stores state without extending the lease, and leaves state alone when a renewal does not set it', async () => {
    const { held, record } = setup()
    const lease = await held()
    const before = record().expires_at
    await lease.saveCheckpoint({ cursor: 7 })
    expect(record()).toMatchObject({ expires_at: before, state: { cursor: 7 } })
    await lease.renew()
    expect(record()).toMatchObject({ state: { cursor: 7 } })
    expect(lease.record).toEqual(record())
  })

  it('takes a state of up to 60 KiB (64 KiB less room for the record’s own fields), not a byte more', async () => {
    const { held, record } = setup()
    const lease = await held()
    await lease.saveCheckpoint('x'.repeat(60 * 1024 - 2)) // 61 440 bytes as JSON, quotes included
    expect(record().state).toHaveLength(60 * 1024 - 2)
    await expect(lease.saveCheckpoint('x'.repeat(60 * 1024 - 1))).rejects.toMatchObject({
      name: 'LockOptionsError',
      key: KEY,
    })
  })

  it('stays through a release, unless the release clears it', async () => {
    const { held, record, lock } = setup()
    const lease = await held()
    await lease.saveCheckpoint({ cursor: 7 })
    await lease.release()
    expect(record()).toMatchObject({ expires_at: 0, state: { cursor: 7 } })
    const next = await leaseOf(lock().tryAcquire())
    expect(next?.record.state).toEqual({ cursor: 7 })
    await next?.release({ clearState: true, fields: { last_run: 'tick-2' } })
    expect(record()).toMatchObject({ expires_at: 0, last_run: 'tick-2' })
    expect(record()).not.toHaveProperty('state')
  })

  it('after release is refused, writing nothing', async () => {
    const { store, held } = setup()
    const lease = await held()
    await lease.release()
    store.calls.length = 0
    await expect(lease.saveCheckpoint({ at: 1 })).rejects.toMatchObject({
      name: 'LockLostError',
      reason: 'released',
    })
    expect(store.calls).toEqual([])
  })
})

describe('a lease’s view of itself', () => {
  it('holds the etag of its last write and is no longer held once released', async () => {
    const { store, held } = setup()
    const lease = await held()
    const current = await store.memory.read(KEY)
    expect(lease.etag).toBe(current.status === 'found' ? current.etag : undefined)
    await lease.release()
    expect(lease.isHeld).toBe(false)
  })
})

describe('a cursor', () => {
  it('is stored without extending the lease, beside the checkpoint, and outlives a release that clears the checkpoint', async () => {
    const { held, record } = setup()
    const lease = await held()
    const before = record().expires_at
    await lease.saveCheckpoint({ done: 2 })
    await lease.saveCursor({ after: 'inbox/0042.json' })
    expect(record()).toMatchObject({
      expires_at: before,
      state: { done: 2 },
      cursor: { after: 'inbox/0042.json' },
    })
    await lease.release({ clearState: true })
    expect(record()).toMatchObject({ expires_at: 0, cursor: { after: 'inbox/0042.json' } })
    expect(record()).not.toHaveProperty('state')
  })

  it('takes up to 60 KiB, and refuses what JSON cannot hold, writing nothing', async () => {
    const { store, held, record } = setup()
    const lease = await held()
    await lease.saveCursor('x'.repeat(60 * 1024 - 2))
    expect(record().cursor).toHaveLength(60 * 1024 - 2)
    store.calls.length = 0
    await expect(lease.saveCursor('x'.repeat(60 * 1024 - 1))).rejects.toMatchObject({
      name: 'LockOptionsError',
      message: expect.stringMatching(/^Cursor is/),
    })
    await expect(lease.saveCursor(1n as never)).rejects.toBeInstanceOf(LockOptionsError)
    expect(store.calls).toEqual([])
    expect(lease.isHeld).toBe(true)
  })
})

describe('a release given the job’s own fields', () => {
  it('writes those it is given, removes those given null, and keeps the rest', async () => {
    const { lock, record } = setup()
    const first = { last_run: 'tick-1', mark: { at: 1 }, failures: 2, failed_run: 1 }
    await (await leaseOf(lock().tryAcquire()))?.release({ fields: first })
    expect(record()).toMatchObject({ expires_at: 0, ...first })
    const removed = { mark: null, failures: null, failed_run: null, other: undefined }
    await (await leaseOf(lock().tryAcquire()))?.release({ fields: removed })
    expect(record()).toMatchObject({ last_run: 'tick-1' })
    for (const field of ['mark', 'failures', 'failed_run', 'other'])
      expect(record()).not.toHaveProperty(field)
  })

  it('writes them as they were given, even when the job changes its objects while a 409 is retried', async () => {
    const { store, held, record } = setup()
    const lease = await held()
    const mark = { at: 1 }
    store.script('replace', () => {
      mark.at = 2
      return 'conflict'
    })
    await lease.release({ fields: { mark } })
    expect(record()).toMatchObject({ expires_at: 0, mark: { at: 1 } })
  })

  it('writes the paused record version with a pause', async () => {
    const { lock, record } = setup()
    await (await leaseOf(lock().tryAcquire()))?.release({ fields: { paused: { by: 'job/1', at: 1 } } })
    expect(record()).toMatchObject({ v: 2, paused: { by: 'job/1', at: 1 } })
  })

  it.each([
    ['the token, which the lease owns', { token: 1 }],
    ['the lease end', { expires_at: 4_000_000_000 }],
    ['the history, which the run recorder keeps', { history: [] }],
    ['the checkpoint, which has its own patch', { state: 1 }],
    ['a pause that is no pause record', { paused: 'yes' }],
    ['a failure count that is no count', { failures: -1 }],
  ])('refuses %s, writing nothing, and stays held', async (_, fields) => {
    const { store, held } = setup()
    const lease = await held()
    await expect(lease.release({ fields })).rejects.toBeInstanceOf(LockOptionsError)
    expect(store.calls.filter((call) => call !== 'read')).toEqual([])
    expect(lease.isReleased).toBe(false)
    await lease.release()
    expect(lease.isReleased).toBe(true)
  })
})
