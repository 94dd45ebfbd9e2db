import { describe, expect, it } from 'vitest'
import { LockLostError } from '../../lib/index.js'
import { KEY, world } from './world.js'

describe('a run whose lease covers the invocation', () => {
  it('needs no heartbeat: nothing renews the lease while the handler runs, however long', async () => {
    const { clock, store, wrap, context } = world()
    let writesWhileRunning = -1
    await clock.run(
      wrap(async () => {
        const before = store.count('replace') + store.count('create')
        await clock.sleep(50_000) // most of the 60 s invocation
        writesWhileRunning = store.count('replace') + store.count('create') - before
      })({}, context()),
    )
    expect(writesWhileRunning).toBe(0)
    expect(clock.pending).toBe(0) // and it leaves no timer behind
  })
})

describe('the end of a run', () => {
  it('leaves no timer behind: no heartbeat, no watchdog', async () => {
    const { clock, wrap, context } = world()
    await clock.run(
      wrap(async () => clock.sleep(1_000), { ttlMs: 6_000, clockSkewMarginMs: 1_000 })({}, context()),
    )
    expect(clock.pending).toBe(0)
  })

  it('aborts the handler’s signal, even when the lease is fine', async () => {
    const { clock, wrap, context } = world()
    let signal: AbortSignal | undefined
    await clock.run(
      wrap(async (_e, ctx) => {
        signal = ctx.singleton.signal
      })({}, context()),
    )
    expect(signal?.aborted).toBe(true)
  })

  it('with throwOnLost, returns the handler’s result when nothing was lost', async () => {
    const { clock, wrap, context } = world()
    expect(await clock.run(wrap(async () => 'done', { throwOnLost: true })({}, context()))).toBe('done')
  })

  it('with throwOnLost, rethrows the handler’s own error rather than the loss', async () => {
    const { clock, store, wrap, context, record } = world()
    const handler = wrap(
      async () => {
        store.memory.putRaw(KEY, JSON.stringify({ ...record(), token: 9 }))
        throw new Error('job failed')
      },
      { throwOnLost: true },
    )
    await expect(clock.run(handler({}, context()))).rejects.toThrow('job failed')
  })

  it('without throwOnLost, returns the handler’s result though the lease was lost', async () => {
    const { clock, store, wrap, context, record } = world()
    const handler = wrap(async () => {
      store.memory.putRaw(KEY, JSON.stringify({ ...record(), token: 9 }))
      return 'done'
    })
    expect(await clock.run(handler({}, context()))).toBe('done')
  })

  it('with throwOnLost, fails a finished handler whose lease ran out, with the loss', async () => {
    const { clock, store, wrap, context } = world()
    store.script('replace', ...Array.from({ length: 50 }, () => 'transient' as const))
    const handler = wrap(async () => clock.sleep(20_000).then(() => 'done'), {
      ttlMs: 6_000,
      clockSkewMarginMs: 1_000,
      throwOnLost: true,
    })
    const error = await clock.run(handler({}, context())).catch((e: unknown) => e)
    expect(error).toBeInstanceOf(LockLostError)
    expect(error).toMatchObject({ reason: 'expired' })
  })
})
