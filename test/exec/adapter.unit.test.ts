// exec's adapter around its command, on an in-memory store and simulated time: what happens
// between taking the lock and starting the command, and what exec ends with.
import { describe, expect, it } from 'vitest'
import { ExitCode } from '../../lib/cli/exit-codes.js'
import { type ExecWorld, exec } from '../../lib/exec/adapter.js'
import { ExecOnHeld, type ExecSettings } from '../../lib/exec/settings.js'
import { LockOperator } from '../../lib/operator/lock-operator.js'
import { ScriptedStore, type Step } from '../support/scripted-store.js'
import { SimTime } from '../support/sim-clock.js'
import { FakeGroup, FakeSignals } from './fake-group.js'

const KEY = 'jobs/nightly'

const SETTINGS: ExecSettings = {
  argv: ['./nightly.sh'],
  ttlMs: 60_000,
  onHeld: ExecOnHeld.Skip,
  waitMs: 0,
  tick: undefined,
  maxTickAgeMs: undefined,
  // One failed run would pause the job: a run that never started must not count as one.
  pauseAfterFailures: 1,
  killAfterMs: 10_000,
}

function setup() {
  const time = new SimTime()
  // Whole seconds, as S3 and DynamoDB date their answers: the first token is waited for.
  const store = new ScriptedStore({ clock: time.serverClock, clockResolutionMs: 1_000 })
  const lines: Record<string, unknown>[] = []
  const started: FakeGroup[] = []
  const clock = time.localClock()
  const world: ExecWorld = {
    clock,
    signals: new FakeSignals(),
    start: () => () => {
      const group = new FakeGroup(clock)
      started.push(group)
      queueMicrotask(() => group.exit(0))
      return group
    },
    runId: () => '4242-abcd',
    locate: async () => undefined,
  }
  const run = (settings: ExecSettings = SETTINGS) =>
    exec(
      {
        settings,
        key: KEY,
        store,
        operator: 'ops@host',
        err: (text) => lines.push(JSON.parse(text) as Record<string, unknown>),
      },
      world,
    )
  const record = () => JSON.parse(store.memory.peek(KEY) ?? 'null') as Record<string, unknown>
  /** Reads that come once the lock was taken do `step`, the acquisition's own read is answered. */
  const afterAcquiring = (step: Step, count = 1_000) =>
    store.script(
      'read',
      ...Array.from(
        { length: count },
        () => (memory: typeof store.memory) => (memory.peek(KEY) === undefined ? 'ok' : step),
      ),
    )
  return { time, store, lines, started, run, record, afterAcquiring }
}

describe('exec, between taking the lock and starting the command', () => {
  it('gives the lock back unrun and exits 1 when the read after the token wait fails: a store failure, not a lost lease', async () => {
    const { lines, started, run, record, afterAcquiring } = setup()
    afterAcquiring('transient')
    expect(await run()).toBe(ExitCode.Failure)
    expect(started).toEqual([])
    // Given back: free at once, and no run recorded, so nothing counts towards a pause.
    expect(record()).toMatchObject({ expires_at: 0 })
    expect(record()).not.toHaveProperty('history')
    expect(record()).not.toHaveProperty('failures')
    expect(record()).not.toHaveProperty('paused')
    expect(lines).toContainEqual(
      expect.objectContaining({
        level: 'ERROR',
        key: KEY,
        error: expect.objectContaining({ name: 'LockStoreError', exitCode: ExitCode.Failure }),
      }),
    )
    expect(lines.map((line) => line.message)).not.toContain('stopping the command: the lease was lost')
  })

  it('exits 1, the command unrun, when the lock cannot even be given back (it then expires by itself)', async () => {
    const { store, started, run, record, afterAcquiring } = setup()
    afterAcquiring('fatal')
    store.script('replace', ...Array.from({ length: 50 }, () => 'fatal' as const))
    expect(await run()).toBe(ExitCode.Failure)
    expect(started).toEqual([])
    expect(record()).not.toHaveProperty('history')
    expect(record()).not.toHaveProperty('failures')
  })

  it('exits 8, the command unrun, when the lease was ended while its token was awaited', async () => {
    const { time, started, run, afterAcquiring } = setup()
    let ended = false
    afterAcquiring(async (memory): Promise<Step> => {
      if (!ended) {
        ended = true
        await new LockOperator({
          store: memory,
          key: KEY,
          operator: 'alice',
          clock: time.serverClock,
        }).forceRelease()
      }
      return 'ok'
    })
    expect(await run()).toBe(ExitCode.Lost)
    expect(started).toEqual([])
  })

  it('runs the command when the read after the token wait finds the lease still ours', async () => {
    const { started, run, record } = setup()
    expect(await run()).toBe(ExitCode.Ok)
    expect(started).toHaveLength(1)
    expect(record()).toMatchObject({ expires_at: 0, history: [{ outcome: 'completed' }] })
  })
})
