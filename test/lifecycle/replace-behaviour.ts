import { describe, expect, it } from 'vitest'
import {
  Lock,
  LockLostError,
  LockOptionsError,
  type OutcomeEvent,
  type SingletonOptions,
} from '../../lib/index.js'
import { MemoryLockStore } from '../../lib/memory/index.js'
import { lambdaContext, schedulerEvent } from '../support/lambda-context.js'
import { operatorFor } from '../support/operator-for.js'
import { ManualClock } from '../support/sim-clock.js'
import type { Adapter } from './behaviour.js'

const KEY = 'locks/nightly-report'
const T1 = '2026-11-25T03:00:00Z'
const T2 = '2026-11-25T03:05:00Z'

/** How one run went, by the simulated clock. */
interface Run {
  readonly token: number
  readonly tick: string | undefined
  startedAt: number
  abortedAt?: number
  abortReason?: unknown
}

/**
 * Two warm containers of the same function (two lifecycles, as two concurrent invocations get
 * in Lambda), on one in-memory store and simulated time. The handler works until its signal
 * aborts or `work` ms have passed.
 */
function world(adapter: Adapter, options: SingletonOptions = {}, first: SingletonOptions = {}) {
  const clock = new ManualClock()
  const memory = new MemoryLockStore({ clock, clockResolutionMs: 1_000 })
  const outcomes: OutcomeEvent[] = []
  const emf: string[] = []
  const runs: Run[] = []
  const record = () => JSON.parse(memory.peek(KEY) ?? 'null')
  const container = (own: SingletonOptions = {}) =>
    adapter(
      async (event, ctx) => {
        const run: Run = {
          token: await ctx.singleton.fencingToken(),
          tick: ctx.singleton.tick,
          startedAt: clock.now(),
        }
        runs.push(run)
        ctx.singleton.signal.addEventListener('abort', () => {
          // Every run's signal aborts as it ends; only a lost lease aborts it with a LockLostError.
          if (!(ctx.singleton.signal.reason instanceof LockLostError)) return
          run.abortedAt = clock.now()
          run.abortReason = ctx.singleton.signal.reason
        })
        await clock.sleep((event as { work?: number }).work ?? 1_000, ctx.singleton.signal)
        return { ran: await ctx.singleton.fencingToken() }
      },
      {
        store: memory,
        clock,
        logger: false,
        onOutcome: (event) => outcomes.push(event),
        metrics: { write: (line) => emf.push(line) },
        onHeld: 'replace',
        ttlMs: 9_000, // heartbeat every 3 s
        clockSkewMarginMs: 1_000,
        ...options,
        ...own,
      },
    )
  const [a, b] = [container(first), container()]
  const context = () => lambdaContext({ clock, timeoutMs: 900_000 })
  const tick = (time: string, work = 1_000) => ({ ...schedulerEvent(time), work })
  return { clock, memory, outcomes, emf, runs, record, a, b, context, tick }
}

