import { describe, expect, it } from 'vitest'
import { Lock, LockConflictError } from '../../lib/index.js'
import { MemoryLockStore } from '../../lib/memory/index.js'
import { SimTime } from '../support/sim-clock.js'

const KEY = 'jobs/fenced'

function setup() {
  const time = new SimTime()
  const store = new MemoryLockStore({ clock: time.serverClock })
  const lock = (owner: string) =>
    new Lock({ store, key: KEY, owner, ttlMs: 10_000, clockSkewMarginMs: 1_000, clock: time.localClock() })
  const put = (record: Record<string, unknown>) =>
    store.putRaw(KEY, JSON.stringify({ v: 1, expires_at: 0, owner: 'someone', ...record }))
  const token = () => JSON.parse(store.peek(KEY) ?? 'null')?.token
  return { time, store, lock, put, token }
}

describe('the token floor: a lock never hands out a token at or below one it has seen', () => {
  it('recreates a deleted object above the highest token it read, though it never wrote that one', async () => {
    const { time, store, lock, put, token } = setup()
    put({ token: 7, expires_at: (time.now + 3_600_000) / 1000, owner: 'other' })
    const a = lock('a')
    expect(await a.attempt()).toMatchObject({ status: 'held', holder: { token: 7 } })
    store.delete(KEY) // an outside delete or a restore from an old backup
    expect((await a.tryAcquire())?.token).toBe(8)
    expect(token()).toBe(8)
  })

  it('recreates a deleted object above the token its own force-release handed out', async () => {
    const { store, lock } = setup()
    await lock('stuck').tryAcquire()
    const operator = lock('operator')
    expect(await operator.forceRelease()).toMatchObject({ token: 2 })
    store.delete(KEY)
    expect((await operator.tryAcquire())?.token).toBe(3)
  })

  it('recreates a deleted object above the token its own reset wrote', async () => {
    const { store, lock } = setup()
    const operator = lock('operator')
    await operator.reset({ token: 40 })
    store.delete(KEY)
    expect((await operator.tryAcquire())?.token).toBe(41)
  })

  it('refuses to reset to a token it has already seen, even with the object gone, and writes nothing', async () => {
    const { store, lock, put } = setup()
    put({ token: 4 })
    const operator = lock('operator')
    await (await operator.tryAcquire())?.release() // token 5
    store.delete(KEY)
    const refused = await operator.reset({ token: 5 }).catch((e: unknown) => e)
    expect(refused).toBeInstanceOf(LockConflictError)
    expect(refused).toMatchObject({ reason: 'token-too-low', key: KEY })
    expect(store.peek(KEY)).toBeUndefined()
    expect(await operator.reset({ token: 6 })).toMatchObject({ token: 6, expires_at: 0 })
  })

  it('refuses token 0, the floor of a lock that has seen nothing, as too low rather than as malformed', async () => {
    const { lock } = setup()
    await expect(lock('operator').reset({ token: 0 })).rejects.toMatchObject({
      name: 'LockConflictError',
      reason: 'token-too-low',
    })
  })
})
