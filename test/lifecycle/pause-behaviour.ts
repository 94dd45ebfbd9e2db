import { describe, expect, it } from 'vitest'
import { silentLogger } from '../../lib/extend.js'
import type { OutcomeEvent, SingletonOptions } from '../../lib/index.js'
import { MemoryLockStore } from '../../lib/memory/index.js'
import { LockOperator } from '../../lib/operator/lock-operator.js'
import { lambdaContext, schedulerEvent } from '../support/lambda-context.js'
import { ManualClock } from '../support/sim-clock.js'
import type { Adapter } from './behaviour.js'

const KEY = 'locks/nightly-report'

function world(adapter: Adapter, options: SingletonOptions = {}) {
  const clock = new ManualClock()
  const memory = new MemoryLockStore({ clock, clockResolutionMs: 1_000 })
  const outcomes: OutcomeEvent[] = []
  const lines: { message: string; fields: unknown }[] = []
  const log = (message: string, fields: unknown) => lines.push({ message, fields })
  const emf: string[] = []
  const record = () => JSON.parse(memory.peek(KEY) ?? 'null')
  const operator = new LockOperator({ store: memory, key: KEY, operator: 'alice@ops', clock })
  let runs = 0
  const handler = adapter(
    async (event, ctx) => {
      runs++
      if ((event as { fail?: boolean }).fail) throw new Error(`run ${runs} failed`)
      const token = await ctx.singleton.fencingToken()
      if ((event as { sleep?: number }).sleep) await clock.sleep((event as { sleep: number }).sleep)
      return { ran: token }
    },
    {
      store: memory,
      clock,
      logger: { ...silentLogger, info: log, warn: log },
      onOutcome: (event) => outcomes.push(event),
      metrics: { write: (line) => emf.push(line) },
      ...options,
    },
  )
  const start = (event: object = {}) => handler(event, lambdaContext({ clock }))
  const invoke = (event: object = {}) => clock.run(start(event))
  return { clock, memory, outcomes, lines, emf, record, operator, start, invoke, runs: () => runs }
}

