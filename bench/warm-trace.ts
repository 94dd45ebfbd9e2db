/**
 * `npm run bench:trace`: where a warm run's milliseconds go, request by request. A 50 ms job
 * that never reads its token runs back to back in one warm container per peer (lambda-singleton
 * on DynamoDB and on S3, Powertools idempotency on DynamoDB), peers taking turns; every SDK call
 * is timed at two points of the client's middleware stack: when the call starts (`initialize`)
 * and when its request goes on the wire (`finalizeRequest`), and again when each returns. A
 * run's wall time is then cut into segments: the peer's own code before a call, the SDK's
 * serialization, the request on the wire (the engine's time and the network's), the SDK's
 * parsing of the answer, and the time between the handler's end and the release.
 *
 * The segments' medians are over the second half of TRACE_RUNS runs (default 200): the JIT and
 * the engines warm, as a container's later runs are; the time each peer adds is also given over
 * runs 1–10, 11–100 and 101–200, to show how far a container's first runs are from its later
 * ones. Times depend on the machine; the segments' sizes next to each other are the point.
 */
import { randomUUID } from 'node:crypto'
import { setTimeout as sleep } from 'node:timers/promises'
import { type DynamoDBEngine, dynamodbEngine, type S3Engine, s3Engine } from './engines.js'
import { median } from './measure.js'
import { type Contender, tick } from './peers/contender.js'
import { JOB_SHAPES, runJob } from './peers/job.js'
import { powertoolsIdempotency } from './peers/powertools.js'
import { singletonOnDynamoDB, singletonOnS3 } from './peers/singleton.js'
import { type Mark, startMarks, takeMarks, traced } from './trace/marks.js'

const RUNS = Number(process.env.TRACE_RUNS ?? 200)
/** TRACE_SHAPES=never,after-work,at-once: the handlers traced, each in a container per peer. */
const SHAPES = (process.env.TRACE_SHAPES ?? 'never').split(',').map((token) => {
  const shape = JOB_SHAPES.find((known) => known.token === token)
  if (!shape) throw new Error(`TRACE_SHAPES: ${token} is none of never, after-work, at-once`)
  return shape
})
/**
 * TRACE_PERIOD_S=60: each container invoked once a round at a fixed phase (its slot, 1.5 s after
 * the one before, 120 ms past a second), a round every so many seconds: a cron's cadence. The
 * medians are then over runs 2 onwards. Unset: back to back, medians over the second half.
 */
const PERIOD_MS = Number(process.env.TRACE_PERIOD_S ?? 0) * 1_000
const FROM = PERIOD_MS > 0 ? 1 : Math.floor(RUNS / 2)

/** What each gap between two marks is, by the marks it lies between. */
type WireMark = Extract<Mark['what'], 'call' | 'send' | 'answer' | 'return'>

function segmentName(from: WireMark | 'start' | 'end', to: WireMark | 'end', call: number): string {
  if (from === 'start') return 'own code before the first call'
  if (to === 'end') return 'own code after the last call'
  if (from === 'call') return `call ${call}: SDK serializes`
  if (from === 'send') return `call ${call}: on the wire`
  if (from === 'answer') return `call ${call}: SDK parses the answer`
  return call === 2 ? 'handler (50 ms) and own code before the release' : `own code before call ${call}`
}

/** One run's segments, in ms, by name. */
function segmentsOf(startedAt: number, endedAt: number, runMarks: readonly Mark[]): Map<string, number> {
  const segments = new Map<string, number>()
  let previous: { at: number; what: WireMark | 'start' | 'end' } = { at: startedAt, what: 'start' }
  let call = 0
  // The handler's own marks are not cut at: its segment is the handler and the code around it.
  const wire = runMarks.filter(
    (m): m is Mark & { what: WireMark } => m.what !== 'handler' && m.what !== 'handled',
  )
  for (const next of [...wire, { at: endedAt, what: 'end' as const }]) {
    if (next.what === 'call') call++
    const name = segmentName(previous.what, next.what, call)
    segments.set(name, (segments.get(name) ?? 0) + (next.at - previous.at))
    previous = next
  }
  return segments
}

