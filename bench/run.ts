/**
 * `npm run bench` (which starts the local Ceph engine and DynamoDB Local; S3_ENDPOINT and
 * DYNAMODB_ENDPOINT point it elsewhere). Two parts, each one interleaved run:
 *
 * 1. the lock's own operations on S3 and on DynamoDB: requests per operation counted on the
 *    wire, latencies as medians and in round trips of each engine, takeover after a crash;
 * 2. the peers side by side, each through the same invocations: lambda-singleton on both
 *    stores, a naive GET + PUT If-Match lock on S3, dynamodb-lock-client and Powertools
 *    idempotency on DynamoDB. Requests per run, round trips, what a second delivery or the
 *    next tick gets while a run holds the lock, takeover after a crash, cost per million runs;
 *    then a 50 ms job run after run: in a warm container at a fixed phase of the second (as a
 *    cron's invocations arrive), back to back, and in a new process per run (peers/job-runs.ts).
 *    BENCH_PHASE_ROUNDS, BENCH_BURST_ROUNDS and BENCH_PROCESSES size those rows;
 * 3. the three handlers users write (peers/shape-runs.ts): one that never reads its fencing
 *    token, one that reads it after a second of work, one that reads it at once, each cold (a
 *    new process per run), warm back to back, warm at a fixed phase every few seconds (8 s for
 *    five peers: a frequent schedule) and, with `npm run bench -- --cron` (or BENCH_CRON_RUNS=n),
 *    warm every 60 s at a fixed phase for 10 (n) minutes: a cron's cadence. BENCH_SHAPE_PROCESSES
 *    sizes the first, BENCH_SHAPE_ROUNDS the next two; BENCH_ONLY=handlers runs this part alone.
 *
 * Request counts are exact and do not depend on the machine; times do.
 */
import { cpus, loadavg } from 'node:os'
import { dynamodbEngine, s3Engine } from './engines.js'
import { makePeer, PEER_IDS, type PeerId, type PeerSetup } from './peers/all.js'
import { closeContainers, comparePeers, measureCrashTakeover, type TakeoverTimes } from './peers/compare.js'
import type { Contender, Engine } from './peers/contender.js'
import { JOB_MS } from './peers/job.js'
import { measureJobRuns } from './peers/job-runs.js'
import { LOCK_CLIENT_PARTITION_KEY } from './peers/lock-client.js'
import { POWERTOOLS_PARTITION_KEY } from './peers/powertools.js'
import { measureShapes } from './peers/shape-runs.js'
import { SINGLETON_PARTITION_KEY } from './peers/singleton.js'
import { reportJobRuns, reportPeers, reportStores } from './report.js'
import { measureStores } from './stores.js'
import { measureTakeover, TAKEOVER_MARGIN_MS, TAKEOVER_TTL_MS } from './takeover.js'
import { dynamodbTarget, s3Target } from './targets.js'

const s3Endpoint = process.env.S3_ENDPOINT
const dynamodbEndpoint = process.env.DYNAMODB_ENDPOINT
if (!s3Endpoint || !dynamodbEndpoint) {
  throw new Error(
    'S3_ENDPOINT or DYNAMODB_ENDPOINT is not set: run `npm run bench`, which starts both engines',
  )
}
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 30)
/** Rounds of the rows where a run holds the lock: dynamodb-lock-client waits a lease in each. */
const HELD_ROUNDS = Number(process.env.BENCH_HELD_ROUNDS ?? 6)
const PEER_TAKEOVER_TRIALS = 10
/** Rounds of the 50 ms job invoked at a fixed phase of the second, and the rounds' period. */
const PHASE_ROUNDS = Number(process.env.BENCH_PHASE_ROUNDS ?? 12)
const PHASE_PERIOD_MS = 2_000
/** Rounds of the 50 ms job invoked back to back, and new processes per peer. */
const BURST_ROUNDS = Number(process.env.BENCH_BURST_ROUNDS ?? 12)
const PROCESSES = Number(process.env.BENCH_PROCESSES ?? 8)
const SHAPE_PROCESSES = Number(process.env.BENCH_SHAPE_PROCESSES ?? 6)
const SHAPE_ROUNDS = Number(process.env.BENCH_SHAPE_ROUNDS ?? 10)
/** BENCH_ONLY=handlers: part 3 alone (the rows of the three handlers). */
const HANDLERS_ONLY = process.env.BENCH_ONLY === 'handlers'
/** Minutes of the every-60-s rows: 0 unless asked for, as they take that long. */
const CRON_RUNS = Number(process.env.BENCH_CRON_RUNS ?? (process.argv.includes('--cron') ? 10 : 0))

const s3 = await s3Engine(s3Endpoint)
const dynamodb = dynamodbEngine(dynamodbEndpoint)
const lockTable = await dynamodb.createTable('locks', SINGLETON_PARTITION_KEY)

