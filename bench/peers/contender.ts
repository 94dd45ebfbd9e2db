/**
 * What the peer comparison needs of each way to keep a scheduled job from overlapping: a
 * "container" (one Lambda execution environment: its own SDK client, its own lock state) that
 * runs one invocation at a time, and the prices of the requests it sends.
 */
import { SCHEDULER_EVENT_SOURCE, type SingletonScheduleEvent } from '../../lib/config.js'

/** What became of one invocation. */
export const Outcome = {
  /** The job ran. */
  Ran: 'ran',
  /** Skipped because another run holds the lock (the invocation succeeds). */
  SkippedHeld: 'skipped: held',
  /** Skipped because this tick already completed (the invocation succeeds). */
  SkippedDuplicate: 'skipped: duplicate',
  /** Not run; the stored result of the earlier run was returned instead. */
  Replayed: 'replayed stored result',
  /** Not run; the invocation failed, so an asynchronous invoker retries it later. */
  FailedInProgress: 'failed: in progress',
  /** Not run, after waiting a whole lease for the holder to go away. */
  GaveUp: 'gave up after waiting',
} as const
export type Outcome = (typeof Outcome)[keyof typeof Outcome]

/** One invocation: a Scheduler tick, and what the job does when it runs. */
export interface Invocation {
  /** Names the job; the lock key (or idempotency key prefix) every peer derives from it. */
  readonly job: string
  readonly event: SingletonScheduleEvent
  /** What Lambda's `getRemainingTimeInMillis()` answers at the start. */
  readonly remainingMs: number
  /** The job itself; it may wait on a gate, or never finish (a crash). */
  readonly work: () => Promise<unknown>
  /** The process dies once the job has started: nothing more is sent, not even a heartbeat. */
  readonly crashes?: boolean
  /**
   * When the handler reads its fencing token (lambda-singleton only; the peers have none):
   * never, before the job (a handler that fences at once), or after it. @default 'never'
   */
  readonly token?: TokenRead
}

/** When a handler reads its fencing token. */
export type TokenRead = 'never' | 'at-once' | 'after-work'

/** Requests one container sent, by operation (`GetObject`, `PutItem`…), each SDK attempt counted. */
export interface RequestCounter {
  readonly byOperation: Map<string, number>
  reset(): void
}

/** One Lambda execution environment of a peer. */
export interface Container {
  invoke(invocation: Invocation): Promise<Outcome>
  readonly requests: RequestCounter
  /**
   * Of `requests`, those beyond the peer's own protocol (clock probes…), when the bench can tell
   * them apart (lambda-singleton's: see extra-requests.ts).
   */
  readonly extra?: RequestCounter
  /**
   * What the engine bills, by operation, where it bills by size rather than per request:
   * DynamoDB's request units (see units.ts). Absent: one unit per request.
   */
  readonly units?: RequestCounter
  close(): void
}

export type Engine = 'S3' | 'DynamoDB'

export interface Contender {
  readonly name: string
  readonly engine: Engine
  /** US dollars per million requests (or, on DynamoDB, request units) of each operation (see bench/prices.ts). */
  readonly pricePerMillion: Readonly<Record<string, number>>
  container(): Container
  close(): Promise<void>
}

/**
 * The first tick's time: a day before the bench started. Ticks must not be ahead of the store's
 * clock: since issue 24 (finding 11) a tick ahead of it runs but is not recorded as done, so a
 * second delivery of it would run again (the bench's ticks were in 2030, and its "same tick
 * again, after it completed" row showed a run where every real tick is skipped).
 */
const FIRST_TICK_AT = Math.floor(Date.now() / 1_000) * 1_000 - 86_400_000

/** The construct's Scheduler payload for the `n`-th tick: later ticks have later times, all past. */
export function tick(n: number): SingletonScheduleEvent {
  return {
    source: SCHEDULER_EVENT_SOURCE,
    schedule: 'bench',
    scheduledTime: new Date(FIRST_TICK_AT + n * 1_000).toISOString(),
  }
}
