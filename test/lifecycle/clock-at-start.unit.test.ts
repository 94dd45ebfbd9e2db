import { afterEach, describe, expect, it, vi } from 'vitest'
import { STARTUP_PROBES } from '../../lib/core/clock-probe.js'
import { withSingleton } from '../../lib/index.js'
import { silentLogger } from '../../lib/lifecycle/logger.js'
import { lambdaContext } from '../support/lambda-context.js'
import { ScriptedStore } from '../support/scripted-store.js'
import { ManualClock } from '../support/sim-clock.js'

/**
 * A `singleton()` or `withSingleton()` made at module scope runs during Lambda's INIT: it learns
 * the store's clock then, so that a cold start's first token waits a few ms, not a second.
 */
afterEach(() => {
  vi.unstubAllEnvs()
})

function coldStart() {
  // The store's Date counts whole seconds; INIT begins as a second begins.
  const clock = new ManualClock()
  const store = new ScriptedStore({ clock })
  let waitedMs = Number.NaN
  const handler = withSingleton(
    async (_event: unknown, context) => {
      const asked = clock.now()
      await context.singleton.fencingToken()
      waitedMs = clock.now() - asked
    },
    { store, clock, key: 'nightly', logger: silentLogger, metrics: false },
  )
  const invoke = () => clock.run(handler({}, lambdaContext({ clock })))
  return { clock, store, invoke, waited: () => waitedMs }
}

describe('learning the store clock at start', () => {
  it('inside Lambda, asks the store the time during INIT, a few times, so the first token waits a tenth of the second it might', async () => {
    vi.stubEnv('AWS_LAMBDA_FUNCTION_NAME', 'nightly')
    const { clock, store, invoke, waited } = coldStart()
    await clock.advance(1_600) // INIT, and the time before the first invocation arrives
    const atStart = store.memory.requests.probe
    expect(atStart).toBeGreaterThan(1)
    expect(atStart).toBeLessThanOrEqual(STARTUP_PROBES)
    await invoke()
    // The probes walked across the store's turn of its second, a tenth of it apart.
    expect(waited()).toBeLessThanOrEqual(1_000 / STARTUP_PROBES + 10)
  })

  it('outside Lambda, sends nothing before the first invocation, whose token then waits up to a second', async () => {
    const { clock, store, invoke, waited } = coldStart()
    await clock.advance(1_600)
    expect(store.memory.requests).toMatchObject({ read: 0, create: 0, replace: 0, probe: 0 })
    await invoke()
    expect(waited()).toBeGreaterThan(100)
  })

  it('does not fail the import when the store cannot be built: the first invocation says why', async () => {
    vi.stubEnv('AWS_LAMBDA_FUNCTION_NAME', 'nightly')
    vi.stubEnv('LAMBDA_SINGLETON_BUCKET', '')
    vi.stubEnv('LAMBDA_SINGLETON_TABLE', '')
    const clock = new ManualClock()
    const handler = withSingleton(async () => 'ran', { clock, logger: silentLogger, metrics: false })
    await clock.advance(1_600)
    await expect(clock.run(handler({}, lambdaContext({ clock })))).rejects.toThrow(/LAMBDA_SINGLETON_BUCKET/)
  })
})
