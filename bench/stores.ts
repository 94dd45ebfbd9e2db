/**
 * The lock's own operations on S3 and on DynamoDB side by side: acquire (cold and warm),
 * release, renew, a skip, races, and a whole warm invocation behind `singleton()`.
 */

import { randomUUID } from 'node:crypto'
import middy from '@middy/core'
import type { Context } from 'aws-lambda'
import { type Lease, Lock } from 'lambda-singleton'
import { systemClock } from 'lambda-singleton/extend'
import { type SingletonContext, singleton } from 'lambda-singleton/middy'
import { leaseOf } from '../test/support/lease-of.js'
import { interleave, type Measured, median, timed } from './measure.js'
import type { BenchTarget } from './targets.js'

export interface StoreRow {
  readonly operation: string
  readonly on: ReadonlyMap<BenchTarget, Measured>
}

export interface StoreResults {
  readonly rows: readonly StoreRow[]
  readonly roundTrip: StoreRow
  /** A whole warm invocation behind `singleton()`. */
  readonly run: StoreRow
  /** Median of the same invocation without the middleware. */
  readonly bareMs: number
}

export async function measureStores(targets: readonly BenchTarget[], rounds: number): Promise<StoreResults> {
  const rows: StoreRow[] = []
  /** `work` timed and counted on each target; `before` and `after` run outside the measurement. */
  const measure = async <T>(
    operation: string,
    work: (target: BenchTarget, prepared: T) => Promise<unknown>,
    before: (target: BenchTarget) => Promise<T> = async () => undefined as T,
    after: (target: BenchTarget, prepared: T) => Promise<unknown> = async () => undefined,
  ): Promise<StoreRow> => {
    const on = await interleave(targets, rounds, async (target) => {
      const prepared = await before(target)
      const { ms, operations } = await timed(target.requests, () => work(target, prepared))
      await after(target, prepared)
      return { ms, operations }
    })
    const row = { operation, on }
    rows.push(row)
    return row
  }
  const lockOn = (target: BenchTarget, key: string) => new Lock({ store: target.store, key })
  const release = async (_target: BenchTarget, lease: Lease | null) => lease?.release()

  // Warm up connections and the JIT, so that the first measurement is not the slowest.
  for (const target of targets) for (let i = 0; i < 10; i++) await target.store.read('bench/warm-up')
  const roundTrip = await measure('one read of a missing key (a round trip)', (target) =>
    target.store.read(`bench/absent-${randomUUID()}`),
  )
  // Cold: a new lock instance each time, as in a fresh Lambda container, on a lock that exists.
  // A clock of its own keeps it from what the other locks here learned of the store's clock, as
  // a new process would: its token waits until that clock has surely passed it. Each starts at a
  // random point of the second (unmeasured): one after the last would start just after the turn
  // its probes found, the slowest phase, every time.
  let coldKey = 0
  const coldLeases = new Map<BenchTarget, Lease | null>()
  await measure(
    'acquire, cold (new process, random phase)',
    async (target) => {
      const lock = new Lock({
        store: target.store,
        key: `bench/cold-${coldKey++ % 3}`,
        clock: { ...systemClock },
      })
      coldLeases.set(target, await leaseOf(lock.tryAcquire()))
    },
    () => systemClock.sleep(Math.random() * 1_000),
    async (target) => coldLeases.get(target)?.release(),
  )
  // A new lock instance in a process whose other locks know the store's clock already.
  await measure(
    'acquire, new lock (the process knows the store time)',
    async (target) =>
      coldLeases.set(target, await leaseOf(lockOn(target, `bench/cold-${coldKey++ % 3}`).tryAcquire())),
    undefined,
    async (target) => coldLeases.get(target)?.release(),
  )
  // Warm: the same instance re-acquires a lock it released itself (it knows the etag).
  const warmLocks = new Map(targets.map((t) => [t, lockOn(t, 'bench/warm')]))
  for (const [, lock] of warmLocks) await (await leaseOf(lock.tryAcquire()))?.release()
  const acquireWarm = async (target: BenchTarget) =>
    (await leaseOf(warmLocks.get(target)?.tryAcquire())) ?? null
  let warmLease: Lease | null = null
  await measure(
    'acquire, warm (same process re-acquires)',
    async (target) => {
      warmLease = await acquireWarm(target)
    },
    undefined,
    async () => warmLease?.release(),
  )
  await measure('release', release, acquireWarm)
  await measure('renew (heartbeat)', async (_target, lease) => lease?.renew(), acquireWarm, release)
  const busy = new Map<BenchTarget, Lease | null>()
  for (const target of targets) busy.set(target, await leaseOf(lockOn(target, 'bench/busy').tryAcquire()))
  await measure('try a held lock (skip)', (target) => leaseOf(lockOn(target, 'bench/busy').tryAcquire()))
  for (const lease of busy.values()) await lease?.release()

  await measureRaces(targets, measure)
  const { run, bareMs } = await measureRun(targets, rounds, measure)
  return { rows, roundTrip, run, bareMs }
}

type Measure = (operation: string, work: (target: BenchTarget) => Promise<unknown>) => Promise<StoreRow>

/** Twenty contenders at once, on a fresh key and on a released lock: exactly one may win. */
async function measureRaces(targets: readonly BenchTarget[], measure: Measure): Promise<void> {
  const lockOn = (target: BenchTarget, key: string) => new Lock({ store: target.store, key })
  let raceKey = 0
  await measure('race of 20 contenders on a fresh key (whole race)', async (target) => {
    const key = `bench/race-${raceKey++}`
    const leases = await Promise.all(
      Array.from({ length: 20 }, () => leaseOf(lockOn(target, key).tryAcquire())),
    )
    if (leases.filter(Boolean).length !== 1)
      throw new Error(`${target.name}: a race had not exactly one winner`)
  })
  for (const target of targets)
    await (await leaseOf(lockOn(target, 'bench/race-released').tryAcquire()))?.release()
  await measure('race of 20 on a released lock (incl. the release)', async (target) => {
    const leases = await Promise.all(
      Array.from({ length: 20 }, () => leaseOf(lockOn(target, 'bench/race-released').tryAcquire())),
    )
    const winners = leases.filter((lease) => lease !== null)
    if (winners.length !== 1) throw new Error(`${target.name}: a race had ${winners.length} winners`)
    await winners[0]?.release()
  })
}

/** A whole run behind the middleware, in a warm container: what a scheduled job pays per tick. */
async function measureRun(targets: readonly BenchTarget[], rounds: number, measure: Measure) {
  const context = (): SingletonContext =>
    ({
      functionName: 'bench-fn',
      awsRequestId: randomUUID(),
      getRemainingTimeInMillis: () => 60_000,
    }) as Context as SingletonContext
  const bare = middy<unknown, number>().handler(async () => 1)
  const wrapped = new Map(
    targets.map((target) => [
      target,
      middy<unknown, unknown, Error, SingletonContext>()
        .use(singleton({ store: target.store, logger: false }))
        .handler(async () => 1),
    ]),
  )
  const bareMs = median(
    await Promise.all(
      Array.from({ length: rounds }, async () => {
        const startedAt = performance.now()
        await bare({}, context())
        return performance.now() - startedAt
      }),
    ),
  )
  const run = await measure('a warm invocation behind singleton()', (target) =>
    (wrapped.get(target) ?? bare)({}, context()),
  )
  return { run, bareMs }
}
