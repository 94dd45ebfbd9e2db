import middy from '@middy/core'
import { describe, expect, expectTypeOf, it } from 'vitest'
import { LockOptionsError } from '../../lib/index.js'
import { MemoryLockStore } from '../../lib/memory/index.js'
import {
  type SingletonContext,
  type SingletonHandle,
  type SkipResult,
  singleton,
} from '../../lib/middy/index.js'
import { type Adapter, describeSingletonBehaviour } from '../lifecycle/behaviour.js'
import { describeHistoryBehaviour } from '../lifecycle/history-behaviour.js'
import { describePauseBehaviour } from '../lifecycle/pause-behaviour.js'
import { describeReplaceBehaviour } from '../lifecycle/replace-behaviour.js'
import { lambdaContext } from '../support/lambda-context.js'
import { ManualClock } from '../support/sim-clock.js'

/**
 * Middy types the result as the body's; behind singleton() it may also be a SkipResult.
 *
 * Without Middy's own early timeout (timeoutEarlyInMillis 0): it arms a real-time timer from the
 * context's remaining time, which in these specs runs on the simulated clock. A run a spec leaves
 * hanging then rejected, on a loaded machine, long after its spec had ended (an unhandled
 * rejection blamed on whatever file ran next). Our own deadline handling reads the same context
 * on the same simulated clock and stays under test.
 */
const middleware: Adapter = (body, options) =>
  middy<unknown, unknown, Error, SingletonContext>({ timeoutEarlyInMillis: 0 })
    .use(singleton(options))
    .handler(body) as never

describeSingletonBehaviour('singleton() (Middy)', middleware)
describePauseBehaviour('singleton() (Middy)', middleware)
describeReplaceBehaviour('singleton() (Middy)', middleware)
describeHistoryBehaviour('singleton() (Middy)', middleware)

describe('singleton() options', () => {
  it.each([
    ['an empty key', { key: '' }],
    ['an unknown onHeld', { onHeld: 'queue' as 'skip' }],
    ['a negative wait', { waitMs: -1 }],
    ['a ttl not above the margin', { ttlMs: 1_000, clockSkewMarginMs: 1_000 }],
    ['a ttl over the longest lease (7 days)', { ttlMs: 8 * 24 * 3_600_000 }],
    ['a margin over 10 minutes', { clockSkewMarginMs: 11 * 60_000 }],
    ['a heartbeat slower than the lease', { ttlMs: 3_000, heartbeatMs: 5_000 }],
    ['a heartbeat without a ttl', { heartbeatMs: 1_000 }],
    ['a store that is not one', { store: {} as MemoryLockStore }],
  ])('refuses %s when called, before any invocation', (_, options) => {
    expect(() => singleton(options)).toThrow(LockOptionsError)
  })

  it('blames a default heartbeat that does not fit on what the user set, and says what to change', () => {
    // ttlMs 2500 with the default margin (2000) leaves 500 ms; the default heartbeat is 833.
    expect(() => singleton({ ttlMs: 2_500 })).toThrow(
      'singleton(): ttlMs 2500 leaves 500 ms above the clock-skew margin (clockSkewMarginMs 2000, the default): ' +
        'the default heartbeat, a third of ttlMs (833 ms), does not fit in it; raise ttlMs to at least 3001, ' +
        'lower clockSkewMarginMs, or set heartbeatMs below 500',
    )
    expect(() => singleton({ ttlMs: 2_500, clockSkewMarginMs: 1_000 })).not.toThrow()
    expect(() => singleton({ ttlMs: 2_500, heartbeatMs: 499 })).not.toThrow()
    expect(() => singleton({ ttlMs: 3_001 })).not.toThrow()
    expect(() => singleton({ ttlMs: 3_000 })).toThrow(/raise ttlMs to at least 3001/)
  })

  it('names the numbers when a heartbeat the user set does not fit', () => {
    expect(() => singleton({ ttlMs: 3_000, heartbeatMs: 5_000, clockSkewMarginMs: 1_000 })).toThrow(
      'singleton(): heartbeatMs must be positive and below ttlMs - clockSkewMarginMs (3000 - 1000 = 2000 ms), got 5000',
    )
  })

  it('types a held skip with its holder, token and until, and a duplicate with no until', () => {
    type Held = Extract<SkipResult, { reason: 'held' }>
    type Duplicate = Extract<SkipResult, { reason: 'duplicate' }>
    expectTypeOf<Held['owner']>().toEqualTypeOf<string>()
    expectTypeOf<Held['token']>().toEqualTypeOf<number>()
    expectTypeOf<Held['until']>().toEqualTypeOf<string>()
    expectTypeOf<Duplicate['until']>().toEqualTypeOf<undefined>()
    expectTypeOf<SkipResult['tick']>().toEqualTypeOf<string | undefined>()
  })

  it('is made without a store or an environment (importing a handler in a test works)', () => {
    expect(() => singleton()).not.toThrow()
  })

  it('types context.singleton for the handler, without casts', () => {
    const handler = middy()
      .use(singleton({ store: new MemoryLockStore() }))
      .handler(async (_event, context) => {
        expectTypeOf(context.singleton).toEqualTypeOf<SingletonHandle>()
        expectTypeOf(context.singleton.fencingToken).returns.resolves.toBeNumber()
        expectTypeOf(context.singleton.signal).toEqualTypeOf<AbortSignal>()
        return context.singleton.fencingToken()
      })
    expectTypeOf(handler).toBeFunction()
    expectTypeOf<SingletonContext['singleton']['checkpoint']>().parameter(0).not.toBeAny()
  })
})

