import { describe, expect, it } from 'vitest'
import type { LockStore } from '../../lib/extend.js'
import {
  isSkipResult,
  type LambdaContext,
  LockConflictError,
  LockHeldError,
  LockLostError,
  LockOptionsError,
  LockStoreError,
  type OutcomeEvent,
  type SingletonContext,
  type SingletonOptions,
  type SkipResult,
} from '../../lib/index.js'
import { MemoryLockStore } from '../../lib/memory/index.js'
import { type LambdaContextOptions, lambdaContext, schedulerEvent } from '../support/lambda-context.js'
import { ManualClock } from '../support/sim-clock.js'

/** How an adapter turns a handler body and options into a Lambda handler. */
export type Adapter = <TResult>(
  body: (event: unknown, context: SingletonContext) => Promise<TResult>,
  options: SingletonOptions,
) => (event: unknown, context: LambdaContext) => Promise<TResult | SkipResult>

const KEY = 'locks/nightly-report'

/** A world: a simulated clock, an in-memory store, and handlers behind the adapter. */
function world(adapter: Adapter) {
  const clock = new ManualClock()
  const memory = new MemoryLockStore({ clock, clockResolutionMs: 1_000 })
  const outcomes: OutcomeEvent[] = []
  const record = (key = KEY) => JSON.parse(memory.peek(key) ?? 'null')
  const wrap = <TResult>(
    body: (event: unknown, context: SingletonContext) => Promise<TResult>,
    options: SingletonOptions = {},
  ) =>
    adapter(body, {
      store: memory,
      clock,
      logger: false,
      onOutcome: (event) => outcomes.push(event),
      ...options,
    })
  const context = (options: LambdaContextOptions = {}) => lambdaContext({ ...options, clock })
  return { clock, memory, outcomes, record, wrap, context, kinds: () => outcomes.map((o) => o.outcome) }
}

