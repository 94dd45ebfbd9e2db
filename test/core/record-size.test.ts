import { describe, expect, it } from 'vitest'
import { MAX_RECORD_BYTES } from '../../lib/extend.js'
import { Lock, LockConflictError } from '../../lib/index.js'
import { MemoryLockStore } from '../../lib/memory/index.js'
import { leaseOf } from '../support/lease-of.js'
import { SimTime } from '../support/sim-clock.js'

const KEY = 'jobs/large'

/**
 * Acquires a released record that carries a field `pad` of `padBytes` characters, the same way
 * every time (same clock, same owner), and answers what was written.
 */
async function acquireWithPad(padBytes: number) {
  const time = new SimTime()
  const store = new MemoryLockStore({ clock: time.serverClock, clockResolutionMs: 1_000 })
  store.putRaw(KEY, JSON.stringify({ v: 1, token: 1, expires_at: 0, owner: 'x', pad: 'p'.repeat(padBytes) }))
  const lock = new Lock({ store, key: KEY, owner: 'a', clock: time.localClock() })
  const outcome = await leaseOf(lock.tryAcquire()).catch((error: unknown) => error)
  return { outcome, written: store.peek(KEY) ?? '' }
}

describe('the size of the records a lock writes', () => {
  it('writes a record of exactly 64 KiB, and refuses, writing nothing, to grow one a byte past it', async () => {
    const { written: small } = await acquireWithPad(0)
    const fits = MAX_RECORD_BYTES - Buffer.byteLength(small) // the pad that makes the written record 64 KiB
    const exact = await acquireWithPad(fits)
    expect(exact.outcome).toMatchObject({ owner: 'a', record: { run: 1 } })
    expect(Buffer.byteLength(exact.written)).toBe(64 * 1024)
    const over = await acquireWithPad(fits + 1)
    expect(over.outcome).toBeInstanceOf(LockConflictError)
    expect(over.outcome).toMatchObject({ reason: 'record-too-large', key: KEY })
    expect(JSON.parse(over.written)).toMatchObject({ token: 1 })
  })
})
