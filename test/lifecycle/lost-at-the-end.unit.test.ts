import { describe, expect, it } from 'vitest'
import type { Clock } from '../../lib/core/clock.js'
import { KEY, world } from './world.js'

/**
 * A lease held to the invocation's deadline that runs out with the invocation lost nothing: the
 * invocation was over. Only running out is excused that way; a lease someone else took is a loss
 * whenever it is found, and so is a lease of a configured ttl that lapses.
 */
describe('a lease lost as its invocation ends', () => {
  it('is no loss when it is held to the deadline and runs out with it', async () => {
    const { clock, wrap, context, kinds } = world()
    // Lambda would have stopped this handler at 10 s; here it goes on, as a thawed process would.
    await clock.run(wrap(async () => clock.sleep(30_000))({}, context({ timeoutMs: 10_000 })))
    expect(kinds()).not.toContain('lost')
  })

  it('is a loss when it was taken over, though the clock says the invocation is over', async () => {
    const { clock, store, wrap, context, outcomes, record } = world()
    // The local clock steps past the invocation's end (a clock correction) before any timer
    // fires: the release, not the lease's own end, finds the takeover.
    let stepMs = 0
    const stepping: Clock = {
      now: () => clock.now() + stepMs,
      sleep: (ms, signal) => clock.sleep(ms, signal),
      schedule: (ms, callback) => clock.schedule(ms, callback),
    }
    const handler = wrap(
      async () => {
        store.memory.putRaw(KEY, JSON.stringify({ ...record(), token: record().token + 1, owner: 'thief' }))
        stepMs = 20_000
      },
      { clock: stepping },
    )
    await clock.run(handler({}, context({ timeoutMs: 10_000 })))
    expect(outcomes.find((o) => o.outcome === 'lost')).toMatchObject({
      owner: 'thief',
      error: { reason: 'taken-over' },
    })
  })

  it('is a loss when it is of a configured ttl, though it ran out after the invocation’s end', async () => {
    const { clock, store, wrap, context, outcomes } = world()
    store.script('replace', ...Array.from({ length: 100 }, () => 'transient' as const))
    const handler = wrap(async () => clock.sleep(30_000), { ttlMs: 6_000, clockSkewMarginMs: 1_000 })
    await clock.run(handler({}, context({ timeoutMs: 4_000 })))
    expect(outcomes.find((o) => o.outcome === 'lost')).toMatchObject({ error: { reason: 'expired' } })
  })
})
