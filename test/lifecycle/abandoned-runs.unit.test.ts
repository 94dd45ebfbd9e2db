import { describe, expect, it } from 'vitest'
import { SingletonLifecycle } from '../../lib/extend.js'
import { schedulerEvent } from '../support/lambda-context.js'
import { KEY, world } from './world.js'

/**
 * An adapter may fail to end a run (Middy skips a middleware's after and onError when a later one
 * ends the request early). In Lambda one invocation runs at a time, so the next invocation
 * releases a run whose invocation is over by the clock.
 */
function setup() {
  const w = world()
  const lifecycle = new SingletonLifecycle(w.options(), 'test')
  /** Begins a run on the manual clock: its lease is handed out once the store's clock has reached its token. */
  const begin = async (event: unknown = {}, timeoutMs = 3_000) => {
    const start = await w.clock.run(lifecycle.begin(event, w.context({ timeoutMs })))
    if (start.status !== 'running') throw new Error(`expected to run, got ${JSON.stringify(start)}`)
    return start.run
  }
  /** The next invocation's begin, on the manual clock. */
  const next = (event: unknown = {}) => w.clock.run(lifecycle.begin(event, w.context()))
  return { ...w, lifecycle, begin, next }
}

describe('runs whose adapter never ended them', () => {
  it('are released by the next invocation once their invocation is over, exactly at its end', async () => {
    const { clock, begin, next, outcomes, lines } = setup()
    const invokedAt = clock.now()
    const abandoned = await begin({}, 3_000)
    await clock.advance(invokedAt + 2_999 - clock.now())
    expect(await next()).toMatchObject({ status: 'skipped' })
    await clock.advance(1)
    expect(clock.now()).toBe(invokedAt + 3_000)
    expect(await next()).toMatchObject({ status: 'running' })
    // Its lease ran out with the invocation: freed (a write conditional on its etag), not reported released.
    expect(outcomes.map((o) => o.outcome)).toEqual(['acquired', 'held', 'error', 'acquired'])
    expect(outcomes[2]).toEqual({ outcome: 'error', key: KEY, token: abandoned.lease.record.token })
    expect(lines[2]?.level).toBe('warn')
  })

  it('are released without marking their tick done, so a retry of that tick runs', async () => {
    const { clock, begin, next, record } = setup()
    const invokedAt = clock.now()
    await begin(schedulerEvent('2026-11-21T03:00:00Z'), 3_000)
    await clock.advance(invokedAt + 3_000 - clock.now())
    expect(await next(schedulerEvent('2026-11-21T03:00:00Z'))).toMatchObject({ status: 'running' })
    expect(record().last_run).toBeUndefined()
  })

  it('are not released while their invocation still runs', async () => {
    const { clock, begin, next, record } = setup()
    const run = await begin({}, 60_000)
    await clock.advance(1_000)
    expect(await next()).toMatchObject({ status: 'skipped' })
    expect(record()).toMatchObject({ token: run.lease.record.token, expires_at: expect.any(Number) })
    expect(record().expires_at).toBeGreaterThan(0)
  })

  it('do not include runs that were ended', async () => {
    const { clock, lifecycle, begin, next, kinds } = setup()
    const run = await begin({}, 3_000)
    await lifecycle.end(run, true)
    await clock.advance(10_000)
    await next()
    expect(kinds()).toEqual(['acquired', 'released', 'acquired'])
  })

  it('stop a handler still at work with an AbortError on its signal, which code that passed the signal on (fetch, fencedPut) already handles', async () => {
    const { clock, begin, next } = setup()
    const invokedAt = clock.now()
    const abandoned = await begin({}, 3_000)
    await clock.advance(invokedAt + 3_000 - clock.now())
    await next()
    expect(abandoned.handle.signal.aborted).toBe(true)
    const reason = abandoned.handle.signal.reason as Error
    expect(reason.name).toBe('AbortError')
    expect(reason.message).toMatch(/ended with the invocation/)
  })
})
