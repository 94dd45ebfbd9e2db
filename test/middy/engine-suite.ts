import middy from '@middy/core'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { type LockStore, ReadStatus } from '../../lib/core/store.js'
import type { LockLostError, OutcomeEvent } from '../../lib/index.js'
import { LockHeldError } from '../../lib/index.js'
import {
  isSkipResult,
  type SingletonContext,
  type SingletonOptions,
  type SkipResult,
  singleton,
} from '../../lib/middy/index.js'
import { lambdaContext, schedulerEvent } from '../support/lambda-context.js'
import type { RequestCount } from '../support/requests.js'
import { expectTokenOfStoreTime, storeTime } from '../support/store-time.js'
import { describeScheduleControlOnEngine } from './schedule-control-suite.js'

/** A real engine (S3, DynamoDB) for the middleware to lock on. */
export interface EngineTarget {
  /** A store on the shared namespace (bucket, table). */
  store(): LockStore
  /** A store whose requests are counted, on a client of its own; `close` frees that client. */
  counted(): { store: LockStore; requests: RequestCount; close(): void }
  close(): void
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))
const silent = { info() {}, warn() {}, error() {} }

/**
 * How long a run holds its lock while it waits for something the test waits on. Only a broken
 * lock lets it get there (a second run waiting for others that ran too): the test then fails on
 * what it checks, not on its timeout. No claim rests on this time.
 */
const UNLESS_BROKEN_MS = 20_000

/** An event a run can hold its lock until, in place of a sleep that a loaded machine outlasts. */
function gate() {
  let open: () => void = () => {}
  const opened = new Promise<void>((resolve) => {
    open = resolve
  })
  return {
    open: () => open(),
    /** Until the gate opens (or UNLESS_BROKEN_MS). */
    async passed(): Promise<void> {
      let timer: NodeJS.Timeout | undefined
      await Promise.race([opened, new Promise((resolve) => (timer = setTimeout(resolve, UNLESS_BROKEN_MS)))])
      clearTimeout(timer)
    },
  }
}

/** A gate that opens once `count` of the promises it tracks have settled. */
function countdown(count: number) {
  const settled = gate()
  let left = count
  if (left <= 0) settled.open()
  return {
    track<T>(promise: Promise<T>): Promise<T> {
      return promise.finally(() => {
        if (--left === 0) settled.open()
      })
    },
    passed: () => settled.passed(),
  }
}

/** Until `condition` holds, checked every 20 ms (or UNLESS_BROKEN_MS). */
async function until(condition: () => boolean | Promise<boolean>): Promise<void> {
  const giveUpAt = Date.now() + UNLESS_BROKEN_MS
  while (!(await condition()) && Date.now() < giveUpAt) await sleep(20)
}

/**
 * The middleware's promises, checked on a real engine with real time: one of many concurrent
 * invocations runs, releases keep the token, ticks are deduplicated, heartbeats and signals work.
 * Every store runs it (test/middy/singleton.test.ts on S3, test/dynamodb/singleton.test.ts).
 */
