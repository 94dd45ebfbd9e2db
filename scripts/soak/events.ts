/**
 * The soak's event log: one JSON object per line, written by the workers and the orchestrator
 * and judged by the checker. Every event carries `t`, the TRUE time: this machine's monotonic
 * clock (CLOCK_MONOTONIC, shared by all its processes and never stepped), in ms. Workers judge
 * leases on skewed clocks of their own; the checker judges them on this one.
 */
import { readFileSync } from 'node:fs'

/** True time in ms: the same clock in every process on this machine, unaffected by skew or NTP steps. */
export function trueNow(): number {
  return Number(process.hrtime.bigint()) / 1e6
}

/** What a process is: a worker incarnation (`w3.1`: slot 3, second process), or the orchestrator. */
interface Base {
  readonly t: number
  readonly w: string
}

export type Phase = 'start' | 'end'

/**
 * A worker process began (its local clock runs `offsetMs` ahead of the true one) or ended: by
 * itself when asked to stop, or, logged by the orchestrator, with an `exit` nobody asked for.
 */
export interface WorkerStart extends Base {
  readonly type: 'worker'
  readonly phase: Phase
  readonly pid: number
  readonly offsetMs?: number
  readonly exit?: string
}

/** `lock.tryAcquire({ waitMs })`. At its end, an acquired lease is valid until `validUntil` (true time). */
export interface AcquireEvent extends Base {
  readonly type: 'acquire'
  readonly phase: Phase
  /** Unique per call; an acquired lease is named by it. */
  readonly id: string
  readonly key: string
  readonly waitMs: number
  readonly status?: 'acquired' | 'held' | 'skipped' | 'error'
  readonly token?: number
  readonly validUntil?: number
  readonly error?: string
}

/** `lease.renew()`; a renewal that succeeded moves the lease's end to `validUntil`. */
export interface RenewEvent extends Base {
  readonly type: 'renew'
  readonly phase: Phase
  readonly lease: string
  readonly ok?: boolean
  readonly validUntil?: number
  readonly error?: string
}

/** `lease.release()`: the holder stops using its lease when it starts releasing it. */
export interface ReleaseEvent extends Base {
  readonly type: 'release'
  readonly phase: Phase
  readonly lease: string
  readonly ok?: boolean
  readonly error?: string
}

/** `fencedPut` of `object` with the lease's token, bounded by `timeoutMs`. */
export interface WriteEvent extends Base {
  readonly type: 'write'
  readonly phase: Phase
  readonly id: string
  readonly lease: string
  readonly key: string
  readonly object: string
  readonly token: number
  readonly timeoutMs: number
  /** ok: landed; rejected: `FencedWriteRejectedError`; error: anything else (it may have landed). */
  readonly outcome?: 'ok' | 'rejected' | 'error'
  readonly previousToken?: number
  readonly currentToken?: number
  readonly error?: string
}

export const FaultKind = {
  Kill: 'kill',
  Pause: 'pause',
  Resume: 'resume',
  RgwRestart: 'rgw-restart',
  RgwUp: 'rgw-up',
  Reset: 'reset',
  SlowDown: 'slowdown',
  Internal: 'internal',
  Delay: 'delay',
  NoDate: 'no-date',
  LoseResponse: 'lose-response',
  CutBody: 'cut-body',
} as const
export type FaultKind = (typeof FaultKind)[keyof typeof FaultKind]

/** A fault the orchestrator or the proxy injected; `target` names the worker or the request. */
export interface FaultEvent extends Base {
  readonly type: 'fault'
  readonly kind: FaultKind
  readonly target?: string
}

/** What an object (a fenced data object or a lock record) held once the run was over. */
export interface FinalEvent extends Base {
  readonly type: 'final'
  /** A lock record (`token` is its token) or a fenced data object (`token` from its metadata). */
  readonly of: 'lock' | 'data'
  readonly key: string
  readonly object: string
  readonly token?: number
  /** The write that put the body there (data objects), from the body itself. */
  readonly write?: string
}

/** The run itself: its start and end bound every interval left open. */
export interface RunEvent extends Base {
  readonly type: 'run'
  readonly phase: Phase
  readonly options?: Record<string, unknown>
}

export type SoakEvent =
  | WorkerStart
  | AcquireEvent
  | RenewEvent
  | ReleaseEvent
  | WriteEvent
  | FaultEvent
  | FinalEvent
  | RunEvent

/** An event as its writer gives it: the time is added when it is written, and so is `w` unless given. */
export type EventBody = SoakEvent extends infer E
  ? E extends SoakEvent
    ? Omit<E, 't' | 'w'> & { readonly w?: string }
    : never
  : never

/** Parses an event log (JSON lines). A line cut short by a crash is skipped and counted. */
export function parseEvents(text: string): { events: SoakEvent[]; unreadable: number } {
  const events: SoakEvent[] = []
  let unreadable = 0
  for (const line of text.split('\n')) {
    if (line.trim() === '') continue
    try {
      events.push(JSON.parse(line) as SoakEvent)
    } catch {
      unreadable++
    }
  }
  return { events, unreadable }
}

export function readEvents(path: string): { events: SoakEvent[]; unreadable: number } {
  return parseEvents(readFileSync(path, 'utf8'))
}

/** The error's name and message, kept short: an event line must stay one atomic pipe write. */
export function describeError(error: unknown): string {
  const text = error instanceof Error ? `${error.name}: ${error.message}` : String(error)
  return text.length > 300 ? `${text.slice(0, 297)}...` : text
}