describe('singleton() and Middy', () => {
  it('releases at the next invocation a lease whose after was skipped by a later middleware', async () => {
    const clock = new ManualClock()
    const store = new MemoryLockStore({ clock, clockResolutionMs: 1_000 })
    const outcomes: string[] = []
    let runs = 0
    const handler = middy<unknown, unknown, Error, SingletonContext>({ timeoutEarlyInMillis: 0 })
      .use(singleton({ store, clock, logger: false, onOutcome: (o) => outcomes.push(o.outcome) }))
      // Used after singleton(), this ends some requests early: Middy then skips singleton's after.
      .use({
        before: (request) => ((request.event as { early?: boolean }).early ? 'ended early' : undefined),
      })
      .handler(async () => ++runs)
    expect(await clock.run(handler({ early: true }, lambdaContext({ clock, timeoutMs: 3_000 })))).toBe(
      'ended early',
    )
    const left = JSON.parse(store.peek('locks/nightly-report') ?? '{}')
    expect(left).toMatchObject({ run: 1 })
    expect(left.expires_at).toBeGreaterThan(0) // not released
    await clock.advance(3_000) // that invocation's time, and its lease, are over
    expect(await clock.run(handler({}, lambdaContext({ clock })))).toBe(1)
    // The abandoned lease ran out with its invocation: a warning, no loss; it was freed for the next.
    expect(outcomes).toEqual(['acquired', 'error', 'acquired', 'released'])
  })

  it("runs Powertools' cleanups (its metrics flush) when a skip ends the request early, and only then", async () => {
    const clock = new ManualClock()
    const store = new MemoryLockStore({ clock })
    const flushed: string[] = []
    const handler = middy<unknown, unknown, Error, SingletonContext>({ timeoutEarlyInMillis: 0 })
      // Where Powertools' logMetrics and injectLambdaContext leave their cleanup, used before singleton().
      .use({
        before: (request) => {
          request.internal['powertools-for-aws.logger'] = async () => flushed.push('logger')
          request.internal['powertools-for-aws.metrics'] = async () => flushed.push('metrics')
        },
      })
      .use(singleton({ store, clock, logger: false }))
      .handler(async () => clock.sleep(1_000).then(() => 'ran'))
    const [a, b] = await clock.run(
      Promise.all([handler({}, lambdaContext({ clock })), handler({}, lambdaContext({ clock }))]),
    )
    expect([a, b].filter((result) => result === 'ran')).toHaveLength(1) // the other was skipped
    expect(flushed).toEqual(['metrics', 'logger']) // once, for the skip, in Powertools' order
  })
})
