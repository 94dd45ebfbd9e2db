import { describe, expect, it } from 'vitest'
import { StoreSession } from '../../lib/core/store-session.js'
import type { LockRecord } from '../../lib/extend.js'
import { ScriptedStore } from '../support/scripted-store.js'
import { SimTime } from '../support/sim-clock.js'

const KEY = 'jobs/session'

function setup() {
  const time = new SimTime()
  const store = new ScriptedStore({ clock: time.serverClock })
  const session = new StoreSession(store, KEY, 1_000, time.localClock(), {}, () => 0.5, false)
  const put = (token: number) =>
    store.memory.putRaw(KEY, JSON.stringify({ v: 1, token, expires_at: 0, owner: 'someone' }))
  const record = (token: number): LockRecord => ({ v: 1, token, expires_at: 0, owner: 'us' })
  return { time, store, session, put, record }
}

describe('a read, as the session reports it', () => {
  it('carries the record it found, with no doubt about absence', async () => {
    const { time, session, put } = setup()
    put(7)
    const found = await session.read(time.now + 1_000)
    expect(found.snapshot?.record.token).toBe(7)
    expect(found.unconfirmedAbsence).toBe(false)
  })

  it('says when the store found nothing but could not be sure there is nothing', async () => {
    const { time, store, session } = setup()
    store.script('read', 'denied')
    const sentAt = time.now
    expect(await session.read(time.now + 1_000)).toEqual({
      snapshot: undefined,
      unconfirmedAbsence: true,
      sentAt,
    })
    expect(await session.read(time.now + 1_000)).toEqual({
      snapshot: undefined,
      unconfirmedAbsence: false,
      sentAt,
    })
  })
})

describe('what the session remembers', () => {
  it('raises its token floor to every token a read shows: the next token is above it', async () => {
    const { time, session, put } = setup()
    const far = time.now + 5_000
    put(far)
    await session.read(time.now + 1_000)
    put(1)
    expect(session.highestToken).toBe(far)
    expect(session.nextToken()).toBe(far + 1)
  })

  it('keeps our own last write until it is written over', () => {
    const { session, record } = setup()
    session.remember(record(1), 'e1')
    session.remember(record(2), 'e2')
    session.forget('e1') // an older write of ours, written over long ago: the last one still holds
    expect(session.lastWrite).toEqual({ record: record(2), etag: 'e2' })
    session.forget('e2')
    expect(session.lastWrite).toBeUndefined()
  })

  it('never lowers its token floor for a write of ours, except for a reset (back to the clock)', () => {
    const { session, record } = setup()
    session.remember(record(9), 'e1')
    session.remember(record(5), 'e2')
    expect(session.highestToken).toBe(9)
    session.rememberReset(record(3), 'e3')
    expect(session.highestToken).toBe(3)
    expect(session.lastWrite?.etag).toBe('e3')
  })
})
