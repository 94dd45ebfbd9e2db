/**
 * Benchmarks the lock on S3 and on DynamoDB side by side, in one interleaved run (`npm run bench`
 * starts the local Ceph engine and DynamoDB Local; S3_ENDPOINT and DYNAMODB_ENDPOINT point it
 * elsewhere): requests per operation counted on the wire, latencies as medians and in round
 * trips of each engine, and the cost of a million runs at list prices. Latencies vary with the
 * machine and engine; the request counts do not.
 */
import { randomUUID } from 'node:crypto'
import middy from '@middy/core'
import type { Context } from 'aws-lambda'
import { type Lease, Lock } from 'lambda-singleton'
import { type SingletonContext, silentLogger, singleton } from 'lambda-singleton/middy'
import { measureTakeover, TAKEOVER_MARGIN_MS, TAKEOVER_TTL_MS } from './takeover.js'
import { type BenchTarget, costPerMillion, dynamodbTarget, s3Target } from './targets.js'

const s3Endpoint = process.env.S3_ENDPOINT
const dynamodbEndpoint = process.env.DYNAMODB_ENDPOINT
if (!s3Endpoint || !dynamodbEndpoint) {
  throw new Error(
    'S3_ENDPOINT or DYNAMODB_ENDPOINT is not set: run `npm run bench`, which starts both engines',
  )
}
const targets = [await s3Target(s3Endpoint), await dynamodbTarget(dynamodbEndpoint)]
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 30)

const median = (values: number[]): number => {
  const sorted = [...values].sort((a, b) => a - b)
  return sorted[Math.floor(sorted.length / 2)] ?? Number.NaN
}

interface Measured {
  readonly requests: number
  readonly medianMs: number
  /** The requests of the median round, by operation. */
  readonly operations: ReadonlyMap<string, number>
}
interface Row {
  readonly operation: string
  readonly on: Map<BenchTarget, Measured>
}
const rows: Row[] = []

/**
 * Times `work` on every target, `ROUNDS` times, alternating targets within each round so that
 * neither gets the quieter moments; `before` and `after` run outside the measurement.
 */
async function measure<T>(
  operation: string,
  work: (target: BenchTarget, prepared: T) => Promise<unknown>,
  before: (target: BenchTarget) => Promise<T> = async () => undefined as T,
  after: (target: BenchTarget, prepared: T) => Promise<unknown> = async () => undefined,
): Promise<Row> {
  const samples = new Map(targets.map((t) => [t, [] as { ms: number; operations: Map<string, number> }[]]))
  for (let round = 0; round < ROUNDS; round++) {
    for (const target of round % 2 === 0 ? targets : [...targets].reverse()) {
      const prepared = await before(target)
      target.requests.reset()
      const startedAt = performance.now()
      await work(target, prepared)
      const ms = performance.now() - startedAt
      samples.get(target)?.push({ ms, operations: new Map(target.requests.byOperation) })
      await after(target, prepared)
    }
  }
  const on = new Map<BenchTarget, Measured>()
  for (const [target, taken] of samples) {
    const byRequests = [...taken].sort((a, b) => total(a.operations) - total(b.operations))
    const typical = byRequests[Math.floor(byRequests.length / 2)]?.operations ?? new Map()
    on.set(target, {
      requests: total(typical),
      medianMs: median(taken.map((s) => s.ms)),
      operations: typical,
    })
  }
  const row = { operation, on }
  rows.push(row)
  return row
}
const total = (operations: ReadonlyMap<string, number>): number =>
  [...operations.values()].reduce((sum, n) => sum + n, 0)

const lockOn = (target: BenchTarget, key: string) => new Lock({ store: target.store, key })
const release = async (_target: BenchTarget, lease: Lease | null) => lease?.release()

// Warm up connections and the JIT, so that the first measurement is not the slowest.
for (const target of targets) for (let i = 0; i < 10; i++) await target.store.read('bench/warm-up')
const roundTrip = await measure('one read of a missing key (a round trip)', (target) =>
  target.store.read(`bench/absent-${randomUUID()}`),
)
// Cold: a new lock instance each time, as in a fresh Lambda container, on a lock that exists.
let coldKey = 0
const coldLeases = new Map<BenchTarget, Lease | null>()
await measure(
  'acquire, cold (new process)',
  async (target) => coldLeases.set(target, await lockOn(target, `bench/cold-${coldKey++ % 3}`).tryAcquire()),
  undefined,
  async (target) => coldLeases.get(target)?.release(),
)
// Warm: the same instance re-acquires a lock it released itself (it knows the etag).
const warmLocks = new Map(targets.map((t) => [t, lockOn(t, 'bench/warm')]))
for (const [, lock] of warmLocks) await (await lock.tryAcquire())?.release()
let warmLease: Lease | null = null
await measure(
  'acquire, warm (same process re-acquires)',
  async (target) => {
    warmLease = (await warmLocks.get(target)?.tryAcquire()) ?? null
  },
  undefined,
  async () => warmLease?.release(),
)
await measure('release', release, async (target) => (await warmLocks.get(target)?.tryAcquire()) ?? null)
await measure(
  'renew (heartbeat)',
  async (_target, lease) => lease?.renew(),
  async (target) => (await warmLocks.get(target)?.tryAcquire()) ?? null,
  release,
)
const busy = new Map<BenchTarget, Lease | null>()
for (const target of targets) busy.set(target, await lockOn(target, 'bench/busy').tryAcquire())
await measure('try a held lock (skip)', (target) => lockOn(target, 'bench/busy').tryAcquire())
for (const lease of busy.values()) await lease?.release()

