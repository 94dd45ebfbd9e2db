import { describe, expect, it } from 'vitest'
import { LockOptionsError, LockStoreError } from '../../lib/index.js'
import { world } from './world.js'

/**
 * An invocation whose deadline has passed by the time it asks for the lock (it was frozen, or
 * its event loop blocked, before the handler's turn came): nothing is asked of the store, and
 * the error says what happened, not that an option was wrong.
 */
describe('an invocation with no time left', () => {
  it('asks the store nothing and fails with a LockStoreError saying its deadline passed, not an options error', async () => {
    const { clock, store, wrap, context, outcomes } = world()
    const handler = wrap(async () => 'ran')
    const error = await clock.run(handler({}, context({ timeoutMs: 0 }))).catch((e: unknown) => e)
    expect(error).not.toBeInstanceOf(LockOptionsError)
    expect(error).toBeInstanceOf(LockStoreError)
    expect(String(error)).toMatch(/deadline/)
    expect(store.calls).toEqual([])
    expect(outcomes.map((o) => o.outcome)).toEqual(['error'])
  })
})
