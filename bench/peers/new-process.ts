/**
 * One run of the 50 ms job in a process of its own, as in a new Lambda container: makes the
 * peer's client explicitly, waits for the phase of the second it was given, runs the job once
 * and prints its timings as one line of JSON. job-runs.ts starts it:
 *
 *   node --conditions=lambda-singleton-source --import tsx bench/peers/new-process.ts '<NewProcessTask as JSON>'
 *
 * Only node: modules (and types) are imported statically, so that loading the rest is timed (`loadMs`).
 */
import { setTimeout as sleep } from 'node:timers/promises'
import type { NewProcessTask } from './job-runs.js'

const startedAt = performance.now()
const task = JSON.parse(process.argv[2] ?? '') as NewProcessTask
const { makePeer } = await import('./all.js')
const { runJob } = await import('./job.js')
const contender = await makePeer(task.id, task.setup)
const loadedAt = performance.now()

// As in Lambda, the handler is made (INIT: lambda-singleton starts learning the store's clock,
// as AWS_LAMBDA_FUNCTION_NAME is set) right before the invocation it serves.
const now = Date.now()
const at = Math.floor(now / 1_000) * 1_000 + task.phaseMs
await sleep((at >= now ? at : at + 1_000) - now)
const madeFrom = performance.now()
const container = contender.container()
const madeAt = performance.now()
const run = await runJob(container, task.job, task.event, task.shape)
console.log(
  JSON.stringify({
    ...run,
    operations: [...run.operations],
    extra: run.extra ? [...run.extra] : null,
    units: run.units ? [...run.units] : null,
    loadMs: loadedAt - startedAt,
    clientMs: madeAt - madeFrom,
  }),
)
container.close()
await contender.close()
// Keep-alive sockets (dynamodb-lock-client's agent) would hold the process; the line is written
// (a pipe is written synchronously on Linux).
process.exit(0)
