import middy from '@middy/core'
import { describe, expect, it } from 'vitest'
import { ReadStatus } from '../../lib/core/store.js'
import { LockLostError, type OutcomeEvent } from '../../lib/index.js'
import { type SingletonContext, type SingletonOptions, singleton } from '../../lib/middy/index.js'
import { lambdaContext, schedulerEvent } from '../support/lambda-context.js'
import type { EngineTarget } from './engine-suite.js'

const silent = { info() {}, warn() {}, error() {} }
const measured = (what: string, value: number | string) =>
  console.info(`[schedule-control measure] ${what}: ${value}`)

/**
 * Schedule control through the middleware on a real engine, with real time: replace, late
 * ticks, run history. The policies are specified on simulated time (test/lifecycle/*-behaviour.ts);
 * this shows them on the services. Delays are measured and printed, not bounded.
 */
export function describeScheduleControlOnEngine(name: string, target: () => EngineTarget): void {
  let functions = 0
  const functionName = (label: string) => `${label}-${++functions}-${Date.now()}`
  const stored = async (key: string) => {
    const read = await target().store().read(key)
    return read.status === ReadStatus.Found ? JSON.parse(read.body) : undefined
  }
  /** One container of the function: a handler behind the middleware, and what it reported. */
  const container = <TResult>(
    body: (event: unknown, context: SingletonContext) => Promise<TResult>,
    options: SingletonOptions = {},
  ) => {
    const outcomes: OutcomeEvent[] = []
    const handler = middy<unknown, unknown, Error, SingletonContext>()
      .use(
        singleton({
          store: target().store(),
          logger: silent,
          onOutcome: (o) => outcomes.push(o),
          ...options,
        }),
      )
      .handler(body)
    return { handler, outcomes }
  }

  describe(`schedule control through singleton() on ${name}`, () => {
    it("replace: a newer tick's invocation takes the lock; the older run's signal aborts (replaced) within a heartbeat", async () => {
      const fn = functionName('replace')
      const key = `locks/${fn}`
      let abortedAt: number | undefined
      let reason: unknown
      const old = container(
        async (_event, context) => {
          const { signal } = context.singleton
          await new Promise<void>((resolve) =>
            signal.addEventListener('abort', () => {
              abortedAt = Date.now()
              reason = signal.reason
              resolve()
            }),
          )
          signal.throwIfAborted()
        },
        { onHeld: 'replace', ttlMs: 4_000 },
      )
      const newer = container(async (_event, context) => await context.singleton.fencingToken(), {
        onHeld: 'replace',
        ttlMs: 4_000,
      })
      const context = () => lambdaContext({ functionName: fn, timeoutMs: 60_000 })
      const first = old.handler(schedulerEvent('2026-11-25T03:00:00Z'), context())
      first.catch(() => undefined)
      for (let tries = 0; !(await stored(key))?.running && tries < 500; tries++) {
        await new Promise((resolve) => setTimeout(resolve, 20))
      }
      const oldToken = (await stored(key))?.token
      const replacingAt = Date.now()
      const token = await newer.handler(schedulerEvent('2026-11-25T03:05:00Z'), context())
      await expect(first).rejects.toBeInstanceOf(LockLostError)
      expect(reason).toMatchObject({ reason: 'replaced', token: oldToken })
      expect(token).toBeGreaterThan(oldToken)
      const record = await stored(key)
      expect(record).toMatchObject({ token, expires_at: 0, last_run: '2026-11-25T03:05:00Z' })
      expect(record.replaced).toMatchObject({ token: oldToken, tick: '2026-11-25T03:00:00Z' })
      expect(record.history.map((entry: { outcome: string }) => entry.outcome)).toEqual([
        'replaced',
        'completed',
      ])
      expect(newer.outcomes[0]).toMatchObject({ outcome: 'acquired', replaced: { token: oldToken } })
      expect(old.outcomes.map((o) => o.outcome)).toEqual(['acquired', 'replaced'])
      // From the start of the replacing invocation (its read and write come first), by this clock.
      measured(
        `${name}: replacing invocation starts -> the replaced run's signal aborts (ttl 4 s: heartbeat 1.3 s)`,
        `${(abortedAt ?? Number.NaN) - replacingAt} ms`,
      )
    })

    it('a late tick: skipped without a request, the record untouched', async () => {
      const fn = functionName('late')
      const key = `locks/${fn}`
      const { store, requests, close } = target().counted()
      try {
        let runs = 0
        const handler = middy<unknown, unknown, Error, SingletonContext>()
          .use(singleton({ store, logger: silent, maxTickAgeMs: 3_600_000 }))
          .handler(async () => ++runs)
        const twoHoursAgo = new Date(Date.now() - 2 * 3_600_000).toISOString()
        const skipped = await handler(schedulerEvent(twoHoursAgo), lambdaContext({ functionName: fn }))
        expect(skipped).toMatchObject({
          skipped: true,
          reason: 'late',
          tick: twoHoursAgo,
          maxTickAgeMs: 3_600_000,
        })
        expect(runs).toBe(0)
        expect(requests.total()).toBe(0)
        expect(await stored(key)).toBeUndefined()
        const now = new Date().toISOString()
        expect(await handler(schedulerEvent(now), lambdaContext({ functionName: fn }))).toBe(1)
        measured(
          `${name}: late tick (2 h old, limit 1 h)`,
          `skipped with ${requests.total() === 0 ? 0 : 'no'} requests before the on-time tick`,
        )
      } finally {
        close()
      }
    })

    it('history: 12 ticks leave the last 10 runs in the record, oldest first, a failed one included', async () => {
      const fn = functionName('history')
      const key = `locks/${fn}`
      const { handler } = container(async (event) => {
        if ((event as { scheduledTime: string }).scheduledTime.endsWith('05:00:00Z'))
          throw new Error('tick 5 fails')
        return 'done'
      })
      const ticks = Array.from({ length: 12 }, (_, i) => `2026-11-25T${String(i).padStart(2, '0')}:00:00Z`)
      for (const tick of ticks) {
        await handler(schedulerEvent(tick), lambdaContext({ functionName: fn })).catch(() => undefined)
      }
      const { history } = await stored(key)
      expect(history).toHaveLength(10)
      expect(history.map((entry: { tick: string }) => entry.tick)).toEqual(ticks.slice(2))
      expect(history.map((entry: { outcome: string }) => entry.outcome)).toEqual(
        ticks.slice(2).map((tick) => (tick.endsWith('05:00:00Z') ? 'failed' : 'completed')),
      )
      const tokens = history.map((entry: { token: number }) => entry.token)
      expect(tokens).toEqual([...tokens].sort((a, b) => a - b))
      for (const entry of history) expect(entry.ended).toBeGreaterThanOrEqual(entry.started)
      measured(
        `${name}: history after 12 ticks`,
        `${history.length} runs, ${history.filter((e: { outcome: string }) => e.outcome === 'failed').length} failed`,
      )
    })
  })
}
