import { describe, expect, it } from 'vitest'
import { KEY, world } from './world.js'

/**
 * A release that fails is news for an operator, whatever the reason: the lock stays held until
 * its lease runs out, and every run until then skips. No release failure goes unlogged.
 */
describe('a release that fails', () => {
  it('is logged at error level with the key and the reason when the engine refuses a write whose condition holds', async () => {
    const { clock, store, wrap, context, lines, outcomes } = world()
    const start = clock.now()
    // An engine that refuses every write though the record is unchanged (as dynalite did), each
    // answer after half a second: the release says so after one read, instead of retrying until
    // the lease is over.
    const refused = Array.from({ length: 200 }, () => async () => {
      await clock.sleep(500)
      return 'precondition-failed' as const
    })
    const handler = wrap(async () => {
      store.script('replace', ...refused)
    })
    await clock.run(handler({}, context({ timeoutMs: 10_000 })))
    expect(outcomes.map((o) => o.outcome)).toEqual(['acquired', 'release-failed'])
    const failed = outcomes.find((o) => o.outcome === 'release-failed')
    expect(failed).toMatchObject({ key: KEY, error: { name: 'LockStoreError' } })
    expect(String((failed as { error?: unknown }).error)).toMatch(/precondition-failed .* yet a read shows/)
    expect(clock.now() - start).toBeLessThan(2_000)
    expect(lines).toContainEqual(
      expect.objectContaining({
        level: 'error',
        message: expect.stringMatching(/could not be released/),
        fields: expect.objectContaining({ key: KEY, outcome: 'release-failed' }),
      }),
    )
  })

  it('is logged at error level when the store refuses it outright', async () => {
    const { clock, store, wrap, context, outcomes, lines } = world()
    const handler = wrap(async () => {
      store.script('replace', 'fatal')
    })
    await clock.run(handler({}, context({ timeoutMs: 10_000 })))
    expect(outcomes.find((o) => o.outcome === 'release-failed')).toMatchObject({
      key: KEY,
      error: { name: 'LockStoreError' },
    })
    expect(lines.filter((line) => line.level === 'error')).toHaveLength(1)
  })

  it('is logged at error level before the invocation ends, when the store does not answer in time (a host cut off from it)', async () => {
    const { clock, store, wrap, context, outcomes, lines } = world()
    const start = clock.now()
    // Every write times out after 4 s: tried again and again, the release would outlast the
    // invocation, which Lambda ends with nothing said.
    const cutOff = Array.from({ length: 50 }, () => async () => {
      await clock.sleep(4_000)
      return 'transient' as const
    })
    const handler = wrap(async () => {
      store.script('replace', ...cutOff)
    })
    await clock.run(handler({}, context({ timeoutMs: 10_000 })))
    expect(clock.now() - start).toBeLessThan(10_000)
    expect(outcomes.map((o) => o.outcome)).toEqual(['acquired', 'release-failed'])
    expect(lines).toContainEqual(
      expect.objectContaining({
        level: 'error',
        message: expect.stringMatching(/could not be released/),
        fields: expect.objectContaining({ key: KEY, outcome: 'release-failed' }),
      }),
    )
  })

  it('is not reported twice when the lease was lost, and so reported, before the release', async () => {
    const { clock, store, wrap, context, outcomes, record } = world()
    const handler = wrap(async () => {
      store.memory.putRaw(KEY, JSON.stringify({ ...record(), token: record().token + 1, owner: 'thief' }))
      // The lease's own watchdog is not what finds it here: the release does.
    })
    await clock.run(handler({}, context({ timeoutMs: 10_000 })))
    expect(outcomes.map((o) => o.outcome)).toEqual(['acquired', 'lost'])
  })
})
