/**
 * `npm run bench:cold-trace`: where a new process's milliseconds go, request by request. Each
 * peer (lambda-singleton on DynamoDB and on S3, Powertools idempotency, the naive S3 lock) runs
 * the handler that never reads its token (or TRACE_SHAPE: never, after-work, at-once) once in
 * each of TRACE_PROCESSES (default 16) new processes, peers in turn, phases spread over the
 * second, as the bench's cold rows do (new-process.ts), with every SDK call marked (trace/marks.ts):
 * its start, its request going on the wire, the answer, its return; and the handler's start and
 * end. Printed: for each peer, each mark's median time since the run started, and the median gap
 * to the one before it; then the time added to the job, as the bench's cold row counts it.
 */
import { dynamodbEngine, s3Engine } from './engines.js'
import { median } from './measure.js'
import type { PeerId, PeerSetup } from './peers/all.js'
import { nextTick } from './peers/compare.js'
import { JOB_SHAPES } from './peers/job.js'
import { inNewProcess } from './peers/job-runs.js'
import { LOCK_CLIENT_PARTITION_KEY } from './peers/lock-client.js'
import { POWERTOOLS_PARTITION_KEY } from './peers/powertools.js'
import { SINGLETON_PARTITION_KEY } from './peers/singleton.js'
import type { Mark } from './trace/marks.js'

const PROCESSES = Number(process.env.TRACE_PROCESSES ?? 16)
const SHAPE = JOB_SHAPES.find((shape) => shape.token === (process.env.TRACE_SHAPE ?? 'never'))
const PEERS = (process.env.TRACE_PEERS?.split(',') ?? [
  'singleton-dynamodb',
  'powertools',
  'singleton-s3',
  'naive-s3',
]) as PeerId[]

async function main(): Promise<void> {
  const s3Endpoint = process.env.S3_ENDPOINT
  const dynamodbEndpoint = process.env.DYNAMODB_ENDPOINT
  if (!s3Endpoint || !dynamodbEndpoint)
    throw new Error('S3_ENDPOINT and DYNAMODB_ENDPOINT must be set (npm run bench:cold-trace sets both)')
  if (!SHAPE) throw new Error('TRACE_SHAPE must be never, after-work or at-once')
  const s3 = await s3Engine(s3Endpoint)
  const dynamodb = dynamodbEngine(dynamodbEndpoint)
  const setup: PeerSetup = {
    s3Endpoint,
    bucket: s3.bucket,
    dynamodbEndpoint,
    tables: {
      singleton: await dynamodb.createTable('cold-trace', SINGLETON_PARTITION_KEY),
      lockClient: await dynamodb.createTable('cold-trace-lock-client', LOCK_CLIENT_PARTITION_KEY),
      powertools: await dynamodb.createTable('cold-trace-powertools', POWERTOOLS_PARTITION_KEY),
    },
    leaseMs: 5_000,
  }
  process.env.BENCH_TRACE = '1' // the processes' clients mark their calls
  const runs = new Map(PEERS.map((id): [PeerId, { marks: Mark[]; addedMs: number }[]] => [id, []]))
  const job = `cold-trace-${SHAPE.token}`
  // Each lock exists and is released before the first traced run, as a cron's after its first tick.
  for (const id of PEERS) await inNewProcess({ id, setup, job, event: nextTick(), phaseMs: 0, shape: SHAPE })
  for (let round = 0; round < PROCESSES; round++) {
    const phaseMs = (60 + Math.floor((round * 1_000) / PROCESSES)) % 1_000
    for (let i = 0; i < PEERS.length; i++) {
      const id = PEERS[(round + i) % PEERS.length] as PeerId
      // TRACE_PROFILE_DIR: each run also profiled, into <dir>/<peer>-<round>.cpuprofile (new-process.ts).
      if (process.env.TRACE_PROFILE_DIR)
        process.env.BENCH_PROFILE = `${process.env.TRACE_PROFILE_DIR}/${id}-${round}.cpuprofile`
      const run = (await inNewProcess({
        id,
        setup,
        job,
        event: nextTick(),
        phaseMs,
        shape: SHAPE,
      })) as unknown as {
        marks: Mark[]
        addedMs: number
      }
      runs.get(id)?.push(run)
    }
  }
  for (const [id, list] of runs) report(id, list)
  if (process.env.TRACE_PROFILE_DIR) {
    const { writeFile } = await import('node:fs/promises')
    await writeFile(`${process.env.TRACE_PROFILE_DIR}/runs.json`, JSON.stringify(Object.fromEntries(runs)))
  }
  process.exit(0)
}

/** Each mark named by its place among the run's calls (`PutItem#2 send`), its median time, and the gaps. */
function report(id: PeerId, list: readonly { marks: readonly Mark[]; addedMs: number }[]): void {
  const named = list.map((run) => {
    const seen = new Map<string, number>()
    const calls = new Map<number, string>()
    let call = 0
    const byName = new Map<string, number>()
    const open: string[] = []
    for (const m of run.marks) {
      let name: string
      if (m.what === 'call') {
        const op = m.operation ?? '?'
        const n = (seen.get(op) ?? 0) + 1
        seen.set(op, n)
        name = `${op}#${n}`
        calls.set(call++, name)
        open.push(name)
      } else if (m.operation) {
        const op = m.operation
        name = open.find((c) => c.startsWith(`${op}#`) && !byName.has(`${c} ${m.what}`)) ?? `${op}#?`
        if (m.what === 'return') open.splice(open.indexOf(name), 1)
      } else name = ''
      byName.set(m.what === 'call' ? `${name} call` : name ? `${name} ${m.what}` : m.what, m.at)
    }
    return byName
  })
  const names = [...new Set(named.flatMap((run) => [...run.keys()]))]
  const times = names.map((name) => ({
    name,
    at: median(named.flatMap((run) => (run.has(name) ? [run.get(name) as number] : []))),
    of: named.filter((run) => run.has(name)).length,
  }))
  times.sort((a, b) => a.at - b.at)
  console.log(
    `\n${id}: ${list.length} new processes, added to the job ${median(list.map((r) => r.addedMs)).toFixed(2)} ms (median)`,
  )
  let previous = 0
  for (const t of times) {
    console.log(
      `  ${t.at.toFixed(2).padStart(8)} ms  +${(t.at - previous).toFixed(2).padStart(6)}  ${t.name}${t.of < list.length ? ` (${t.of} runs)` : ''}`,
    )
    previous = t.at
  }
}

await main()