let raceKey = 0
await measure('race of 20 contenders on a fresh key (whole race)', async (target) => {
  const key = `bench/race-${raceKey++}`
  const leases = await Promise.all(Array.from({ length: 20 }, () => lockOn(target, key).tryAcquire()))
  if (leases.filter(Boolean).length !== 1)
    throw new Error(`${target.name}: a race had not exactly one winner`)
})
for (const target of targets) await (await lockOn(target, 'bench/race-released').tryAcquire())?.release()
await measure('race of 20 on a released lock (incl. the release)', async (target) => {
  const leases = await Promise.all(
    Array.from({ length: 20 }, () => lockOn(target, 'bench/race-released').tryAcquire()),
  )
  const winners = leases.filter((lease) => lease !== null)
  if (winners.length !== 1) throw new Error(`${target.name}: a race had ${winners.length} winners`)
  await winners[0]?.release()
})

// A whole run behind the middleware, in a warm container: what a scheduled job pays per tick.
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
      .use(singleton({ store: target.store, logger: silentLogger }))
      .handler(async () => 1),
  ]),
)
const bareMs = median(
  await Promise.all(
    Array.from({ length: ROUNDS }, async () => {
      const startedAt = performance.now()
      await bare({}, context())
      return performance.now() - startedAt
    }),
  ),
)
const run = await measure('a warm invocation behind singleton()', (target) =>
  (wrapped.get(target) ?? bare)({}, context()),
)

const takeovers = await Promise.all(targets.map((target) => measureTakeover(target.store, target.name, 20)))

report()
for (const target of targets) target.close()

function report(): void {
  const cell = (row: Row, target: BenchTarget) => {
    const m = row.on.get(target)
    const trips = (m?.medianMs ?? 0) / (roundTrip.on.get(target)?.medianMs ?? Number.NaN)
    return [
      String(m?.requests ?? '-').padStart(5),
      (m?.medianMs ?? 0).toFixed(2).padStart(8),
      trips.toFixed(1).padStart(5),
    ]
  }
  console.log(`\nlambda-singleton benchmark: ${ROUNDS} rounds each, interleaved`)
  console.log(`  S3:       ${s3Endpoint}\n  DynamoDB: ${dynamodbEndpoint}\n`)
  const columns = `${'req'.padStart(5)} ${'median ms'.padStart(9)} ${'RTs'.padStart(5)}`
  console.log(''.padEnd(52), targets.map((t) => t.name.padStart(21)).join('  '))
  console.log('operation'.padEnd(52), targets.map(() => columns.padStart(21)).join('  '))
  for (const row of rows) {
    console.log(row.operation.padEnd(52), targets.map((t) => cell(row, t).join(' ').padStart(21)).join('  '))
  }
  console.log('\nper run behind singleton() (acquire + release, warm container)')
  for (const target of targets) {
    const m = run.on.get(target)
    if (!m) continue
    const what = [...m.operations].map(([op, n]) => `${n} ${op}`).join(' + ')
    console.log(
      `  ${target.name.padEnd(9)} ${what.padEnd(26)} $${costPerMillion(target, m.operations).toFixed(2)} per million runs, ` +
        `+${(m.medianMs - bareMs).toFixed(2)} ms over a bare handler`,
    )
  }
  const floor = TAKEOVER_TTL_MS + TAKEOVER_MARGIN_MS
  console.log(
    `\ntakeover after a crash (ttl ${TAKEOVER_TTL_MS} ms + margin ${TAKEOVER_MARGIN_MS} ms, polling every 100 ms)`,
  )
  targets.forEach((target, i) => {
    const result = takeovers[i]
    if (!result) return
    const excess = (ms: number) => `${ms >= floor ? '+' : ''}${((ms - floor) / 1000).toFixed(2)} s`
    console.log(
      `  ${target.name.padEnd(9)} median ${(result.medianMs / 1000).toFixed(2)} s (ttl + margin ${excess(result.medianMs)}), ` +
        `range ${excess(result.afterMs[0] ?? Number.NaN)} to ${excess(result.afterMs.at(-1) ?? Number.NaN)}, ${result.afterMs.length} crashes`,
    )
  })
}
