/**
 * `npm run soak`: workers contend for locks on the local Ceph engine through a fault-injecting
 * proxy while they are crashed, frozen, and radosgw restarts; then the checker judges the event
 * log. Prints `violations: N` last and exits non-zero when N > 0 (or the run did too little).
 * Writes events.jsonl, results.json and timeline.svg to the report folder (reports/soak/).
 *
 *   npm run soak                       10 minutes
 *   npm run soak -- --quick            at most 3 minutes, for CI
 *   npm run soak -- --check FILE       judge a saved event log again
 */
import { execFileSync } from 'node:child_process'
import { randomUUID } from 'node:crypto'
import {
  closeSync,
  mkdirSync,
  openSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
  writeSync,
} from 'node:fs'
import { fileURLToPath } from 'node:url'
import { CreateBucketCommand } from '@aws-sdk/client-s3'
import { Chaos, localRgwRestart, type RestartRgw } from './chaos.js'
import { parseCommand, type SoakConfig } from './config.js'
import { type EventBody, parseEvents, readEvents, type SoakEvent, trueNow } from './events.js'
import { directClient, readFinalState } from './final-state.js'
import { bundleWorker, WorkerPool } from './pool.js'
import { SoakProxy } from './proxy.js'
import { seededRandom } from './random.js'
import { judge } from './report.js'

const s3LocalScript = fileURLToPath(new URL('../s3-local.sh', import.meta.url))

/** radosgw can be restarted only when the endpoint is the local engine of scripts/s3-local.sh. */
function rgwRestartFor(endpoint: string): RestartRgw {
  try {
    const status = execFileSync('bash', [s3LocalScript, 'status'], { encoding: 'utf8' })
    return status.includes(`running at ${endpoint} `) ? localRgwRestart(s3LocalScript) : undefined
  } catch {
    return undefined
  }
}

/** The orchestrator's own event log, beside the workers' (one file each) in `logDir`. */
function openLog(logDir: string): { emit: (event: EventBody) => void; close: () => void } {
  rmSync(logDir, { recursive: true, force: true })
  mkdirSync(logDir, { recursive: true })
  const fd = openSync(`${logDir}/orchestrator.jsonl`, 'a')
  return {
    emit: (event) => writeSync(fd, `${JSON.stringify({ t: trueNow(), w: 'orchestrator', ...event })}\n`),
    close: () => closeSync(fd),
  }
}

/** Every process's log as one, in true-time order, also written to `out`. */
function mergeLogs(logDir: string, out: string): SoakEvent[] {
  const events: SoakEvent[] = []
  for (const file of readdirSync(logDir)) {
    const parsed = parseEvents(readFileSync(`${logDir}/${file}`, 'utf8'))
    if (parsed.unreadable) console.warn(`soak: ${parsed.unreadable} unreadable lines in ${file}`)
    events.push(...parsed.events)
  }
  events.sort((a, b) => a.t - b.t)
  writeFileSync(out, `${events.map((e) => JSON.stringify(e)).join('\n')}\n`)
  return events
}

async function soak(config: SoakConfig): Promise<{ events: SoakEvent[]; context: Record<string, unknown> }> {
  const endpoint = process.env.S3_ENDPOINT
  if (!endpoint) throw new Error('S3_ENDPOINT is not set: run `npm run soak`, which starts the local engine')
  const logDir = `${config.reportDir}/logs`
  const { emit, close } = openLog(logDir)
  const s3 = directClient(endpoint)
  const bucket = `soak-${config.seed}-${randomUUID().slice(0, 6)}`
  await s3.send(new CreateBucketCommand({ Bucket: bucket }))
  const restartRgw = rgwRestartFor(endpoint)
  if (!restartRgw) console.warn(`soak: ${endpoint} is not the local engine: radosgw will not be restarted`)

  const random = seededRandom(config.seed)
  const proxy = new SoakProxy({
    upstream: endpoint,
    rates: config.proxyRates,
    delayMs: config.proxyDelayMs,
    random: seededRandom(config.seed + 1),
    onFault: (kind, target) => emit({ type: 'fault', kind, target }),
  })
  const proxyUrl = await proxy.start()
  const script = await bundleWorker(config.reportDir)
  const pool = new WorkerPool(config, { script, endpoint: proxyUrl, bucket, logDir }, random, emit)
  const chaos = new Chaos(config, pool, proxy, restartRgw, random, emit)

  emit({ type: 'run', phase: 'start', options: { ...config, bucket, endpoint, proxy: proxyUrl } })
  console.info(
    `soak: ${config.workers} workers, ${config.keys.length} keys, ${config.durationMs / 1000} s, seed ${config.seed}, bucket ${bucket}`,
  )
  pool.start()
  chaos.start()
  const progress = setInterval(() => {
    console.info(`soak: ${pool.acquisitions} acquisitions, ${proxy.requests} requests so far`)
  }, 30_000)
  await new Promise((resolve) => setTimeout(resolve, config.durationMs))
  clearInterval(progress)

  await chaos.stop()
  await pool.stop(20_000)
  await proxy.stop()
  for (const event of await readFinalState(s3, bucket, config.keys, config.objectsPerKey)) emit(event)
  emit({ type: 'run', phase: 'end' })
  close()
  s3.destroy()
  if (chaos.restartFailure) throw chaos.restartFailure
  if (pool.unexpectedExits)
    console.warn(`soak: ${pool.unexpectedExits} workers exited on their own (see above)`)

  const harness = {
    requests: proxy.requests,
    upstreamFailures: proxy.upstreamFailures,
    unexpectedWorkerExits: pool.unexpectedExits,
    rgwRestartable: restartRgw !== undefined,
  }
  return {
    events: mergeLogs(logDir, `${config.reportDir}/events.jsonl`),
    context: { config, bucket, harness },
  }
}

/** The slack of the call bounds when a saved log is checked again (the run's own is in its results.json). */
const DEFAULT_SLACK_MS = 1_500

const command = parseCommand(process.argv.slice(2))
if ('check' in command) {
  const { events, unreadable } = readEvents(command.check)
  if (unreadable) console.warn(`soak: ${unreadable} unreadable lines (cut short by a crash)`)
  const slack = Number(process.env.SOAK_BOUND_SLACK_MS ?? DEFAULT_SLACK_MS)
  const verdict = judge(events, { boundSlackMs: slack })
  console.info(verdict.text)
  process.exitCode = verdict.code
} else {
  const config = command.soak
  mkdirSync(config.reportDir, { recursive: true })
  const { events, context } = await soak(config)
  const verdict = judge(events, { ...config, context })
  console.info(verdict.text)
  process.exitCode = verdict.code
}
