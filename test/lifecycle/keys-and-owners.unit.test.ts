import { describe, expect, it, vi } from 'vitest'
import { type LambdaContext, LockOptionsError } from '../../lib/index.js'
import { world } from './world.js'

describe('lock keys', () => {
  it.each([
    ['an empty string', () => ''],
    ['a number', () => 42 as unknown as string],
  ])('refuses a key function that returns %s, at the invocation', async (_, key) => {
    const { clock, wrap, context, store } = world()
    await expect(clock.run(wrap(async () => 'ran', { key })({}, context()))).rejects.toBeInstanceOf(
      LockOptionsError,
    )
    expect(store.calls).toEqual([])
  })

  it('refuses to run without a key outside Lambda, where no function name can stand for one', async () => {
    const { clock, wrap } = world()
    const error = await clock.run(wrap(async () => 'ran')({}, {} as LambdaContext)).catch((e: unknown) => e)
    expect(error).toBeInstanceOf(LockOptionsError)
    expect((error as Error).message).toMatch(/no key/)
  })

  it('is the function name by default, or the key the constructs name (LAMBDA_SINGLETON_KEY), which outlives a renamed function', async () => {
    const { clock, wrap, context, outcomes } = world()
    const handler = wrap(async () => 'ran')
    const keys = async (functionName: string) => {
      await clock.run(handler({}, context({ functionName })))
      return outcomes.at(-1)?.key
    }
    vi.stubEnv('LAMBDA_SINGLETON_KEY', '')
    expect(await keys('Jobs-NightlyReport-AbC123')).toBe('locks/Jobs-NightlyReport-AbC123')
    vi.stubEnv('LAMBDA_SINGLETON_KEY', 'Jobs/NightlyReport')
    try {
      expect(await keys('Jobs-NightlyReport-AbC123')).toBe('locks/Jobs/NightlyReport')
      expect(await keys('Jobs-NightlyReport-XyZ789')).toBe('locks/Jobs/NightlyReport') // replaced by CDK
      const given = wrap(async () => 'ran', { key: 'explicit' })
      await clock.run(given({}, context()))
      expect(outcomes.at(-1)?.key).toBe('locks/explicit') // the option wins
    } finally {
      vi.unstubAllEnvs()
    }
  })

  it('re-acquires a warm key with one request: the lock of each key is kept between invocations', async () => {
    const { clock, store, wrap, context } = world()
    const handler = wrap(async () => 'ran')
    await clock.run(handler({}, context()))
    store.calls.length = 0
    await clock.run(handler({}, context()))
    expect(store.calls).toEqual(['replace', 'replace']) // acquire from its cache, then release
  })

  it('keeps the locks of the 256 most recent new keys, forgetting the oldest first', async () => {
    const { clock, store, wrap, context } = world()
    const handler = wrap(async () => 'ran', { key: (event) => (event as { key: string }).key })
    for (let i = 0; i <= 256; i++) await clock.run(handler({ key: `k${i}` }, context()))
    store.calls.length = 0
    await clock.run(handler({ key: 'k1' }, context())) // still kept: one blind write
    expect(store.calls).toEqual(['replace', 'replace'])
    store.calls.length = 0
    await clock.run(handler({ key: 'k0' }, context())) // forgotten: it reads first
    expect(store.calls).toEqual(['read', 'replace', 'replace'])
  })

  it('forgets the least recently used first: a key used again is kept', async () => {
    const { clock, store, wrap, context } = world()
    const handler = wrap(async () => 'ran', { key: (event) => (event as { key: string }).key })
    for (let i = 0; i < 256; i++) await clock.run(handler({ key: `k${i}` }, context()))
    await clock.run(handler({ key: 'k0' }, context())) // used again: now the most recent
    await clock.run(handler({ key: 'k256' }, context())) // one more key: k1 goes, not k0
    store.calls.length = 0
    await clock.run(handler({ key: 'k0' }, context()))
    expect(store.calls).toEqual(['replace', 'replace'])
  })

  it('counts a run that was swept and then ended by its handler once: its key stays in use by the next run', async () => {
    const { clock, wrap, context } = world()
    let running = 0
    let most = 0
    const handler = wrap(
      async (event) => {
        const { key, sleep = 0 } = event as { key: string; sleep?: number }
        // A, swept while it runs on deaf, overlaps C by its own doing: count C and its redelivery.
        if (key !== 'x' || sleep !== 60_000) return clock.sleep(sleep).then(() => 'ran')
        running++
        most = Math.max(most, running)
        await clock.sleep(sleep) // deaf to its signal, as most handlers are
        running--
        return 'ran'
      },
      { key: (event) => (event as { key: string }).key, tickId: false },
    )
    // A outlives its invocation: the next invocation sweeps its run (one end), and its handler
    // returns later (a second end).
    const a = handler({ key: 'x', sleep: 5_000 }, context({ timeoutMs: 3_000, requestId: 'RA' }))
    await clock.advance(3_000)
    await clock.run(handler({ key: 'y' }, context()))
    const c = handler({ key: 'x', sleep: 60_000 }, context({ requestId: 'RC' }))
    await clock.advance(2_500)
    for (let i = 0; i < 256; i++) await clock.run(handler({ key: `o${i}` }, context()))
    const again = handler({ key: 'x', sleep: 60_000 }, context({ requestId: 'RC' }))
    await clock.run(Promise.allSettled([a, c, again]))
    expect(most).toBe(1)
  })

  it('keeps a running key in use when another invocation of it skips: its lock is not forgotten', async () => {
    const { clock, wrap, context, outcomes } = world()
    const { handler, most } = keyXRuns(clock, wrap)
    const first = handler({ key: 'x' }, context({ requestId: 'RA' }))
    await clock.advance(10)
    await clock.run(handler({ key: 'x' }, context({ requestId: 'RB' }))) // held: skips, gives its use back
    for (let i = 0; i < 256; i++) await clock.run(handler({ key: `o${i}` }, context()))
    const again = handler({ key: 'x' }, context({ requestId: 'RA' }))
    await clock.run(Promise.all([first, again]))
    expect(most()).toBe(1)
    expect(outcomes.filter((o) => o.key === 'locks/x').map((o) => o.outcome)).toEqual([
      'acquired',
      'held',
      'held',
      'released',
    ])
  })

  it('never forgets the lock of a run under way: a second delivery of its request waits its turn', async () => {
    const { clock, wrap, context, outcomes } = world()
    const { handler, most } = keyXRuns(clock, wrap)
    const first = handler({ key: 'x' }, context({ requestId: 'R' }))
    await clock.advance(10)
    // 256 other keys while it runs: the cache is full, and x's lock is the oldest in it.
    for (let i = 0; i < 256; i++)
      await clock.run(handler({ key: `other-${i}` }, context({ requestId: `o${i}` })))
    const again = handler({ key: 'x' }, context({ requestId: 'R' })) // Lambda delivers R again, to this instance
    await clock.run(Promise.all([first, again]))
    expect(most()).toBe(1)
    expect(outcomes.filter((o) => o.key === 'locks/x').map((o) => o.outcome)).toEqual([
      'acquired',
      'held',
      'released',
    ])
  })
})

