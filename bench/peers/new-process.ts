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
const { startMarks, takeMarks } = await import('../trace/marks.js')
const contender = await makePeer(task.id, task.setup)
const loadedAt = performance.now()

// As in Lambda, the handler is made (INIT: lambda-singleton starts learning the store's clock,
// as AWS_LAMBDA_FUNCTION_NAME is set) right before the invocation it serves.
const now = Date.now()
const at = Math.floor(now / 1_000) * 1_000 + task.phaseMs
await sleep((at >= now ? at : at + 1_000) - now)
// BENCH_PROFILE=<file>: the handler's making and its run, profiled (a .cpuprofile, for Chrome's
// DevTools), the profiler started before, so that INIT's work does not wait on it.
const profiler = process.env.BENCH_PROFILE ? await startProfile() : undefined
const madeFrom = performance.now()
const container = contender.container()
const madeAt = performance.now()
if (process.env.BENCH_TRACE === '1') startMarks()
const runFrom = performance.now()
const runFromTicks = process.hrtime.bigint()
// After INIT, Lambda's runtime asks for the event over I/O (the Runtime API's `next`) and gets
// it at once, the event having caused the cold start: INIT's promises run on meanwhile, until
// their first I/O at least, and the invocation's time counts from the request.
const eventArrives = () => new Promise<void>((resolve) => setImmediate(resolve))
const run = await runJob(container, task.job, task.event, task.shape, eventArrives)
const runTo = performance.now()
if (profiler) await profiler.stop(process.env.BENCH_PROFILE as string, runFromTicks)
console.log(
  JSON.stringify({
    ...run,
    operations: [...run.operations],
    extra: run.extra ? [...run.extra] : null,
    units: run.units ? [...run.units] : null,
    loadMs: loadedAt - startedAt,
    clientMs: madeAt - madeFrom,
    // Traced (BENCH_TRACE=1, cold-trace.ts): the run's marks, in ms since it started.
    ...(process.env.BENCH_TRACE === '1' && {
      marks: [...takeMarks(), { at: runTo, what: 'end' }].map((m) => ({ ...m, at: m.at - runFrom })),
    }),
  }),
)
container.close()
await contender.close()
// Keep-alive sockets (dynamodb-lock-client's agent) would hold the process; the line is written
// (a pipe is written synchronously on Linux).
process.exit(0)

async function startProfile(): Promise<{ stop(file: string, runFrom: bigint): Promise<void> }> {
  const { Session } = await import('node:inspector/promises')
  const { writeFile } = await import('node:fs/promises')
  const session = new Session()
  session.connect()
  await session.post('Profiler.enable')
  await session.post('Profiler.setSamplingInterval', { interval: 50 })
  await session.post('Profiler.start')
  return {
    async stop(file, runFrom) {
      const { profile } = await session.post('Profiler.stop')
      // Where the run started on the profile's clock (V8's and hrtime's are both the monotonic
      // clock, µs and ns), to match the trace's marks.
      await writeFile(file, JSON.stringify({ ...profile, runStart: Number(runFrom / 1_000n) }))
    },
  }
}
