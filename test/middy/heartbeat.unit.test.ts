import { describe, expect, it } from 'vitest'
import { Lock, type LockLostError, type LockStore, MemoryLockStore } from '../../lib/index.js'
import { startHeartbeat } from '../../lib/middy/heartbeat.js'

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

/** A store whose writes hang for `stallMs` once `stalled` is set: a renew that cannot get through. */
function stallingStore(stallMs: number) {
  const inner = new MemoryLockStore({ clockResolutionMs: 1 })
  const control = { stalled: false, replaces: 0 }
  const store: LockStore = {
    clockResolutionMs: 1,
    read: (key, options) => inner.read(key, options),
    create: (key, body, options) => inner.create(key, body, options),
    replace: async (key, body, etag, options) => {
      control.replaces++
      if (control.stalled) await sleep(stallMs)
      return inner.replace(key, body, etag, options)
    },
  }
  return { store, control }
}

describe('startHeartbeat', () => {
  it('keeps renewing a short lease while the run goes on, and stops when told', async () => {
    const { store, control } = stallingStore(0)
    const lease = await new Lock({ store, key: 'k', ttlMs: 600, clockSkewMarginMs: 100 }).tryAcquire()
    if (!lease) throw new Error('no lease')
    const lost: LockLostError[] = []
    const stop = startHeartbeat(lease, {
      everyMs: 200,
      ttlMs: 600,
      stopAt: undefined,
      onLost: (e) => lost.push(e),
      onError: () => {},
    })
    await sleep(1_000)
    stop()
    const renewals = control.replaces
    expect(renewals).toBeGreaterThanOrEqual(3)
    expect(lease.remainingMs).toBeGreaterThan(0)
    await sleep(500)
    expect(control.replaces).toBe(renewals) // nothing after stop
    expect(lost).toEqual([])
  })

  it('declares the lease lost when it runs out while a renew is stuck', async () => {
    const { store, control } = stallingStore(2_000)
    const lease = await new Lock({ store, key: 'k', ttlMs: 600, clockSkewMarginMs: 100 }).tryAcquire()
    if (!lease) throw new Error('no lease')
    control.stalled = true
    const lost: LockLostError[] = []
    const startedAt = Date.now()
    const stop = startHeartbeat(lease, {
      everyMs: 200,
      ttlMs: 600,
      stopAt: undefined,
      onLost: (e) => lost.push(e),
      onError: () => {},
    })
    await sleep(800)
    expect(lost).toHaveLength(1)
    expect(lost[0]).toMatchObject({ name: 'LockLostError', reason: 'expired', token: 1 })
    expect(Date.now() - startedAt).toBeLessThan(2_000) // did not wait for the stuck renew
    stop()
  })

  it('sends no beat past the end of the invocation', async () => {
    const { store, control } = stallingStore(0)
    const lease = await new Lock({ store, key: 'k', ttlMs: 600, clockSkewMarginMs: 100 }).tryAcquire()
    if (!lease) throw new Error('no lease')
    const stop = startHeartbeat(lease, {
      everyMs: 100,
      ttlMs: 600,
      stopAt: Date.now() + 250,
      onLost: () => {},
      onError: () => {},
    })
    await sleep(600)
    const renewals = control.replaces
    await sleep(400)
    expect(control.replaces).toBe(renewals)
    expect(renewals).toBeLessThanOrEqual(3)
    stop()
  })
})
