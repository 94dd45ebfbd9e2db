import { afterEach, describe, expect, it, vi } from 'vitest'
import { PROBES_PER_TICK, STARTUP_PROBES } from '../../lib/core/clock-probe.js'
import { RECORD_VERSION, serializeRecord } from '../../lib/core/record.js'
import { withSingleton } from '../../lib/index.js'
import { silentLogger } from '../../lib/lifecycle/logger.js'
import { MemoryLockStore } from '../../lib/memory/index.js'
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

function coldStart({ released = false, readsToken = true, phaseMs = 0, takes = false } = {}) {
  // The store's Date counts whole seconds; INIT begins as a second begins (or phaseMs after).
  const clock = new ManualClock(1_800_000_000_000 + phaseMs)
  const store = new ScriptedStore({ clock })
  // A store that takes a released lock in one write (DynamoDB's): the memory store itself.
  const taking = takes ? new MemoryLockStore({ clock, clockResolutionMs: 1_000, takes }) : undefined
  const memory = taking ?? store.memory
  // The record an earlier run released, as a cron's lock is between two runs.
  if (released)
    memory.putRaw(
      'locks/nightly',
      serializeRecord({ v: RECORD_VERSION, token: 7, expires_at: 0, owner: 'earlier' }),
    )
  let waitedMs = Number.NaN
  const handler = withSingleton(
    async (_event: unknown, context) => {
      const asked = clock.now()
      if (readsToken) await context.singleton.fencingToken()
      waitedMs = clock.now() - asked
    },
    {
      store: taking ?? store,
      clock,
      key: 'nightly',
      logger: silentLogger,
      metrics: false,
    },
  )
  const invoke = () => clock.run(handler({}, lambdaContext({ clock })))
  return { clock, store, memory, invoke, waited: () => waitedMs }
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

  it('inside Lambda, reads the lock during INIT, so that the first invocation takes it with one write and no read', async () => {
    vi.stubEnv('AWS_LAMBDA_FUNCTION_NAME', 'nightly')
    const { clock, store, invoke } = coldStart({ released: true })
    await clock.advance(1_600)
    expect(store.memory.requests.read).toBe(1)
    const before = { ...store.memory.requests }
    await invoke()
    // The acquisition and the release: no read.
    expect(store.memory.requests).toMatchObject({ read: before.read, replace: before.replace + 2 })
  })

  it('shares the read of INIT with an invocation that begins while it is under way: one read in all', async () => {
    vi.stubEnv('AWS_LAMBDA_FUNCTION_NAME', 'nightly')
    const { store, invoke } = coldStart({ released: true, readsToken: false })
    await invoke()
    expect(store.memory.requests).toMatchObject({ read: 1, replace: 2 })
  })

  it('stops its probes of the store clock for good once an invocation begins: a handler that never reads its token sends none', async () => {
    vi.stubEnv('AWS_LAMBDA_FUNCTION_NAME', 'nightly')
    const { clock, store, invoke } = coldStart({ released: true, readsToken: false })
    await clock.advance(100) // INIT's read has dated the store's clock; its probes have begun
    const probesAtInvoke = store.memory.requests.probe
    // The acquisition's write takes 400 ms: no probe is sent meanwhile...
    let probesDuringWrite = Number.NaN
    store.script('replace', async () => {
      await clock.sleep(400)
      probesDuringWrite = store.memory.requests.probe - probesAtInvoke
      return 'ok' as const
    })
    await invoke()
    expect(probesDuringWrite).toBe(0)
    // ...nor afterwards, within what would have been INIT's budget: only a token awaited probes.
    await clock.advance(1_600)
    expect(store.memory.requests.probe).toBe(probesAtInvoke)
  })

  it('sends no probe in a cold start whose invocation begins at once and never reads its token', async () => {
    vi.stubEnv('AWS_LAMBDA_FUNCTION_NAME', 'nightly')
    for (const released of [false, true]) {
      const { clock, store, invoke } = coldStart({ released, readsToken: false })
      await invoke()
      await clock.advance(1_600)
      expect(store.memory.requests.probe, released ? 'a released record' : 'no record yet').toBe(0)
    }
  })

  it('leaves a cold start’s own invocation, which Lambda hands over as INIT ends, to run without a probe beside it', async () => {
    vi.stubEnv('AWS_LAMBDA_FUNCTION_NAME', 'nightly')
    // S3's store reads the lock during INIT; DynamoDB's takes it in the invocation's one request,
    // and so asks the store the time at once.
    for (const [released, takes] of [
      [false, false],
      [true, false],
      [true, true],
    ]) {
      const { clock, memory, invoke } = coldStart({ released, readsToken: false, takes })
      // The runtime asks for the event that caused the start (the Runtime API's next): a round
      // trip on the host, during which INIT's promises run on.
      await clock.advance(2)
      await invoke()
      await clock.advance(1_600)
      expect(
        memory.requests.probe,
        `${released ? 'released' : 'no record'}, ${takes ? 'takes' : 'reads'}`,
      ).toBe(0)
    }
  })

  it('lets a token awaited as soon as INIT is done probe at its own pace, not at INIT’s coarser one', async () => {
    vi.stubEnv('AWS_LAMBDA_FUNCTION_NAME', 'nightly')
    for (const phaseMs of [0, 37, 333, 561]) {
      const { clock, invoke, waited } = coldStart({ released: true, phaseMs })
      await clock.advance(100) // INIT's read and a first probe, a tenth of the second apart
      await invoke()
      // The wait ends within a fortieth of a second after the store's second turns.
      expect(waited(), `INIT at ${phaseMs} ms past the second`).toBeLessThanOrEqual(
        1_000 - phaseMs - 100 + 1_000 / PROBES_PER_TICK + 5,
      )
    }
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
