/**
 * Benchmarks against the S3 endpoint in S3_ENDPOINT (`npm run bench` starts the local engine):
 * S3 requests per operation, counted on the wire, and latencies as medians and ratios, in one run.
 * Figures vary with the machine; the request counts do not.
 */
import { randomUUID } from 'node:crypto'
import { CreateBucketCommand, S3Client } from '@aws-sdk/client-s3'
import middy from '@middy/core'
import type { Context } from 'aws-lambda'
import { type SingletonContext, silentLogger, singleton } from 'lambda-singleton/middy'
import { S3Lock, S3LockStore } from 'lambda-singleton/s3'

const endpoint = process.env.S3_ENDPOINT
if (!endpoint)
  throw new Error('S3_ENDPOINT is not set: run `npm run bench`, which starts the local S3 engine')

const requests = new Map<string, number>()
const s3 = new S3Client({
  endpoint,
  region: process.env.AWS_REGION ?? 'us-east-1',
  forcePathStyle: true,
  maxAttempts: 1,
})
s3.middlewareStack.add(
  (next, context) => async (args) => {
    const name = String(context.commandName).replace(/Command$/, '')
    requests.set(name, (requests.get(name) ?? 0) + 1)
    return next(args)
  },
  { step: 'deserialize', priority: 'low', name: 'benchCountRequests' },
)
const bucket = `lambda-singleton-bench-${randomUUID().slice(0, 8)}`
await s3.send(new CreateBucketCommand({ Bucket: bucket }))

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 30)
const median = (values: number[]): number => {
  const sorted = [...values].sort((a, b) => a - b)
  return sorted[Math.floor(sorted.length / 2)] ?? Number.NaN
}

interface Row {
  readonly operation: string
  readonly requests: number
  readonly medianMs: number
}
const rows: Row[] = []
const totalRequests = (): number => [...requests.values()].reduce((a, b) => a + b, 0)

/** Times `work` and counts its requests; `before` and `after` run outside the measurement. */
async function measure<T>(
  operation: string,
  work: (prepared: T) => Promise<unknown>,
  before: () => Promise<T> = async () => undefined as T,
  after: (prepared: T) => Promise<unknown> = async () => undefined,
): Promise<Row> {
  const times: number[] = []
  const counts: number[] = []
  for (let round = 0; round < ROUNDS; round++) {
    const prepared = await before()
    requests.clear()
    const startedAt = performance.now()
    await work(prepared)
    times.push(performance.now() - startedAt)
    counts.push(totalRequests())
    await after(prepared)
  }
  const row = { operation, requests: median(counts), medianMs: median(times) }
  rows.push(row)
  return row
}

type MaybeLease = Awaited<ReturnType<S3Lock['tryAcquire']>>
const release = async (lease: MaybeLease) => lease?.release()

// Cold: a new lock instance every time, as in a fresh Lambda container.
let coldKey = 0
let coldLease: MaybeLease = null
const cold = await measure(
  'acquire, cold (new process)',
  async () => {
    coldLease = await new S3Lock({ s3, bucket, key: `bench/cold-${coldKey++ % 3}` }).tryAcquire()
  },
  undefined,
  async () => release(coldLease),
)
// Warm: the same instance re-acquires a lock it released itself (cached etag).
const warmLock = new S3Lock({ s3, bucket, key: 'bench/warm' })
await release(await warmLock.tryAcquire())
let warmLease: MaybeLease = null
const warm = await measure(
  'acquire, warm (same process re-acquires)',
  async () => {
    warmLease = await warmLock.tryAcquire()
  },
  undefined,
  async () => release(warmLease),
)
await measure('release', release, () => warmLock.tryAcquire())
await measure(
  'renew (heartbeat)',
  async (lease) => lease?.renew(),
  () => warmLock.tryAcquire(),
  release,
)
const busyHolder = await new S3Lock({ s3, bucket, key: 'bench/busy' }).tryAcquire()
await measure('tryAcquire on a held lock (skip)', () =>
  new S3Lock({ s3, bucket, key: 'bench/busy' }).tryAcquire(),
)
await release(busyHolder)

// Contention: 20 fresh contenders at once on a new lock; one winner per race.
let raceKey = 0
const race = await measure('race of 20 contenders (whole race)', async () => {
  const key = `bench/race-${raceKey++}`
  const leases = await Promise.all(
    Array.from({ length: 20 }, () => new S3Lock({ s3, bucket, key }).tryAcquire()),
  )
  if (leases.filter(Boolean).length !== 1) throw new Error('a race had not exactly one winner')
})

// The same on a lock that exists and was released: If-Match races (Ceph answers most losers 500).
const released = new S3Lock({ s3, bucket, key: 'bench/race-released' })
await release(await released.tryAcquire())
const raceReleased = await measure('race of 20 on a released lock (whole race)', async () => {
  const leases = await Promise.all(
    Array.from({ length: 20 }, () => new S3Lock({ s3, bucket, key: 'bench/race-released' }).tryAcquire()),
  )
  const winners = leases.filter((lease) => lease !== null)
  if (winners.length !== 1) throw new Error(`a race had ${winners.length} winners`)
  await release(winners[0] ?? null)
})

// Middleware overhead: a trivial handler with and without singleton().
const context = (): SingletonContext =>
  ({
    functionName: 'bench-fn',
    awsRequestId: randomUUID(),
    getRemainingTimeInMillis: () => 60_000,
  }) as Context as SingletonContext
const bare = middy<unknown, number>().handler(async () => 1)
const wrapped = middy<unknown, unknown, Error, SingletonContext>()
  .use(singleton({ store: new S3LockStore({ s3, bucket }), logger: silentLogger }))
  .handler(async () => 1)
const bareRow = await measure('handler without singleton()', () => bare({}, context()))
const wrappedRow = await measure('handler with singleton(), warm container', () => wrapped({}, context()))

console.log(`\nlambda-singleton benchmark: ${ROUNDS} rounds each, endpoint ${endpoint}\n`)
console.log('operation'.padEnd(46), 'S3 requests'.padStart(12), 'median ms'.padStart(10))
for (const row of rows) {
  console.log(
    row.operation.padEnd(46),
    String(row.requests).padStart(12),
    row.medianMs.toFixed(2).padStart(10),
  )
}
console.log('\nratios')
console.log(`  warm / cold acquire latency:             ${(warm.medianMs / cold.medianMs).toFixed(2)}`)
console.log(`  warm / cold acquire requests:            ${warm.requests} / ${cold.requests}`)
console.log(`  requests per contender in a 20-way race: ${(race.requests / 20).toFixed(2)} (fresh key)`)
console.log(
  `                                           ${(raceReleased.requests / 20).toFixed(2)} (released lock, incl. the winner's release)`,
)
console.log(
  `  singleton() overhead per invocation:     +${(wrappedRow.medianMs - bareRow.medianMs).toFixed(2)} ms, ${wrappedRow.requests} S3 requests`,
)
s3.destroy()
