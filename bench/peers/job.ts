/**
 * One run of a scheduled job whose handler takes 50 ms, in a container of a peer: what the peer
 * adds to the invocation's wall time, and what it sent.
 */
import { setTimeout as sleep } from 'node:timers/promises'
import type { SingletonScheduleEvent } from 'lambda-singleton'
import { mark } from '../trace/marks.js'
import { type Container, Outcome, type TokenRead } from './contender.js'

/** How long the job's handler takes. */
export const JOB_MS = 50

/** A handler: how long its work takes, and when it reads its fencing token. */
export interface JobShape {
  readonly name: string
  readonly workMs: number
  readonly token: TokenRead
}

/** The handler of the rows before the shapes: a 50 ms job that reads its token at once. */
export const FENCES_AT_ONCE: JobShape = {
  name: 'reads its token at once, 50 ms job',
  workMs: JOB_MS,
  token: 'at-once',
}

/** The three handlers users write: most never read the token, or read it after fetching their input. */
export const JOB_SHAPES: readonly JobShape[] = [
  { name: 'never reads its token, 50 ms job', workMs: JOB_MS, token: 'never' },
  { name: 'reads its token after 1 s of work', workMs: 1_000, token: 'after-work' },
  FENCES_AT_ONCE,
]
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
  /** What the engine billed, by operation, where it bills by size (DynamoDB's request units). */
  readonly units: ReadonlyMap<string, number> | undefined
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
  shape: JobShape = FENCES_AT_ONCE,
  eventArrives?: () => Promise<void>,
): Promise<JobRun> {
  let handlerMs = Number.NaN
  const work = async () => {
    mark('handler')
    const startedAt = performance.now()
    await sleep(shape.workMs)
    handlerMs = performance.now() - startedAt
    mark('handled')
  }
  const startedAt = Date.now()
  const startedAtMs = performance.now()
  // Timed from the runtime's request for the event (new-process.ts): what runs meanwhile counts.
  await eventArrives?.()
  const outcome = await container.invoke({ job, event, remainingMs: RUN_MS, work, token: shape.token })
  const wallMs = performance.now() - startedAtMs
  if (outcome !== Outcome.Ran) throw new Error(`${job}: expected the job to run, got ${outcome}`)
  const operations = new Map(container.requests.byOperation)
  const extra = container.extra && new Map(container.extra.byOperation)
  const units = container.units && new Map(container.units.byOperation)
  container.requests.reset()
  container.extra?.reset()
  container.units?.reset()
  return {
    addedMs: wallMs - handlerMs,
    handlerMs,
    operations,
    extra,
    units,
    startedAt,
    phaseMs: startedAt % 1_000,
  }
}