async function main(): Promise<void> {
  const s3Endpoint = process.env.S3_ENDPOINT
  const dynamodbEndpoint = process.env.DYNAMODB_ENDPOINT
  if (!s3Endpoint || !dynamodbEndpoint)
    throw new Error('S3_ENDPOINT and DYNAMODB_ENDPOINT must be set (npm run bench:trace sets both)')
  const s3: S3Engine = await s3Engine(s3Endpoint)
  const dynamodb: DynamoDBEngine = dynamodbEngine(dynamodbEndpoint)
  const tracedS3 = { ...s3, client: () => traced(s3.client()) }
  const tracedDynamoDB = { ...dynamodb, client: () => traced(dynamodb.client()) }
  const peers: Contender[] = [
    singletonOnDynamoDB(tracedDynamoDB, await dynamodb.createTable('trace', 'pk')),
    singletonOnS3(tracedS3),
    powertoolsIdempotency(tracedDynamoDB, await dynamodb.createTable('trace-powertools', 'id')),
  ]
  const job = `trace-${randomUUID().slice(0, 8)}`
  process.env.AWS_LAMBDA_FUNCTION_NAME = job
  const slots = SHAPES.flatMap((shape) =>
    peers.map((peer) => ({ shape, name: `${peer.name} (${shape.token})`, container: peer.container() })),
  )
  const runs = slots.map((): Map<string, number>[] => [])
  const walls = slots.map((): number[] => [])
  // Each run its own tick: Powertools replays a tick it has seen.
  let second = Math.floor(Date.now() / 1_000)
  const start = Math.ceil((Date.now() + 1_000) / 1_000) * 1_000
  for (let round = 0; round < RUNS; round++) {
    for (const [i, { shape, container }] of slots.entries()) {
      if (PERIOD_MS > 0) await sleep(Math.max(0, start + round * PERIOD_MS + i * 1_500 + 120 - Date.now()))
      startMarks()
      const startedAt = performance.now()
      const run = await runJob(container, `${job}-${shape.token}`, tick(second++), shape)
      const endedAt = performance.now()
      walls[i]?.push(run.addedMs)
      if (round >= FROM) runs[i]?.push(segmentsOf(startedAt, endedAt, takeMarks()))
    }
  }
  const names = [...new Set(runs.flatMap((list) => list.flatMap((segments) => [...segments.keys()])))]
  const rows = names.map((name) => [
    name,
    ...runs.map((list) => median(list.map((segments) => segments.get(name) ?? 0)).toFixed(2)),
  ])
  rows.push([
    "added to the job (wall time minus the handler's), median",
    ...walls.map((list) => median(list.slice(FROM)).toFixed(2)),
  ])
  // A container's first runs are slower than its later ones (a new client's connection and the
  // SDK's caches, the JIT; lambda-singleton's also carry the probes of the store's clock its INIT
  // sends): the bench's rows of 10 warm runs show the first, a container serving a cron for
  // hours the last.
  const spans = [
    [0, 10],
    [10, 100],
    [100, RUNS],
  ] as const
  for (const [from, to] of PERIOD_MS > 0 ? [] : spans.filter(([from]) => from < RUNS)) {
    const label = `added, median of runs ${from + 1}–${Math.min(to, RUNS)}`
    rows.push([label, ...walls.map((list) => median(list.slice(from, to)).toFixed(2))])
  }
  console.log(
    `| segment, median ms over runs ${FROM + 1}–${RUNS} | ${slots.map((slot) => slot.name).join(' | ')} |`,
  )
  console.log(`| --- |${slots.map(() => ' --- |').join('')}`)
  for (const row of rows) console.log(`| ${row.join(' | ')} |`)
  process.exit(0)
}

await main()