describe('owners', () => {
  const owners = async (contexts: LambdaContext[]) => {
    const { clock, wrap, outcomes } = world()
    const handler = wrap(async () => 'ran', { key: 'job' })
    for (const context of contexts) await clock.run(handler({}, context))
    return outcomes.filter((o) => o.outcome === 'acquired').map((o) => o.owner ?? '')
  }

  it('are the function name and the request id in Lambda, so a retry of the invocation is its owner', async () => {
    const { context } = world()
    expect(await owners([context({ requestId: 'r1' }), context({ requestId: 'r1' })])).toEqual([
      'nightly-report/r1',
      'nightly-report/r1',
    ])
  })

  it('are unique per invocation without a request id: under the function name, else under "local"', async () => {
    const named = { functionName: 'job-fn' } as LambdaContext
    const [a, b] = await owners([named, named])
    expect(a).toMatch(/^job-fn\/[0-9a-f-]{36}$/)
    expect(b).not.toBe(a)
    const [c] = await owners([{} as LambdaContext])
    expect(c).toMatch(/^local\/[0-9a-f-]{36}$/)
    const [d] = await owners([{ awsRequestId: 'r1' } as LambdaContext])
    expect(d).toMatch(/^local\/[0-9a-f-]{36}$/)
  })
})

/**
 * A handler keyed by its event's `key`, whose runs of key x take 5 s: `most()` is how many of
 * them ran at once, at most.
 */
function keyXRuns(clock: ReturnType<typeof world>['clock'], wrap: ReturnType<typeof world>['wrap']) {
  let running = 0
  let most = 0
  const handler = wrap(
    async (event) => {
      if ((event as { key: string }).key !== 'x') return 'ran'
      running++
      most = Math.max(most, running)
      await clock.sleep(5_000)
      running--
      return 'ran'
    },
    { key: (event) => (event as { key: string }).key, tickId: false },
  )
  return { handler, most: () => most }
}
