import { describe, expect, it } from 'vitest'
import { Lock, type SingletonOptions } from '../../lib/index.js'
import { MemoryLockStore } from '../../lib/memory/index.js'
import { LockOperator } from '../../lib/operator/lock-operator.js'
import { lambdaContext, schedulerEvent } from '../support/lambda-context.js'
import { ManualClock } from '../support/sim-clock.js'
import type { Adapter } from './behaviour.js'

const KEY = 'locks/nightly-report'

function world(adapter: Adapter, options: SingletonOptions = {}) {
  const clock = new ManualClock()
  const memory = new MemoryLockStore({ clock, clockResolutionMs: 1_000 })
  const record = () => JSON.parse(memory.peek(KEY) ?? 'null')
  const handler = adapter(
    async (event) => {
      const { fail, sleep } = event as { fail?: boolean; sleep?: number }
      if (sleep) await clock.sleep(sleep)
      if (fail) throw new Error('the run failed')
      return 'done'
    },
    { store: memory, clock, logger: false, ...options },
  )
  const invoke = (event: object = {}, requestId?: string) =>
    clock.run(handler(event, lambdaContext({ clock, ...(requestId && { requestId }) })))
  return { clock, memory, record, invoke }
}

const tick = (n: number) => `2026-11-21T${String(n).padStart(2, '0')}:00:00Z`

/** Run history, as every adapter passes it: on the in-memory store and simulated time. */
export function describeHistoryBehaviour(name: string, adapter: Adapter): void {
  describe(`${name}: run history`, () => {
    it('keeps the last 10 runs, oldest first, each with its token, tick, owner, start, end and outcome', async () => {
      const { clock, record, invoke } = world(adapter)
      const tokens: number[] = []
      for (let n = 1; n <= 12; n++) {
        await invoke({ ...schedulerEvent(tick(n)), sleep: 1_500 }, `request-${n}`)
        tokens.push(record().token)
        await clock.advance(60_000)
      }
      const { history } = record()
      expect(history).toHaveLength(10)
      expect(history.map((entry: { token: number }) => entry.token)).toEqual(tokens.slice(2))
      expect(history.map((entry: { tick: string }) => entry.tick)).toEqual(
        Array.from({ length: 10 }, (_, i) => tick(i + 3)),
      )
      const last = history.at(-1)
      expect(last).toEqual({
        token: tokens[11],
        tick: tick(12),
        owner: 'nightly-report/request-12',
        started: record().acquired_at,
        ended: expect.any(Number),
        outcome: 'completed',
      })
      // The run slept 1.5 s, ended by the store's clock (known to within its 1 s resolution).
      expect(last.ended - last.started).toBeGreaterThanOrEqual(0.5)
      expect(last.ended - last.started).toBeLessThan(3)
    })

    it('records a failed run as failed, and a run without a tick without one', async () => {
      const { record, invoke } = world(adapter)
      await expect(invoke({ fail: true })).rejects.toThrow('the run failed')
      expect(record().history).toEqual([
        expect.objectContaining({ token: record().token, outcome: 'failed' }),
      ])
      expect(record().history[0]).not.toHaveProperty('tick')
    })

    it('records a run that never released as abandoned, when the next run takes over its expired lease', async () => {
      const { clock, memory, record, invoke } = world(adapter)
      await invoke(schedulerEvent(tick(1)))
      // A run that crashed: it took the lock and never released it.
      const crashed = new Lock({
        store: memory,
        key: KEY,
        owner: 'nightly-report/crashed',
        clock,
        ttlMs: 10_000,
      })
      await clock.run(crashed.tryAcquire())
      const crashedRecord = record()
      await clock.advance(30_000)
      await invoke(schedulerEvent(tick(2)))
      const outcomes = record().history.map((entry: { outcome: string }) => entry.outcome)
      expect(outcomes).toEqual(['completed', 'abandoned', 'completed'])
      expect(record().history[1]).toEqual({
        token: crashedRecord.token,
        owner: 'nightly-report/crashed',
        started: crashedRecord.acquired_at,
        ended: crashedRecord.expires_at,
        outcome: 'abandoned',
      })
    })

    it('writes no history with historySize 0, and the same requests either way', async () => {
      const counts = []
      for (const historySize of [0, 10]) {
        const { memory, record, invoke } = world(adapter, { historySize })
        for (let n = 1; n <= 3; n++) await invoke(schedulerEvent(tick(n)))
        await expect(invoke({ fail: true })).rejects.toThrow()
        if (historySize === 0) expect(record()).not.toHaveProperty('history')
        else expect(record().history).toHaveLength(4)
        counts.push({ ...memory.requests })
      }
      expect(counts[1]).toEqual(counts[0])
    })

    it('keeps the history through pause, resume and pauseAfterFailures', async () => {
      const { memory, clock, record, invoke } = world(adapter, { pauseAfterFailures: 2 })
      await invoke(schedulerEvent(tick(1)))
      await expect(invoke({ fail: true })).rejects.toThrow()
      await expect(invoke({ fail: true })).rejects.toThrow()
      expect(record().paused).toBeDefined()
      expect(record().history.map((entry: { outcome: string }) => entry.outcome)).toEqual([
        'completed',
        'failed',
        'failed',
      ])
      const operator = new LockOperator({ store: memory, key: KEY, operator: 'alice@ops', clock })
      await clock.run(operator.resume())
      expect(record().history).toHaveLength(3)
    })

    it('refuses a historySize that is not a whole number of runs', () => {
      for (const historySize of [-1, 1.5, Number.NaN, 101, '10' as unknown as number]) {
        expect(() => world(adapter, { historySize })).toThrow(/historySize must be a whole number of runs/)
      }
    })
  })
}