/** The one behaviour suite every adapter passes, on the in-memory store and simulated time. */
export function describeSingletonBehaviour(name: string, adapter: Adapter): void {
  describe(`${name}: the run lifecycle`, () => {
    it('runs exactly one of 10 concurrent invocations; the others skip, naming the lock', async () => {
      const { clock, wrap, context, record } = world(adapter)
      let running = 0
      let most = 0
      const handler = wrap(async (_event, ctx) => {
        most = Math.max(most, ++running)
        await clock.sleep(5_000)
        running--
        return { token: await ctx.singleton.fencingToken() }
      })
      const start = clock.now()
      const results = await clock.run(Promise.all(Array.from({ length: 10 }, () => handler({}, context()))))
      const skipped = results.filter(isSkipResult)
      expect(results.filter((r) => !isSkipResult(r))).toEqual([{ token: record().token }])
      expect(skipped).toHaveLength(9)
      expect(skipped.every((s) => s.reason === 'held' && s.key === KEY)).toBe(true)
      expect(most).toBe(1)
      expect(record()).toMatchObject({ run: 1, expires_at: 0 })
      expect(record().token).toBeGreaterThanOrEqual(start) // a first token: the store's time
    })

    it('names the holder and its token when the lock was read held', async () => {
      const { clock, wrap, context, record } = world(adapter)
      const slow = wrap(async () => clock.sleep(10_000))
      const first = slow({}, context({ requestId: 'req-1' }))
      await clock.advance(1_100) // it holds the lock (its write waits for its token) before the second arrives
      const held = record().token
      const second = await clock.run(slow({}, context()))
      expect(second).toMatchObject({
        skipped: true,
        reason: 'held',
        owner: 'nightly-report/req-1',
        token: held,
      })
      expect(Date.parse((second as SkipResult).until ?? '')).toBeGreaterThan(clock.now())
      await clock.run(first)
    })

    it('names the winner to a loser of the race for the write, as the README promises, for one read more', async () => {
      const { clock, wrap, context, memory, record } = world(adapter)
      const handler = wrap(async () => clock.sleep(1_000))
      const before = { ...memory.requests }
      const start = clock.now()
      // Both read the lock absent, both try to create it: one wins, the other loses the write.
      const results = await clock.run(
        Promise.all([handler({}, context({ requestId: 'a' })), handler({}, context({ requestId: 'b' }))]),
      )
      const [lost] = results.filter(isSkipResult)
      const winner = record()
      expect(lost).toEqual({
        skipped: true,
        reason: 'held',
        key: KEY,
        owner: winner.owner,
        token: winner.token,
        until: expect.any(String),
        tick: undefined,
      })
      expect(['nightly-report/a', 'nightly-report/b']).toContain(lost?.owner)
      expect(Date.parse(lost?.until ?? '')).toBeGreaterThan(start) // the winner's lease, as it was read
      // Winner: read + create + release; loser: read + create + one read to name the winner.
      expect(memory.requests.read - before.read).toBe(3)
      expect(memory.requests.create - before.create).toBe(2)
      expect(memory.requests.replace - before.replace).toBe(1)
    })

    it('releases after success and after a throw, keeping the token, so each run gets a higher token', async () => {
      const { clock, wrap, context, record, kinds } = world(adapter)
      const tokens: number[] = []
      const handler = wrap(async (event, ctx) => {
        tokens.push(await ctx.singleton.fencingToken())
        if ((event as { fail?: boolean }).fail) throw new Error('job failed')
        return 'ok'
      })
      await clock.run(handler({}, context()))
      expect(record()).toMatchObject({ token: tokens[0], run: 1, expires_at: 0 })
      await expect(clock.run(handler({ fail: true }, context()))).rejects.toThrow('job failed')
      expect(record()).toMatchObject({ token: tokens[1], run: 2, expires_at: 0 })
      await clock.run(handler({}, context()))
      expect(record()).toMatchObject({ token: tokens[2], run: 3, expires_at: 0 })
      expect(tokens[1]).toBeGreaterThan(tokens[0] ?? Number.POSITIVE_INFINITY)
      expect(tokens[2]).toBeGreaterThan(tokens[1] ?? Number.POSITIVE_INFINITY)
      expect(kinds()).toEqual(['acquired', 'released', 'acquired', 'released', 'acquired', 'released'])
    })

    it.each(['fail', 'throw'] as const)(
      "fails the invocation with LockHeldError, naming the holder, with onHeld: '%s'",
      async (onHeld) => {
        const { clock, wrap, context } = world(adapter)
        const handler = wrap(async () => clock.sleep(5_000), { onHeld })
        const first = handler({}, context({ requestId: 'first' }))
        await clock.advance(1)
        const error = await clock.run(handler({}, context())).catch((e: unknown) => e)
        expect(error).toBeInstanceOf(LockHeldError)
        expect((error as LockHeldError).holder.owner).toBe('nightly-report/first')
        await clock.run(first)
      },
    )

    it('waits up to waitMs for the holder, then runs', async () => {
      const { clock, wrap, context } = world(adapter)
      const order: string[] = []
      const handler = wrap(
        async (event) => {
          const n = (event as { n: number }).n
          order.push(`start ${n}`)
          await clock.sleep(3_000)
          order.push(`end ${n}`)
          return n
        },
        { waitMs: 10_000 },
      )
      const results = await clock.run(
        Promise.all([handler({ n: 1 }, context()), handler({ n: 2 }, context())]),
      )
      expect(results).toEqual([1, 2])
      expect(order).toEqual(['start 1', 'end 1', 'start 2', 'end 2'])
    })

    it('skips after waitMs when the holder is still running', async () => {
      const { clock, wrap, context } = world(adapter)
      const handler = wrap(async () => clock.sleep(30_000), { waitMs: 5_000 })
      const first = handler({}, context())
      const startedAt = clock.now()
      const second = await clock.run(handler({}, context()))
      expect(second).toMatchObject({ skipped: true, reason: 'held' })
      expect(clock.now() - startedAt).toBeGreaterThanOrEqual(5_000)
      expect(clock.now() - startedAt).toBeLessThan(30_000)
      await clock.run(first)
    })

    it('skips a second delivery of a completed tick, writing nothing, and runs the next tick', async () => {
      const { clock, wrap, context, memory, kinds, record } = world(adapter)
      let runs = 0
      const handler = wrap(async () => ++runs)
      expect(await clock.run(handler(schedulerEvent('2026-11-21T03:00:00Z'), context()))).toBe(1)
      const ranWith = record().token
      const before = memory.peek(KEY)
      const writes = memory.requests.create + memory.requests.replace
      expect(await clock.run(handler(schedulerEvent('2026-11-21T03:00:00Z'), context()))).toMatchObject({
        skipped: true,
        reason: 'duplicate',
        tick: '2026-11-21T03:00:00Z',
        token: ranWith,
      })
      expect(memory.peek(KEY)).toBe(before)
      expect(memory.requests.create + memory.requests.replace).toBe(writes)
      expect(await clock.run(handler(schedulerEvent('2026-11-22T03:00:00Z'), context()))).toBe(2)
      // A late delivery of an older tick, after a newer one ran, is a duplicate too.
      expect(await clock.run(handler(schedulerEvent('2026-11-21T03:00:00Z'), context()))).toMatchObject({
        reason: 'duplicate',
      })
      expect(runs).toBe(2)
      expect(kinds().filter((k) => k === 'duplicate')).toHaveLength(2)
    })

    it('does not mark a tick done when the handler failed, so its retry runs', async () => {
      const { clock, wrap, context, record } = world(adapter)
      let calls = 0
      const handler = wrap(async () => {
        if (++calls === 1) throw new Error('flaky')
        return calls
      })
      await expect(clock.run(handler(schedulerEvent('2026-11-21T04:00:00Z'), context()))).rejects.toThrow(
        'flaky',
      )
      expect(record().last_run).toBeUndefined()
      expect(await clock.run(handler(schedulerEvent('2026-11-21T04:00:00Z'), context()))).toBe(2)
      expect(record().last_run).toBe('2026-11-21T04:00:00Z')
    })

    it('recognises a tick completed while it waited, and skips it as a duplicate', async () => {
      const { clock, wrap, context } = world(adapter)
      const handler = wrap(async () => clock.sleep(2_000), { waitMs: 10_000 })
      const [first, second] = await clock.run(
        Promise.all([
          handler(schedulerEvent('2026-11-21T05:00:00Z'), context()),
          handler(schedulerEvent('2026-11-21T05:00:00Z'), context()),
        ]),
      )
      expect(first).toBeUndefined()
      expect(second).toMatchObject({ skipped: true, reason: 'duplicate' })
    })

    it('hands a checkpoint to the run after one that failed, clears it when a run completes, and refuses one too large', async () => {
      const { clock, wrap, context, record } = world(adapter)
      const states: unknown[] = []
      const handler = wrap(async (event, ctx) => {
        states.push(ctx.singleton.checkpoint)
        await ctx.singleton.saveCheckpoint({ done: 41 })
        if ((event as { crash?: boolean }).crash) throw new Error('crashed after the checkpoint')
        await ctx.singleton.saveCheckpoint({ done: 42 })
      })
      await expect(clock.run(handler({ crash: true }, context()))).rejects.toThrow('crashed')
      await clock.run(handler({}, context()))
      expect(record()).not.toHaveProperty('state')
      await clock.run(handler({}, context()))
      expect(states).toEqual([undefined, { done: 41 }, undefined])
      const huge = wrap(async (_event, ctx) => ctx.singleton.saveCheckpoint('x'.repeat(100_000)))
      await expect(clock.run(huge({}, context()))).rejects.toBeInstanceOf(LockOptionsError)
    })

    it('keeps a cursor across runs, completed or failed, until a run replaces it', async () => {
      const { clock, wrap, context, record } = world(adapter)
      const cursors: unknown[] = []
      const handler = wrap(async (event, ctx) => {
        cursors.push(ctx.singleton.cursor)
        const next = ((ctx.singleton.cursor as number | undefined) ?? 0) + 1
        await ctx.singleton.saveCursor(next)
        if ((event as { crash?: boolean }).crash) throw new Error('crashed after saving the cursor')
      })
      await clock.run(handler({}, context()))
      await expect(clock.run(handler({ crash: true }, context()))).rejects.toThrow('crashed')
      await clock.run(handler({}, context()))
      expect(cursors).toEqual([undefined, 1, 2])
      expect(record()).toMatchObject({ cursor: 3, expires_at: 0 })
      const huge = wrap(async (_event, ctx) => ctx.singleton.saveCursor('x'.repeat(100_000)))
      await expect(clock.run(huge({}, context()))).rejects.toBeInstanceOf(LockOptionsError)
      expect(record()).toMatchObject({ cursor: 3 })
    })

    it("holds the lease to the invocation's deadline by default, with no heartbeat", async () => {
      const { clock, wrap, context, record, memory } = world(adapter)
      let expiresAt = 0
      const handler = wrap(async (_event, ctx) => {
        expiresAt = record().expires_at
        const writes = memory.requests.replace
        await clock.sleep(50_000)
        expect(memory.requests.replace).toBe(writes) // nothing renewed it
        return ctx.singleton.expiresAt.getTime()
      })
      const startedAt = clock.now()
      const localEnd = await clock.run(handler({}, context({ timeoutMs: 60_000 })))
      expect(localEnd).toBe(startedAt + 60_000) // the holder's own view: its deadline
      // The record says the latest the store's clock can read at the deadline: never earlier,
      // later by at most what one answer dated to the second leaves unknown.
      expect(expiresAt * 1000).toBeGreaterThanOrEqual(startedAt + 60_000)
      expect(expiresAt * 1000).toBeLessThanOrEqual(startedAt + 60_000 + 1_000)
    })

    it('frees the lock of a run killed at its deadline within a margin and a second of it', async () => {
      const { clock, wrap, context } = world(adapter)
      const margin = 2_000
      const hung = wrap(async () => new Promise<never>(() => {}), { clockSkewMarginMs: margin })
      const next = wrap(async (_event, ctx) => await ctx.singleton.fencingToken(), {
        clockSkewMarginMs: margin,
      })
      const deadline = clock.now() + 10_000
      void hung({}, context({ timeoutMs: 10_000, requestId: 'killed' })) // never ends: Lambda kills it
      await clock.advance(1)
      for (;;) {
        await clock.advance(100)
        const result = await clock.run(next({}, context({ requestId: `next-${clock.now()}` })))
        if (!isSkipResult(result)) break
        // At worst the holder's one answer left a whole second of the store's clock unknown; and
        // polls come 100 ms apart.
        expect(clock.now(), 'still held').toBeLessThan(deadline + margin + 1_000 + 100)
      }
      expect(clock.now()).toBeGreaterThan(deadline + margin) // never before the killed run was over
    })

    it('outside Lambda (no remaining time) takes a 60 s lease and keeps it alive with heartbeats', async () => {
      const { clock, wrap, record } = world(adapter)
      const handler = wrap(
        async (_event, ctx) => {
          await clock.sleep(150_000)
          return ctx.singleton.signal.aborted
        },
        { key: 'container-task' },
      )
      expect(await clock.run(handler({}, {} as LambdaContext))).toBe(false)
      expect(record('locks/container-task')).toMatchObject({ run: 1, expires_at: 0, ttl_ms: 60_000 })
    })

    it('keeps a short lease alive with heartbeats through a long handler; a contender skips', async () => {
      const { clock, wrap, context, memory, record } = world(adapter)
      const options = { ttlMs: 6_000, clockSkewMarginMs: 1_000 }
      const handler = wrap(async (_event, ctx) => {
        await clock.sleep(30_000)
        return ctx.singleton.signal.aborted
      }, options)
      const contender = wrap(async () => 'ran', options)
      const run = handler({}, context())
      for (let at = 0; at < 25_000; at += 5_000) {
        await clock.advance(5_000)
        expect(await clock.run(contender({}, context()))).toMatchObject({ skipped: true })
      }
      expect(await clock.run(run)).toBe(false)
      expect(record()).toMatchObject({ run: 1, expires_at: 0 }) // no contender ever took it
      const writes = memory.requests.replace
      await clock.advance(60_000)
      expect(memory.requests.replace).toBe(writes) // no timer outlived the invocation
    })

    it('aborts the handler’s signal before anyone can take over when its store is cut off', async () => {
      const { clock, memory, context, outcomes } = world(adapter)
      const cut = { off: false }
      const flaky: LockStore = {
        clockResolutionMs: memory.clockResolutionMs,
        read: (key, options) => memory.read(key, options),
        create: (key, body, options) => memory.create(key, body, options),
        replace: async (key, body, etag, options) => {
          if (cut.off) {
            await clock.sleep(20_000) // the holder's renewals time out
            throw new LockStoreError('S3 PutObject failed: request timed out', { key, retryable: true })
          }
          return memory.replace(key, body, etag, options)
        },
      }
      const options = { ttlMs: 15_000, heartbeatMs: 12_000, clockSkewMarginMs: 1_000 }
      let abortedAt: number | undefined
      const holder = adapter(
        async (_event, ctx) => {
          cut.off = true
          ctx.singleton.signal.addEventListener('abort', () => {
            abortedAt = clock.now()
          })
          await clock.sleep(60_000)
        },
        { store: flaky, clock, logger: false, onOutcome: (o) => outcomes.push(o), ...options },
      )
      const contender = adapter(async () => clock.now(), {
        store: memory,
        clock,
        logger: false,
        ...options,
      })
      const run = holder({}, context())
      let takenAt: number | undefined
      while (takenAt === undefined) {
        await clock.advance(250)
        const result = await clock.run(contender({}, context()))
        if (!isSkipResult(result)) takenAt = result
      }
      expect(abortedAt).toBeDefined()
      expect(abortedAt).toBeLessThan(takenAt)
      expect(outcomes.map((o) => o.outcome)).toContain('lost')
      const lost = outcomes.find((o) => o.outcome === 'lost')
      expect(lost?.error).toMatchObject({ name: 'LockLostError', reason: 'expired' })
      cut.off = false
      await clock.run(run)
    })

    it('fires the signal and reports the loss, once and without a release, when the lease is stolen', async () => {
      const { clock, wrap, context, memory, kinds } = world(adapter)
      const handler = wrap(
        async (_event, ctx) => {
          const current = await memory.read(KEY)
          if (current.status !== 'found') throw new Error('no record')
          const stolen = { ...JSON.parse(current.body), token: 2, owner: 'thief' }
          await memory.replace(KEY, JSON.stringify(stolen), current.etag)
          await new Promise((resolve) => ctx.singleton.signal.addEventListener('abort', resolve))
          return (ctx.singleton.signal.reason as Error).name
        },
        { ttlMs: 6_000, clockSkewMarginMs: 1_000 },
      )
      expect(await clock.run(handler({}, context()))).toBe('LockLostError')
      expect(kinds()).toEqual(['acquired', 'lost'])
      expect(JSON.parse(memory.peek(KEY) ?? '{}')).toMatchObject({ token: 2, owner: 'thief' })
    })

    it('with throwOnLost, fails an invocation whose lease was lost, even though the handler finished', async () => {
      const { clock, wrap, context, memory } = world(adapter)
      const handler = wrap(
        async () => {
          const current = await memory.read(KEY)
          if (current.status !== 'found') throw new Error('no record')
          await memory.replace(KEY, JSON.stringify({ ...JSON.parse(current.body), token: 9 }), current.etag)
          return 'done'
        },
        { throwOnLost: true },
      )
      await expect(clock.run(handler({}, context()))).rejects.toBeInstanceOf(LockLostError)
    })

    it('fails an invocation whose lock no wait can free (a token far ahead of the store clock), without running the handler', async () => {
      const { clock, wrap, context, memory, outcomes, record } = world(adapter)
      const outside = { v: 1, token: clock.now() + 60_000, expires_at: 0, owner: 'script' }
      memory.putRaw(KEY, JSON.stringify(outside))
      let ran = false
      const handler = wrap(
        async () => {
          ran = true
        },
        { waitMs: 5_000 },
      )
      const error = await clock
        .run(handler(schedulerEvent('2026-11-21T03:00:00Z'), context()))
        .catch((e: unknown) => e)
      expect(error).toBeInstanceOf(LockConflictError)
      expect(error).toMatchObject({ reason: 'record-ahead-of-clock', key: KEY })
      expect((error as Error).message).toMatch(/--back-to-clock/)
      expect(ran).toBe(false)
      expect(outcomes).toEqual([{ outcome: 'error', key: KEY, tick: '2026-11-21T03:00:00Z', error }])
      expect(record()).toEqual(outside)
    })

    it('locks per tenant with a key function, under the key prefix', async () => {
      const { clock, wrap, context } = world(adapter)
      const handler = wrap(async (_event, ctx) => ctx.singleton.key, {
        key: (event) => `sync/${(event as { tenant: string }).tenant}`,
        keyPrefix: 'jobs/',
      })
      const keys = await clock.run(
        Promise.all(['acme', 'globex'].map((tenant) => handler({ tenant }, context()))),
      )
      expect(keys).toEqual(['jobs/sync/acme', 'jobs/sync/globex'])
    })

    it('needs no store or environment to be made; the first invocation says what is missing', async () => {
      const saved = process.env.LAMBDA_SINGLETON_BUCKET
      delete process.env.LAMBDA_SINGLETON_BUCKET
      try {
        const { clock, context, outcomes } = world(adapter)
        const handler = adapter(async () => 'ran', {
          clock,
          logger: false,
          onOutcome: (o) => outcomes.push(o),
        })
        const error = await clock.run(handler({}, context())).catch((e: unknown) => e)
        expect(error).toBeInstanceOf(LockOptionsError)
        expect((error as Error).message).toMatch(/LAMBDA_SINGLETON_BUCKET/)
        expect(outcomes.map((o) => o.outcome)).toEqual(['error'])
      } finally {
        if (saved !== undefined) process.env.LAMBDA_SINGLETON_BUCKET = saved
      }
    })

    describe('late ticks (maxTickAgeMs)', () => {
      const HOUR = 3_600_000
      /** The scheduler payload of a tick scheduled `ageMs` before the clock's now. */
      const tickAged = (clock: ManualClock, ageMs: number) =>
        schedulerEvent(new Date(clock.now() - ageMs).toISOString())
      const requests = (memory: MemoryLockStore) =>
        memory.requests.read + memory.requests.create + memory.requests.replace

      it('skips a tick delivered later than maxTickAgeMs, asking the store nothing and writing nothing', async () => {
        const { clock, wrap, context, memory, outcomes } = world(adapter)
        let ran = false
        const handler = wrap(
          async () => {
            ran = true
          },
          { maxTickAgeMs: HOUR },
        )
        const event = tickAged(clock, 3 * HOUR) // Lambda's third retry, hours after the tick
        const before = requests(memory)
        expect(await clock.run(handler(event, context()))).toEqual({
          skipped: true,
          reason: 'late',
          key: KEY,
          tick: event.scheduledTime,
          tickAgeMs: 3 * HOUR,
          maxTickAgeMs: HOUR,
          owner: undefined,
          token: undefined,
          until: undefined,
        })
        expect(ran).toBe(false)
        expect(requests(memory)).toBe(before)
        expect(memory.peek(KEY)).toBeUndefined()
        expect(outcomes).toEqual([
          { outcome: 'late', key: KEY, tick: event.scheduledTime, tickAgeMs: 3 * HOUR },
        ])
      })

      it('runs a tick delivered exactly maxTickAgeMs after its time, and skips one a millisecond older', async () => {
        const { clock, wrap, context } = world(adapter)
        const handler = wrap(async () => 'ran', { maxTickAgeMs: 60_000 })
        expect(await clock.run(handler(tickAged(clock, 60_001), context()))).toMatchObject({ reason: 'late' })
        expect(await clock.run(handler(tickAged(clock, 60_000), context()))).toBe('ran')
      })

      it('judges the age when the invocation arrives, not when the tick was made', async () => {
        const { clock, wrap, context } = world(adapter)
        const handler = wrap(async () => 'ran', { maxTickAgeMs: 10 * 60_000 })
        const event = tickAged(clock, 0)
        await clock.advance(10 * 60_000 + 1_000) // delivered 10 min 1 s after its time
        expect(await clock.run(handler(event, context()))).toMatchObject({
          reason: 'late',
          tickAgeMs: 601_000,
        })
      })

      it('never finds an event without a tick late', async () => {
        const { clock, wrap, context } = world(adapter)
        const handler = wrap(async () => 'ran', { maxTickAgeMs: 1 })
        expect(await clock.run(handler({ invokedBy: 'hand' }, context()))).toBe('ran')
      })

      it('never finds a tick in the future late (a local clock behind the scheduler’s)', async () => {
        const { clock, wrap, context } = world(adapter)
        const handler = wrap(async () => 'ran', { maxTickAgeMs: 1 })
        expect(await clock.run(handler(tickAged(clock, -5 * 60_000), context()))).toBe('ran')
      })

      it('never finds a tick that is not a time late (a tickId function of yours)', async () => {
        const { clock, wrap, context } = world(adapter)
        const handler = wrap(async () => 'ran', { maxTickAgeMs: 1, tickId: () => 'batch-7' })
        expect(await clock.run(handler({}, context()))).toBe('ran')
      })

      it('refuses a tickId that returns no string, writing nothing: the job is not wedged', async () => {
        const { clock, wrap, context, record } = world(adapter)
        // As an event typed any lets through: `tickId: (e) => e.id` on a numeric id.
        const numeric = wrap(async () => 'ran', { tickId: () => 42 as unknown as string })
        await expect(clock.run(numeric({}, context()))).rejects.toMatchObject({
          name: 'LockOptionsError',
          message: expect.stringMatching(/tickId must return a string or undefined, got number/),
        })
        expect(record()).toBeNull()
        // A handler with a good tickId runs next, as it would not over a record no reader takes.
        const fixed = wrap(async () => 'ran', { tickId: () => 'batch-42' })
        expect(await clock.run(fixed({}, context()))).toBe('ran')
      })

      it('judges the time a tickId function returns, when it is one', async () => {
        const { clock, wrap, context } = world(adapter)
        const old = new Date(clock.now() - 2 * HOUR).toISOString()
        const handler = wrap(async () => 'ran', { maxTickAgeMs: HOUR, tickId: () => old })
        expect(await clock.run(handler({}, context()))).toMatchObject({ reason: 'late', tick: old })
      })

      it('has no limit by default: a tick a day old runs', async () => {
        const { clock, wrap, context } = world(adapter)
        expect(await clock.run(wrap(async () => 'ran')(tickAged(clock, 24 * HOUR), context()))).toBe('ran')
      })

      it('takes the limit from LAMBDA_SINGLETON_MAX_TICK_AGE_MS (the constructs’ maxTickAge); the option wins', async () => {
        const saved = process.env.LAMBDA_SINGLETON_MAX_TICK_AGE_MS
        process.env.LAMBDA_SINGLETON_MAX_TICK_AGE_MS = '60000'
        try {
          const { clock, wrap, context } = world(adapter)
          const fromEnv = wrap(async () => 'ran')
          const given = wrap(async () => 'ran', { maxTickAgeMs: 2 * HOUR })
          expect(await clock.run(fromEnv(tickAged(clock, HOUR), context()))).toMatchObject({
            reason: 'late',
            maxTickAgeMs: 60_000,
          })
          expect(await clock.run(given(tickAged(clock, HOUR), context()))).toBe('ran')
          process.env.LAMBDA_SINGLETON_MAX_TICK_AGE_MS = 'an hour'
          expect(() => wrap(async () => 'ran')).toThrow(/LAMBDA_SINGLETON_MAX_TICK_AGE_MS.*"an hour"/)
        } finally {
          if (saved === undefined) delete process.env.LAMBDA_SINGLETON_MAX_TICK_AGE_MS
          else process.env.LAMBDA_SINGLETON_MAX_TICK_AGE_MS = saved
        }
      })

      it.each([
        ['zero', 0],
        ['a negative number', -1],
        ['NaN', Number.NaN],
        ['Infinity', Number.POSITIVE_INFINITY],
        ['a string', '60000' as unknown as number],
      ])('refuses %s as maxTickAgeMs when the handler is made (LockOptionsError)', (_, maxTickAgeMs) => {
        const { wrap } = world(adapter)
        expect(() => wrap(async () => 'ran', { maxTickAgeMs })).toThrow(LockOptionsError)
        expect(() => wrap(async () => 'ran', { maxTickAgeMs })).toThrow(
          /maxTickAgeMs must be a finite number/,
        )
      })
    })

    it('names a string given as maxTickAgeMs as a string, not as the number it looks like', () => {
      const { wrap } = world(adapter)
      expect(() => wrap(async () => 'ran', { maxTickAgeMs: '600000' as unknown as number })).toThrow(
        /got "600000" \(a string\)/,
      )
    })

    it.each([
      [
        'locks',
        /keyPrefix "locks" ends in "s", so it runs into the lock's name \("locksnightly"\); end it with a separator, e.g. "locks\/"/,
      ],
      ['jobs-2', /ends in "2"/],
    ])(
      'refuses the key prefix %j, which would run into the lock name, when the handler is made',
      (keyPrefix, message) => {
        const { wrap } = world(adapter)
        expect(() => wrap(async () => 'ran', { keyPrefix })).toThrow(LockOptionsError)
        expect(() => wrap(async () => 'ran', { keyPrefix })).toThrow(message)
      },
    )

    it('accepts key prefixes that end in a separator, and none at all', () => {
      const { wrap } = world(adapter)
      for (const keyPrefix of ['locks/', 'LOCK#', 'team:jobs:', '']) {
        expect(() => wrap(async () => 'ran', { keyPrefix })).not.toThrow()
      }
    })

    it('refuses a key prefix from the environment that would run into the lock name, naming the variable', () => {
      const saved = process.env.LAMBDA_SINGLETON_KEY_PREFIX
      process.env.LAMBDA_SINGLETON_KEY_PREFIX = 'locks'
      try {
        const { wrap } = world(adapter)
        expect(() => wrap(async () => 'ran', {})).toThrow(
          /LAMBDA_SINGLETON_KEY_PREFIX \(from the environment\) "locks"/,
        )
      } finally {
        if (saved === undefined) delete process.env.LAMBDA_SINGLETON_KEY_PREFIX
        else process.env.LAMBDA_SINGLETON_KEY_PREFIX = saved
      }
    })

    it('types context.singleton for the handler', async () => {
      const { clock, wrap, context, record } = world(adapter)
      const handler = wrap(async (_event, ctx) => {
        const token: number = await ctx.singleton.fencingToken()
        const signal: AbortSignal = ctx.singleton.signal
        return { token, aborted: signal.aborted, key: ctx.singleton.key, tick: ctx.singleton.tick }
      })
      expect(await clock.run(handler(schedulerEvent('2026-11-21T03:00:00Z'), context()))).toEqual({
        token: record().token,
        aborted: false,
        key: KEY,
        tick: '2026-11-21T03:00:00Z',
      })
    })
  })
}