/** `onHeld: 'replace'`, as every adapter passes it: on the in-memory store and simulated time. */
export function describeReplaceBehaviour(name: string, adapter: Adapter): void {
  describe(`${name}: onHeld 'replace'`, () => {
    it("a newer tick's run takes the lock; the older run's signal aborts (replaced) at its next heartbeat", async () => {
      const { clock, outcomes, emf, runs, record, a, b, context, tick } = world(adapter)
      const first = a(tick(T1, 600_000), context())
      first.catch(() => undefined)
      await clock.advance(4_000) // one heartbeat in
      const replacingStart = clock.now()
      const second = await clock.run(b(tick(T2, 5_000), context()))
      const [old, newer] = runs
      expect(second).toEqual({ ran: newer?.token })
      expect(newer?.token).toBeGreaterThan(old?.token ?? Number.POSITIVE_INFINITY)
      await clock.run(first.catch(() => undefined))
      // Aborted at the old run's first heartbeat after the replacing write: within one heartbeat.
      expect(old?.abortReason).toBeInstanceOf(LockLostError)
      expect(old?.abortReason).toMatchObject({ reason: 'replaced', token: old?.token })
      // The store answers at once here: the replacing write is sent as the invocation starts.
      const delay = (old?.abortedAt ?? Number.POSITIVE_INFINITY) - replacingStart
      expect(delay).toBeGreaterThan(0)
      expect(delay).toBeLessThanOrEqual(3_000)
      expect(outcomes.find((o) => o.outcome === 'acquired' && o.token === newer?.token)).toMatchObject({
        tick: T2,
        replaced: { token: old?.token, tick: T1 },
      })
      const replacer = outcomes.find((o) => o.outcome === 'acquired' && o.token === newer?.token)?.owner
      expect(outcomes.find((o) => o.outcome === 'replaced')).toMatchObject({
        key: KEY,
        token: old?.token,
        tick: T1,
        owner: replacer, // who took the lock
      })
      expect(replacer).toEqual(expect.any(String))
      expect(outcomes.some((o) => o.outcome === 'lost')).toBe(false)
      expect(emf.some((line) => JSON.parse(line).Replaced === 1)).toBe(true)
      // The replaced run's release changed nothing: the newer run's release is the last word.
      expect(record()).toMatchObject({ token: newer?.token, expires_at: 0, last_run: T2 })
      expect(record().history.map((entry: { outcome: string }) => entry.outcome)).toEqual([
        'replaced',
        'completed',
      ])
      expect(record().history[0]).toMatchObject({ token: old?.token, tick: T1 })
    })

    it('never replaces a run that does not watch for it (a version with the default onHeld, its lease held to its deadline): the newer tick skips as held', async () => {
      const { clock, outcomes, runs, a, b, context, tick, record } = world(
        adapter,
        {},
        { onHeld: 'skip', ttlMs: undefined },
      )
      const first = a(tick(T1, 60_000), context())
      await clock.advance(3_000) // past the wait for its token
      expect(record().running).toEqual({ token: runs[0]?.token, tick: T1 }) // no watch_ms: it never looks
      const skipped = await clock.run(b(tick(T2), context()))
      expect(skipped).toMatchObject({ skipped: true, reason: 'held', token: runs[0]?.token })
      expect(await clock.run(first)).toEqual({ ran: runs[0]?.token })
      expect(runs).toHaveLength(1)
      expect(outcomes.some((o) => o.outcome === 'replaced')).toBe(false)
    })

    it('stops a replaced run within the watch period (5 s), though its heartbeat is 20 s apart', async () => {
      const { clock, runs, a, b, context, tick, record } = world(adapter, { ttlMs: 60_000 })
      const first = a(tick(T1, 600_000), context())
      first.catch(() => undefined)
      await clock.advance(3_000)
      expect(record().running).toMatchObject({ tick: T1, watch_ms: 5_000 })
      await clock.run(b(tick(T2, 1_000), context()))
      await clock.run(first.catch(() => undefined))
      const replacedAt = (record().history as { outcome: string; ended: number }[]).find(
        (entry) => entry.outcome === 'replaced',
      )?.ended
      expect(runs[0]?.abortReason).toMatchObject({ reason: 'replaced' })
      const heardAfter = (runs[0]?.abortedAt ?? Number.POSITIVE_INFINITY) - (replacedAt ?? 0) * 1000
      expect(heardAfter).toBeLessThanOrEqual(5_000 + 1_000) // a period, and the second the stamp may be off
    })

    it.each([
      ['a second delivery of the same tick', T1],
      ['a late delivery of an older tick', '2026-11-25T02:55:00Z'],
    ])('%s never replaces: it skips as held', async (_, late) => {
      const { clock, outcomes, runs, a, b, context, tick } = world(adapter)
      const first = a(tick(T1, 60_000), context())
      await clock.advance(3_000) // past the wait for its token
      const skipped = await clock.run(b(tick(late), context()))
      expect(skipped).toMatchObject({ skipped: true, reason: 'held', token: runs[0]?.token })
      expect(await clock.run(first)).toEqual({ ran: runs[0]?.token })
      expect(runs).toHaveLength(1)
      expect(outcomes.some((o) => o.outcome === 'replaced')).toBe(false)
    })

    it("with onHeld 'skip', a newer tick's invocation skips as held and the running one goes on", async () => {
      const { clock, outcomes, runs, a, b, context, tick } = world(adapter, { onHeld: 'skip' })
      const first = a(tick(T1, 60_000), context())
      await clock.advance(3_000)
      expect(await clock.run(b(tick(T2), context()))).toMatchObject({ skipped: true, reason: 'held' })
      expect(await clock.run(first)).toEqual({ ran: runs[0]?.token })
      expect(outcomes.some((o) => o.outcome === 'replaced')).toBe(false)
    })

    it('an invocation without a tick never replaces, and a run without one is never replaced', async () => {
      const { clock, runs, a, b, context, tick } = world(adapter)
      const manual = a({ work: 60_000 }, context())
      await clock.advance(3_000)
      expect(await clock.run(b(tick(T2), context()))).toMatchObject({ skipped: true, reason: 'held' })
      await clock.run(manual)
      const scheduled = a(tick(T1, 60_000), context())
      await clock.advance(3_000)
      expect(await clock.run(b({}, context()))).toMatchObject({ skipped: true, reason: 'held' })
      await clock.run(scheduled)
      expect(runs.map((run) => run.abortReason)).toEqual([undefined, undefined]) // neither lost its lease
    })

    it('ticks that are not times are never ordered, so never replaced', async () => {
      const { clock, runs, a, b, context } = world(adapter, {
        tickId: (event) => (event as { id: string }).id,
      })
      const first = a({ id: 'batch-1', work: 60_000 }, context())
      await clock.advance(3_000)
      expect(await clock.run(b({ id: 'batch-2' }, context()))).toMatchObject({
        skipped: true,
        reason: 'held',
      })
      await clock.run(first)
      expect(runs).toHaveLength(1)
    })

    it('renews a replaceable lease by default, even inside Lambda: 60 s, every 20 s', async () => {
      const { clock, record, a, context, tick } = world(adapter, { ttlMs: undefined })
      const run = a(tick(T1, 45_000), context())
      await clock.advance(3_000)
      expect(record()).toMatchObject({ ttl_ms: 60_000, running: { tick: T1 } })
      const written = record().expires_at
      await clock.advance(21_000)
      expect(record().expires_at).toBeGreaterThan(written) // renewed
      await clock.run(run)
    })

    it('a paused job is not replaced into: the newer tick skips as paused', async () => {
      const { clock, memory, a, b, context, tick } = world(adapter)
      const first = a(tick(T1, 60_000), context())
      await clock.advance(3_000)
      await operatorFor(new Lock({ store: memory, key: KEY, owner: 'alice@ops', clock })).pause()
      expect(await clock.run(b(tick(T2), context()))).toMatchObject({ skipped: true, reason: 'paused' })
      await clock.run(first)
    })

    it("refuses an onHeld it does not know, naming 'replace' among the choices", () => {
      expect(() => adapter(async () => 1, { onHeld: 'cancel' as 'skip' })).toThrow(LockOptionsError)
      expect(() => adapter(async () => 1, { onHeld: 'cancel' as 'skip' })).toThrow(
        /'skip', 'fail' or 'replace'/,
      )
    })
  })
}
