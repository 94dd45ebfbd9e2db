/**
 * The soak's event log, put back together: each lease with the true-time interval in which it was
 * valid, each call with its start and end, each process with its end and pauses. The checker
 * judges this; the timeline draws it.
 */
import type { AcquireEvent, FinalEvent, SoakEvent, WriteEvent } from './events.js'

export interface LeaseSpan {
  readonly id: string
  readonly key: string
  readonly w: string
  readonly token: number
  /** When its acquire returned (true ms). */
  readonly start: number
  /**
   * The earliest of: its last known local end (acquire or a successful renew, in true time), the
   * start of its release, the end of its process, the end of the run.
   */
  readonly end: number
  /** Its last known local end, unclipped. */
  readonly validUntil: number
}

/** A call with a bound: `lock.tryAcquire({ waitMs })` or `fencedPut({ timeoutMs })`. */
export interface Call<E> {
  readonly start: E
  /** Undefined when the process ended (or the run did) before the call returned. */
  readonly end: E | undefined
}

export interface History {
  readonly runStart: number
  readonly runEnd: number
  readonly leases: readonly LeaseSpan[]
  readonly leaseById: ReadonlyMap<string, LeaseSpan>
  readonly acquires: readonly Call<AcquireEvent>[]
  readonly writes: readonly Call<WriteEvent>[]
  readonly finals: readonly FinalEvent[]
  /** When each worker process ended (killed, exited, or the run's end). */
  processEnd(w: string): number
  /** How long `w` spent stopped (SIGSTOP) between `from` and `to`. */
  pausedMs(w: string, from: number, to: number): number
}

/** Pairs start and end events by id; an end without its start is dropped. */
function pairCalls<E extends AcquireEvent | WriteEvent>(events: readonly E[]): Call<E>[] {
  const calls = new Map<string, { start: E; end: E | undefined }>()
  for (const event of events) {
    if (event.phase === 'start') calls.set(event.id, { start: event, end: undefined })
    else {
      const call = calls.get(event.id)
      if (call) call.end = event
    }
  }
  return [...calls.values()]
}

export function buildHistory(events: readonly SoakEvent[]): History {
  const times = events.map((event) => event.t)
  const runStart = events.find((e) => e.type === 'run' && e.phase === 'start')?.t ?? Math.min(...times)
  const runEnd = events.find((e) => e.type === 'run' && e.phase === 'end')?.t ?? Math.max(...times)

  const ends = new Map<string, number>()
  const pauses = new Map<string, { from: number; to: number | undefined }[]>()
  const endAt = (w: string, t: number): void => {
    ends.set(w, Math.min(ends.get(w) ?? Number.POSITIVE_INFINITY, t))
  }
  for (const event of events) {
    if (event.type === 'worker' && event.phase === 'end') endAt(event.w, event.t)
    if (event.type !== 'fault' || event.target === undefined) continue
    if (event.kind === 'kill') endAt(event.target, event.t)
    const list = pauses.get(event.target) ?? []
    pauses.set(event.target, list)
    if (event.kind === 'pause') list.push({ from: event.t, to: undefined })
    const open = list.at(-1)
    if (event.kind === 'resume' && open && open.to === undefined) open.to = event.t
  }
  const processEnd = (w: string): number => Math.min(ends.get(w) ?? runEnd, runEnd)
  const pausedMs = (w: string, from: number, to: number): number =>
    (pauses.get(w) ?? []).reduce((sum, pause) => {
      const overlap = Math.min(to, pause.to ?? processEnd(w)) - Math.max(from, pause.from)
      return sum + Math.max(0, overlap)
    }, 0)

  const acquires = pairCalls(events.filter((e): e is AcquireEvent => e.type === 'acquire'))
  const writes = pairCalls(events.filter((e): e is WriteEvent => e.type === 'write'))
  const leases = leaseSpans(events, acquires, processEnd)
  return {
    runStart,
    runEnd,
    leases,
    leaseById: new Map(leases.map((lease) => [lease.id, lease])),
    acquires,
    writes,
    finals: events.filter((e): e is FinalEvent => e.type === 'final'),
    processEnd,
    pausedMs,
  }
}

function leaseSpans(
  events: readonly SoakEvent[],
  acquires: readonly Call<AcquireEvent>[],
  processEnd: (w: string) => number,
): LeaseSpan[] {
  // A renewal that succeeded moves the lease's end; the holder stops using it when it starts releasing.
  const renewedUntil = new Map<string, number>()
  const releasedAt = new Map<string, number>()
  for (const event of events) {
    if (event.type === 'renew' && event.phase === 'end' && event.ok && event.validUntil !== undefined) {
      renewedUntil.set(event.lease, Math.max(renewedUntil.get(event.lease) ?? 0, event.validUntil))
    }
    if (event.type === 'release' && event.phase === 'start' && !releasedAt.has(event.lease)) {
      releasedAt.set(event.lease, event.t)
    }
  }
  const spans: LeaseSpan[] = []
  for (const { end } of acquires) {
    if (end?.status !== 'acquired' || end.token === undefined || end.validUntil === undefined) continue
    const validUntil = Math.max(end.validUntil, renewedUntil.get(end.id) ?? 0)
    const stop = Math.min(validUntil, releasedAt.get(end.id) ?? Number.POSITIVE_INFINITY, processEnd(end.w))
    spans.push({ id: end.id, key: end.key, w: end.w, token: end.token, start: end.t, end: stop, validUntil })
  }
  return spans
}