/** Pausing, as every adapter passes it: on the in-memory store and simulated time. */
export function describePauseBehaviour(name: string, adapter: Adapter): void {
  describe(`${name}: pause and resume`, () => {
    it('skips a paused job with one read and no write, saying who paused it, when and why', async () => {
      const { memory, outcomes, lines, emf, operator, invoke, runs, record } = world(adapter)
      await invoke()
      await operator.pause({ note: 'migrating the table' })
      const before = memory.peek(KEY)
      const requests = { ...memory.requests }
      const skipped = await invoke(schedulerEvent('2026-11-21T03:00:00Z'))
      expect(skipped).toEqual({
        skipped: true,
        reason: 'paused',
        key: KEY,
        tick: '2026-11-21T03:00:00Z',
        paused: {
          by: 'alice@ops',
          at: new Date(record().paused.at * 1000).toISOString(),
          note: 'migrating the table',
        },
        owner: record().owner,
        token: record().token,
        until: undefined,
      })
      expect(runs()).toBe(1)
      expect(memory.peek(KEY)).toBe(before)
      // The warm lock's blind re-acquire is refused (nothing written), then one read says paused.
      expect(memory.requests.create + memory.requests.replace - requests.create - requests.replace).toBe(1)
      const again = { ...memory.requests }
      await invoke()
      expect(memory.requests).toEqual({ ...again, read: again.read + 1 }) // one read, nothing else
      // One shape of a pause: the skipped run's result and the outcome say it alike.
      expect(outcomes.at(-1)).toMatchObject({
        outcome: 'paused',
        key: KEY,
        paused: (skipped as { paused: unknown }).paused,
      })
      expect(lines.at(-1)?.message).toMatch(/^skipped: paused by alice@ops at \d{4}-/)
      expect(lines.at(-1)?.fields).toMatchObject({
        outcome: 'paused',
        paused: { note: 'migrating the table' },
      })
      expect(JSON.parse(emf.at(-1) ?? '{}')).toMatchObject({ Paused: 1 })
    })

    it('runs again once resumed', async () => {
      const { operator, invoke, runs } = world(adapter)
      await invoke()
      await operator.pause()
      expect(await invoke()).toMatchObject({ skipped: true, reason: 'paused' })
      await operator.resume()
      expect(await invoke()).toEqual({ ran: expect.any(Number) })
      expect(runs()).toBe(2)
    })

    it('lets the run that holds the lock finish when paused, and skips from the next run', async () => {
      const { clock, operator, start, invoke, outcomes, record } = world(adapter)
      const running = start({ sleep: 10_000 })
      await clock.advance(2_000) // past the wait for its token: it holds the lock
      await operator.pause({ note: 'after this one' })
      expect(await clock.run(running)).toEqual({ ran: expect.any(Number) })
      expect(outcomes.map((o) => o.outcome)).toEqual(['acquired', 'released'])
      expect(record()).toMatchObject({ v: 2, expires_at: 0, paused: { note: 'after this one' } })
      // The release kept the pause: and the next run, on the same warm container, reads it.
      expect(await invoke()).toMatchObject({ reason: 'paused', paused: { note: 'after this one' } })
      await operator.resume()
      expect(await invoke()).toEqual({ ran: expect.any(Number) })
    })

    it('with now, ends the held lease: the run is told at its next write, and its release is refused', async () => {
      const { clock, operator, start, invoke, outcomes, record } = world(adapter, { ttlMs: 6_000 })
      const running = start({ sleep: 10_000 })
      await clock.advance(2_000) // past the wait for its token: it holds the lock
      const token = record().token
      await operator.pause({ now: true, note: 'stop it' })
      await clock.run(running)
      // The operator's doing, not an accident: its own outcome, naming who.
      expect(outcomes.map((o) => o.outcome)).toEqual(['acquired', 'released-by-operator'])
      expect(outcomes[1]).toMatchObject({ operator: 'alice@ops' })
      expect(record()).toMatchObject({
        expires_at: 0,
        owner: 'paused by alice@ops',
        paused: { note: 'stop it' },
      })
      expect(record().token).toBeGreaterThan(token)
      expect(await invoke()).toMatchObject({ reason: 'paused' })
    })
  })

  describe(`${name}: pauseAfterFailures`, () => {
    it('pauses the job after n failed runs in a row, with the reason in the record, a log line and the metric', async () => {
      const { invoke, record, outcomes, lines, emf, operator, runs } = world(adapter, {
        pauseAfterFailures: 3,
      })
      await expect(invoke({ fail: true })).rejects.toThrow('run 1 failed')
      expect(record()).toMatchObject({ v: 1, failures: 1, failed_run: 1 })
      await expect(invoke({ fail: true })).rejects.toThrow('run 2 failed')
      expect(record()).toMatchObject({ failures: 2, failed_run: 2 })
      expect(record().paused).toBeUndefined()
      await expect(invoke({ fail: true })).rejects.toThrow('run 3 failed')
      expect(record()).toMatchObject({
        v: 2,
        expires_at: 0,
        failures: 3,
        failed_run: 3,
        paused: {
          by: expect.stringMatching(/^nightly-report\//),
          note: '3 failed runs in a row (pauseAfterFailures: 3); the last: Error: run 3 failed',
        },
      })
      expect(outcomes.at(-1)).toMatchObject({
        outcome: 'paused',
        failures: 3,
        paused: { by: record().paused.by },
      })
      expect(lines.at(-1)?.message).toBe('paused after 3 failed runs in a row; resume to run again')
      expect(emf.some((line) => JSON.parse(line).Paused === 1)).toBe(true)
      // From the next run on, it skips (reading afresh: the warm container does not trust its own write).
      expect(await invoke()).toMatchObject({
        skipped: true,
        reason: 'paused',
        paused: { note: expect.stringMatching(/^3 failed/) },
      })
      expect(runs()).toBe(3)
      await operator.resume()
      expect(record().failures).toBeUndefined()
      await expect(invoke({ fail: true })).rejects.toThrow('run 4 failed')
      expect(record()).toMatchObject({ v: 1, failures: 1 })
    })

    it("dates a pause it starts by the store's clock, as the run's history is, on a host an hour slow", async () => {
      const clock = new ManualClock()
      const storeClock = {
        now: () => clock.now() + 3_600_000,
        sleep: (ms: number, signal?: AbortSignal) => clock.sleep(ms, signal),
        schedule: (ms: number, callback: () => void) => clock.schedule(ms, callback),
      }
      const memory = new MemoryLockStore({ clock: storeClock, clockResolutionMs: 1_000 })
      const outcomes: OutcomeEvent[] = []
      const failing = adapter(
        async () => {
          await clock.sleep(2_500) // the pause is dated at the run's end, not its start
          throw new Error('boom')
        },
        { store: memory, clock, logger: false, pauseAfterFailures: 1, onOutcome: (o) => outcomes.push(o) },
      )
      await expect(clock.run(failing({}, lambdaContext({ clock })))).rejects.toThrow('boom')
      const stored = JSON.parse(memory.peek(KEY) ?? 'null')
      expect(Math.abs(stored.paused.at - stored.history.at(-1).ended)).toBeLessThan(1)
      const paused = outcomes.find((o) => o.outcome === 'paused')?.paused
      expect(Math.abs(Date.parse(paused?.at ?? '') / 1000 - stored.paused.at)).toBeLessThan(0.001)
    })

    it('starts counting again after a completed run', async () => {
      const { invoke, record } = world(adapter, { pauseAfterFailures: 2 })
      await expect(invoke({ fail: true })).rejects.toThrow()
      expect(record()).toMatchObject({ failures: 1 })
      await invoke()
      expect(record().failures).toBeUndefined()
      expect(record().failed_run).toBeUndefined()
      await expect(invoke({ fail: true })).rejects.toThrow()
      expect(record()).toMatchObject({ failures: 1, failed_run: 3 })
      expect(record().paused).toBeUndefined()
    })

    it('counts failed runs without the option, and never pauses', async () => {
      const { invoke, record } = world(adapter)
      for (let i = 0; i < 4; i++) await expect(invoke({ fail: true })).rejects.toThrow()
      expect(record()).toMatchObject({ v: 1, failures: 4, failed_run: 4 })
      expect(record().paused).toBeUndefined()
    })
  })
}