export function describeSingletonOnEngine(name: string, setup: () => Promise<EngineTarget>): void {
  let target: EngineTarget
  let functions = 0
  const freshFunction = (label: string): string => `${label}-${++functions}-${Date.now()}`

  beforeAll(async () => {
    target = await setup()
  })
  afterAll(() => target?.close())

  /** The lock record at `key`, read through a store as any process would. */
  const snapshot = async (key: string) => {
    const read = await target.store().read(key)
    if (read.status !== ReadStatus.Found) throw new Error(`no lock record at ${key}`)
    return { body: read.body, etag: read.etag }
  }
  const record = async (key: string) => JSON.parse((await snapshot(key)).body) as Record<string, unknown>
  /** A conditional write of someone else's record over the current one. */
  const rewrite = async (
    key: string,
    change: (current: Record<string, unknown>) => Record<string, unknown>,
  ) => {
    const current = await snapshot(key)
    const written = await target
      .store()
      .replace(key, JSON.stringify(change(JSON.parse(current.body))), current.etag)
    if (written.status !== 'written') throw new Error(`the outside write failed: ${written.status}`)
  }

  /** A handler behind the middleware, with the outcomes it reported. */
  function wrapped<TResult>(
    body: (event: unknown, context: SingletonContext) => Promise<TResult>,
    options: SingletonOptions & { timeoutEarlyInMillis?: number } = {},
  ) {
    const outcomes: OutcomeEvent[] = []
    const { timeoutEarlyInMillis, ...rest } = options
    const handler = middy<unknown, TResult, Error, SingletonContext>({
      timeoutEarlyInMillis: timeoutEarlyInMillis ?? 0,
    })
      .use(
        singleton<unknown, TResult>({
          store: target.store(),
          logger: silent,
          onOutcome: (o) => outcomes.push(o),
          ...rest,
        }),
      )
      .handler(body)
    // Middy types the result as the body's; behind singleton() it may also be a SkipResult.
    return {
      handler: handler as (event: unknown, context: SingletonContext) => Promise<TResult | SkipResult>,
      outcomes,
    }
  }

  describe(`singleton() middleware on ${name}`, () => {
    it.each([10, 20])(
      'runs exactly one of %i concurrent invocations; the rest skip, naming the winner, at most two reads and one write each',
      async (invocations) => {
        const functionName = freshFunction('race')
        const { store, requests, close } = target.counted()
        let running = 0
        const seen: number[] = []
        // The run holds the lock until every other invocation has returned: none can find it free.
        const others = countdown(invocations - 1)
        const { handler } = wrapped(
          async (_event, context) => {
            running++
            seen.push(await context.singleton.fencingToken())
            await others.passed()
            running--
            return { done: true, token: await context.singleton.fencingToken() }
          },
          { store },
        )
        const results = await Promise.all(
          Array.from({ length: invocations }, () =>
            others.track(handler({}, lambdaContext({ functionName }))),
          ),
        )
        const ran = results.filter((r) => !isSkipResult(r))
        const skipped = results.filter(isSkipResult)
        expect(ran).toHaveLength(1)
        expect(skipped).toHaveLength(invocations - 1)
        expect(seen).toHaveLength(1)
        expect(running).toBe(0)
        for (const skip of skipped) {
          expect(skip).toMatchObject({ reason: 'held', key: `locks/${functionName}` })
          // Every loser names the winner: one that lost the write race read the record once more.
          expect(skip).toMatchObject({ owner: expect.stringMatching(`^${functionName}/`), token: seen[0] })
          expect(Date.parse(skip.until ?? '')).toBeGreaterThan(0)
        }
        // The winner: read, write, write (release), and the clock probes it sent while it waited
        // for its token. Each loser: at most one read and one write, one read more to name the
        // winner when it lost the write, and a read (and a retry) for each answer the engine failed
        // to give (Ceph answers some losers of simultaneous conditional writes with a 500; a loaded
        // engine may time out).
        expect(requests.total() - requests.clockProbes()).toBeLessThanOrEqual(
          3 + (invocations - 1) * 3 + 2 * requests.failures(),
        )
        expect(await record(`locks/${functionName}`)).toMatchObject({ token: seen[0], expires_at: 0 })
        close()
      },
    )

    it('runs one of 20 concurrent invocations of a lock it released before, the rest at one write and one read each, 5 rounds', async () => {
      const functionName = freshFunction('warm-race')
      const { store, requests, close } = target.counted()
      // One middleware instance: each invocation tries a blind write from the cache of its own
      // last release; a loser reads once, even when the engine answered its write with a 500
      // (Ceph does, to losers of simultaneous If-Match writes) and the write had to be settled.
      // Each round's run holds the lock until the other 19 have returned.
      let others = countdown(0)
      const { handler } = wrapped(
        async (_event, context) => {
          await others.passed()
          return { token: await context.singleton.fencingToken() }
        },
        { store },
      )
      await handler({}, lambdaContext({ functionName }))
      for (let round = 0; round < 5; round++) {
        requests.reset()
        const round_ = countdown(19)
        others = round_
        const results = await Promise.all(
          Array.from({ length: 20 }, () => round_.track(handler({}, lambdaContext({ functionName })))),
        )
        expect(results.filter((r) => !isSkipResult(r))).toHaveLength(1)
        // The winner: write, write (release), and any clock probe its token's wait needed (a loaded
        // machine stretches the wait: 2 probes seen on DynamoDB Local in CI). Each loser: one
        // write and one read (plus, as above, for answers the engine failed to give).
        expect(requests.total() - requests.clockProbes()).toBeLessThanOrEqual(
          2 + 19 * 2 + 2 * requests.failures(),
        )
      }
      close()
    })

    it('releases after success and after a throw, so the next run gets a higher token', async () => {
      const functionName = freshFunction('release')
      const key = `locks/${functionName}`
      const tokens: number[] = []
      const { handler } = wrapped(async (event, context) => {
        tokens.push(await context.singleton.fencingToken())
        if ((event as { fail?: boolean }).fail) throw new Error('job failed')
        return 'ok'
      })
      const before = await storeTime(target.store())
      await handler({}, lambdaContext({ functionName }))
      expectTokenOfStoreTime(tokens[0], before, await storeTime(target.store()))
      expect(await record(key)).toMatchObject({ token: tokens[0], run: 1, expires_at: 0 })
      await expect(handler({ fail: true }, lambdaContext({ functionName }))).rejects.toThrow('job failed')
      expect(await record(key)).toMatchObject({ token: tokens[1], run: 2, expires_at: 0 })
      await handler({}, lambdaContext({ functionName }))
      expect(await record(key)).toMatchObject({ token: tokens[2], run: 3, expires_at: 0 })
      expect(tokens[1]).toBeGreaterThan(tokens[0] ?? Number.POSITIVE_INFINITY)
      expect(tokens[2]).toBeGreaterThan(tokens[1] ?? Number.POSITIVE_INFINITY)
    })

    it("releases on Middy's early timeout, before Lambda would kill the invocation", async () => {
      const functionName = freshFunction('timeout')
      const key = `locks/${functionName}`
      let aborted = false
      const { handler } = wrapped(
        async (_event, context) => {
          const { signal } = context.singleton
          signal.addEventListener('abort', () => {
            aborted = true
          })
          // Runs until told to stop: only the timeout ends this invocation.
          await new Promise((resolve) => signal.addEventListener('abort', resolve))
          return 'too late'
        },
        { timeoutEarlyInMillis: 1_000 },
      )
      await expect(handler({}, lambdaContext({ functionName, timeoutMs: 2_000 }))).rejects.toMatchObject({
        name: 'TimeoutError',
      })
      // The timeout ended it (the handler runs until told to stop), and the lock is released and
      // the handler told. How early Middy's timer fires is Middy's: no wall-clock bound here.
      expect(await record(key)).toMatchObject({ run: 1, expires_at: 0 })
      expect(aborted).toBe(true)
    })

    // That heartbeats keep a short lease alive through a handler many times longer, against
    // contenders, is specified on simulated time (test/lifecycle/behaviour.ts, "keeps a short
    // lease alive with heartbeats through a long handler"). Here: the engine takes the renewals.
    it('renews the lease with heartbeats, same token, later expiry, and a contender skips', async () => {
      const functionName = freshFunction('heartbeat')
      const key = `locks/${functionName}`
      const options = { ttlMs: 10_000, heartbeatMs: 300, clockSkewMarginMs: 1_000 }
      const expiries: number[] = []
      const { handler: contender } = wrapped(async () => 'ran', options)
      let attempt: unknown
      const { handler } = wrapped(async (_event, context) => {
        // Until two heartbeats have landed: the record's expiry moved twice, its token did not.
        await until(async () => {
          const current = await record(key)
          expect(current.token).toBe(await context.singleton.fencingToken())
          const at = current.expires_at as number
          if (expiries.at(-1) !== at) expiries.push(at)
          return expiries.length >= 3
        })
        attempt = await contender({}, lambdaContext({ functionName }))
        return { lost: context.singleton.signal.aborted }
      }, options)
      expect(await handler({}, lambdaContext({ functionName }))).toEqual({ lost: false })
      expect(expiries).toHaveLength(3)
      expect(expiries).toEqual([...expiries].sort((a, b) => a - b))
      expect(attempt).toMatchObject({ skipped: true, reason: 'held' })
      expect(await record(key)).toMatchObject({ run: 1, expires_at: 0 })
    })

    it('sends no heartbeat once the invocation has returned (no timer outlives it)', async () => {
      const functionName = freshFunction('timers')
      const { store, requests, close } = target.counted()
      // The run returns once a heartbeat has landed, so there is a heartbeat timer to leave behind.
      const { handler } = wrapped(async () => until(() => requests.writes() >= 2), {
        store,
        ttlMs: 10_000,
        heartbeatMs: 300,
        clockSkewMarginMs: 1_000,
      })
      await handler({}, lambdaContext({ functionName }))
      expect(requests.writes()).toBeGreaterThanOrEqual(3) // acquire, a heartbeat or more, release
      requests.reset()
      await sleep(1_500) // five heartbeat periods
      expect(requests.total()).toBe(0)
      close()
    })

    it('releases at the next invocation a lease whose after was skipped by a later middleware', async () => {
      const functionName = freshFunction('abandoned')
      const outcomes: OutcomeEvent[] = []
      let runs = 0
      const handler = middy<unknown, unknown, Error, SingletonContext>()
        .use(
          singleton({
            store: target.store(),
            logger: silent,
            onOutcome: (o) => outcomes.push(o),
          }),
        )
        // Used after singleton(), this ends some requests early: Middy then skips singleton's after.
        .use({
          before: (request) => ((request.event as { early?: boolean }).early ? 'ended early' : undefined),
        })
        .handler(async () => ++runs)
      expect(await handler({ early: true }, lambdaContext({ functionName, timeoutMs: 300 }))).toBe(
        'ended early',
      )
      expect(await record(`locks/${functionName}`)).toMatchObject({ run: 1 })
      await sleep(400) // that invocation's time is over
      expect(await handler({}, lambdaContext({ functionName }))).toBe(1)
      // The abandoned lease ran out with its invocation: a warning, no loss; it was freed for the next.
      expect(outcomes.map((o) => o.outcome)).toEqual(['acquired', 'error', 'acquired', 'released'])
    })

    it('gives each invocation its own owner outside Lambda, so overlapping ones do not both run', async () => {
      const functionName = freshFunction('no-request-id')
      // The run holds the lock until the other invocation has returned.
      const other = countdown(1)
      const { handler } = wrapped(async () => {
        await other.passed()
        return 'ran'
      })
      const context = () => ({ ...lambdaContext({ functionName }), awsRequestId: '' }) as SingletonContext
      const results = await Promise.all([
        other.track(handler({}, context())),
        other.track(handler({}, context())),
      ])
      expect(results.filter((r) => r === 'ran')).toHaveLength(1)
    })

    it('fires the signal and reports the loss when the lease is stolen mid-run', async () => {
      const functionName = freshFunction('stolen')
      const key = `locks/${functionName}`
      let stolen = 0
      const { handler, outcomes } = wrapped(
        async (_event, context) => {
          // An operator or a buggy peer overwrites the lock (conditionally, as the bucket policy demands).
          await rewrite(key, (current) => {
            stolen = (current.token as number) + 1
            return { ...current, token: stolen, owner: 'thief' }
          })
          await new Promise((resolve) => context.singleton.signal.addEventListener('abort', resolve))
          const { name, reason } = context.singleton.signal.reason as LockLostError
          return { name, reason }
        },
        // The next heartbeat finds the lock taken over, long before the lease could expire.
        { ttlMs: 30_000, heartbeatMs: 300, clockSkewMarginMs: 1_000 },
      )
      expect(await handler({}, lambdaContext({ functionName }))).toEqual({
        name: 'LockLostError',
        reason: 'taken-over',
      })
      expect(outcomes.map((o) => o.outcome)).toEqual(['acquired', 'lost'])
      expect(await record(key)).toMatchObject({ token: stolen, owner: 'thief' })
    })

    it('skips a duplicate delivery of a completed tick, and runs the next tick', async () => {
      const functionName = freshFunction('dedupe')
      const key = `locks/${functionName}`
      let runs = 0
      const { handler, outcomes } = wrapped(async () => ++runs)
      const tick = schedulerEvent('2026-11-21T03:00:00Z')
      expect(await handler(tick, lambdaContext({ functionName }))).toBe(1)
      expect(await record(key)).toMatchObject({ last_run: '2026-11-21T03:00:00Z' })
      const before = await snapshot(key)
      expect(await handler(tick, lambdaContext({ functionName }))).toMatchObject({
        skipped: true,
        reason: 'duplicate',
        tick: '2026-11-21T03:00:00Z',
      })
      expect(await snapshot(key)).toEqual(before) // a duplicate writes nothing
      expect(await handler(schedulerEvent('2026-11-22T03:00:00Z'), lambdaContext({ functionName }))).toBe(2)
      // A late delivery of the first tick, after a newer tick ran, is a duplicate too.
      expect(await handler(tick, lambdaContext({ functionName }))).toMatchObject({ reason: 'duplicate' })
      expect(runs).toBe(2)
      expect(outcomes.map((o) => o.outcome)).toContain('duplicate')
    })

    it('does not mark a tick done when the handler failed, so its retry runs', async () => {
      const functionName = freshFunction('retry-tick')
      let calls = 0
      const { handler } = wrapped(async () => {
        if (++calls === 1) throw new Error('flaky')
        return calls
      })
      const tick = schedulerEvent('2026-11-21T04:00:00Z')
      await expect(handler(tick, lambdaContext({ functionName }))).rejects.toThrow('flaky')
      expect(await handler(tick, lambdaContext({ functionName }))).toBe(2)
    })

    it('hands a checkpoint to the run after a failed one and clears it on completion; keeps a cursor', async () => {
      const functionName = freshFunction('checkpoint')
      const seen: unknown[] = []
      const { handler } = wrapped(async (event, context) => {
        const { checkpoint, cursor } = context.singleton
        seen.push({ checkpoint, cursor })
        await context.singleton.saveCheckpoint({ done: 41 })
        await context.singleton.saveCursor(((cursor as number | undefined) ?? 0) + 1)
        if ((event as { crash?: boolean }).crash) throw new Error('crashed after the checkpoint')
        await context.singleton.saveCheckpoint({ done: 42 })
        return 'done'
      })
      await expect(handler({ crash: true }, lambdaContext({ functionName }))).rejects.toThrow('crashed')
      await handler({}, lambdaContext({ functionName }))
      await handler({}, lambdaContext({ functionName }))
      expect(seen).toEqual([
        { checkpoint: undefined, cursor: undefined },
        { checkpoint: { done: 41 }, cursor: 1 },
        { checkpoint: undefined, cursor: 2 },
      ])
      const lock = await record(`locks/${functionName}`)
      expect(lock).toMatchObject({ cursor: 3, expires_at: 0 })
      expect(lock).not.toHaveProperty('state')
      await expect(
        wrapped(async (_e, context) => context.singleton.saveCheckpoint('x'.repeat(100_000))).handler(
          {},
          lambdaContext({ functionName }),
        ),
      ).rejects.toThrow(/Checkpoint state is .* bytes/)
    })

    it("fails the invocation with LockHeldError with onHeld: 'fail'", async () => {
      const functionName = freshFunction('fail')
      // The first run holds the lock from its start until the second invocation has returned.
      const started = gate()
      const second = countdown(1)
      const { handler } = wrapped(
        async () => {
          started.open()
          await second.passed()
        },
        { onHeld: 'fail' },
      )
      const first = handler({}, lambdaContext({ functionName }))
      await started.passed()
      const error = await second.track(handler({}, lambdaContext({ functionName }))).catch((e: unknown) => e)
      expect(error).toBeInstanceOf(LockHeldError)
      expect((error as LockHeldError).holder.owner).toMatch(new RegExp(`^${functionName}/`))
      await first
    })

    it('waits for the holder with waitMs, then runs', async () => {
      const functionName = freshFunction('wait')
      const order: string[] = []
      const waiter = target.counted()
      const started = gate()
      const body = async (event: unknown) => {
        const { n } = event as { n: number }
        order.push(`start ${n}`)
        started.open()
        // The first run holds the lock until the waiter has found it held and read it again.
        if (n === 1)
          await until(
            () => (waiter.requests.protocol().GetObject ?? waiter.requests.protocol().GetItem ?? 0) >= 2,
          )
        order.push(`end ${n}`)
        return n
      }
      const { handler: first } = wrapped(body)
      // The wait is a deadline, not a duration: generous, so that a loaded machine does not reach it.
      const { handler: second } = wrapped(body, { store: waiter.store, waitMs: 30_000 })
      const running = first({ n: 1 }, lambdaContext({ functionName }))
      await started.passed()
      const results = await Promise.all([running, second({ n: 2 }, lambdaContext({ functionName }))])
      waiter.close()
      expect(results).toEqual([1, 2])
      expect(order).toEqual(['start 1', 'end 1', 'start 2', 'end 2'])
    })

    it('locks per tenant with a key function', async () => {
      const functionName = freshFunction('tenant')
      const { handler } = wrapped(async (_event, context) => context.singleton.key, {
        key: (event) => `sync/${(event as { tenant: string }).tenant}`,
      })
      const keys = await Promise.all(
        ['acme', 'globex'].map((tenant) => handler({ tenant }, lambdaContext({ functionName }))),
      )
      expect(keys).toEqual(['locks/sync/acme', 'locks/sync/globex'])
    })
  })
  describeScheduleControlOnEngine(name, () => target)
}
