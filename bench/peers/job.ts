/**
 * One run of a scheduled job whose handler takes 50 ms, in a container of a peer: what the peer
 * adds to the invocation's wall time, and what it sent.
 */
import { setTimeout as sleep } from 'node:timers/promises'
import type { SingletonScheduleEvent } from 'lambda-singleton'
import { type Container, Outcome } from './contender.js'

/** How long the job's handler takes. */
export const JOB_MS = 50
/** What a run's context says is left of its invocation. */
const RUN_MS = 60_000

export interface JobRun {
  /** The invocation's wall time (acquire, handler, release) minus the handler's own. */
  readonly addedMs: number
  /** The handler's own wall time (JOB_MS and the timer's lateness). */
  readonly handlerMs: number
  /** Requests sent since the container's last run ended, by operation. */
  readonly operations: ReadonlyMap<string, number>
  /** Of those, requests beyond the peer's protocol, when the bench tells them apart. */
  readonly extra: ReadonlyMap<string, number> | undefined
  /** When it started (epoch ms, local clock, which here is the engines' too). */
  readonly startedAt: number
  /** Milliseconds past the second at the start. */
  readonly phaseMs: number
}

/**
 * Runs the job once in `container`; it must run (not skip). Its requests are those the container
 * sent since its last run ended (or since it was made): a request sent in the background between
 * two runs counts for the next one. (Lambda would freeze the container between invocations; this
 * process does not, so such a request is sent sooner here, but it is counted all the same.)
 */
export async function runJob(
  container: Container,
  job: string,
  event: SingletonScheduleEvent,
): Promise<JobRun> {
  let handlerMs = Number.NaN
  const work = async () => {
    const startedAt = performance.now()
    await sleep(JOB_MS)
    handlerMs = performance.now() - startedAt
  }
  const startedAt = Date.now()
  const startedAtMs = performance.now()
  const outcome = await container.invoke({ job, event, remainingMs: RUN_MS, work })
  const wallMs = performance.now() - startedAtMs
  if (outcome !== Outcome.Ran) throw new Error(`${job}: expected the job to run, got ${outcome}`)
  const operations = new Map(container.requests.byOperation)
  const extra = container.extra && new Map(container.extra.byOperation)
  container.requests.reset()
  container.extra?.reset()
  return { addedMs: wallMs - handlerMs, handlerMs, operations, extra, startedAt, phaseMs: startedAt % 1_000 }
}