console.log(`lambda-singleton benchmark, ${new Date().toISOString()}`)
console.log(`  machine:  ${cpus().length} × ${cpus()[0]?.model ?? 'unknown CPU'}, Node.js ${process.version}`)
console.log(`  S3:       ${s3Endpoint}\n  DynamoDB: ${dynamodbEndpoint}`)
console.log(`  ${ROUNDS} rounds per row (${HELD_ROUNDS} where a run holds the lock), interleaved`)
console.log(
  `  a ${JOB_MS} ms job: ${PHASE_ROUNDS} rounds at a fixed phase, ${BURST_ROUNDS} back to back, ` +
    `${PROCESSES} new processes per peer; load average ${loadavg()[0]?.toFixed(2)}`,
)

const targets = [s3Target(s3), dynamodbTarget(dynamodb, lockTable)]

const setup: PeerSetup = {
  s3Endpoint,
  bucket: s3.bucket,
  dynamodbEndpoint,
  tables: {
    singleton: lockTable,
    lockClient: await dynamodb.createTable('lock-client', LOCK_CLIENT_PARTITION_KEY),
    powertools: await dynamodb.createTable('idempotency', POWERTOOLS_PARTITION_KEY),
  },
  leaseMs: TAKEOVER_TTL_MS,
}
const peerIds = new Map<Contender, PeerId>()
for (const id of PEER_IDS) peerIds.set(await makePeer(id, setup), id)
const contenders = [...peerIds.keys()]
if (!HANDLERS_ONLY) await measureLocksAndPeers()
else {
  for (const target of targets) {
    const { medianMs, afterMs } = await measureTakeover(target.store, target.name, 20)
    console.log(
      `takeover after a crash, ${target.name}: ttl ${TAKEOVER_TTL_MS / 1_000} s + margin ${TAKEOVER_MARGIN_MS / 1_000} s ` +
        `+ ${((medianMs - TAKEOVER_TTL_MS - TAKEOVER_MARGIN_MS) / 1_000).toFixed(2)} s (median of ${afterMs.length}, from the crashed holder's request)`,
    )
  }
}

async function measureLocksAndPeers(): Promise<void> {
  const stores = await measureStores(targets, ROUNDS)
  const storeTakeovers = await Promise.all(
    targets.map((target) => measureTakeover(target.store, target.name, 20)),
  )
  reportStores(targets, stores, storeTakeovers, { ttlMs: TAKEOVER_TTL_MS, marginMs: TAKEOVER_MARGIN_MS })
  const rows = await comparePeers(contenders, ROUNDS, HELD_ROUNDS)
  // One peer at a time: 50 crashed runs polled at once would measure the machine more than the peers.
  const peerTakeovers = new Map<Contender, TakeoverTimes>()
  for (const c of contenders)
    peerTakeovers.set(c, await measureCrashTakeover(c, TAKEOVER_TTL_MS, PEER_TAKEOVER_TRIALS))
  const [s3Target_, dynamodbTarget_] = targets
  const roundTripMs = new Map<Engine, number>([
    ['S3', (s3Target_ && stores.roundTrip.on.get(s3Target_)?.medianMs) ?? Number.NaN],
    ['DynamoDB', (dynamodbTarget_ && stores.roundTrip.on.get(dynamodbTarget_)?.medianMs) ?? Number.NaN],
  ])
  const jobRowsStartedAt = performance.now()
  const jobRows = await measureJobRuns(peerIds, setup, {
    phaseRounds: PHASE_ROUNDS,
    periodMs: PHASE_PERIOD_MS,
    burstRounds: BURST_ROUNDS,
    processes: PROCESSES,
  })
  console.log('\nThe peers, side by side')
  reportPeers({ contenders, rows, roundTripMs, takeovers: peerTakeovers, ttlMs: TAKEOVER_TTL_MS })
  const jobRowsSeconds = ((performance.now() - jobRowsStartedAt) / 1_000).toFixed(0)
  console.log(
    `\nA ${JOB_MS} ms job, run after run (${jobRowsSeconds} s; load average ${loadavg()[0]?.toFixed(2)} at the end)`,
  )
  reportJobRuns(contenders, jobRows)
}

const shapesStartedAt = performance.now()
const shapeRows = await measureShapes(peerIds, setup, {
  processes: SHAPE_PROCESSES,
  burstRounds: SHAPE_ROUNDS,
  cronRuns: CRON_RUNS,
})
const shapeSeconds = ((performance.now() - shapesStartedAt) / 1_000).toFixed(0)
console.log(
  `\nThe handlers users write (${shapeSeconds} s; load average ${loadavg()[0]?.toFixed(2)} at the end)` +
    (CRON_RUNS > 0 ? '' : '; the every-60-s rows: npm run bench -- --cron'),
)
reportJobRuns(contenders, shapeRows)
console.log(`\n${(performance.now() / 1_000).toFixed(0)} s in all, the engines' start-up not counted`)

closeContainers()
for (const target of targets) target.close()
for (const contender of contenders) await contender.close()
