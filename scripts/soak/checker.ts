/**
 * The soak's judge: reads the event log and counts every broken promise of the lock. All times
 * are true times (this machine's monotonic clock), whatever the workers' skewed clocks said.
 * Tokens are assumed only to grow strictly per key, never to grow by one.
 */
import { DEFAULT_READ_VALIDITY_MS, settleDelayMs } from '../../lib/s3/read-validity.js'
import type { SoakEvent, WriteEvent } from './events.js'
import { buildHistory, type Call, type History, type LeaseSpan } from './history.js'

export const ViolationKind = {
  /** Two leases of one key valid at the same true instant. */
  Overlap: 'overlap',
  /** One token handed out by two acquisitions of one key. */
  TokenReused: 'token-reused',
  /** An acquisition that began after another had returned got a lower token. */
  TokenOrder: 'token-order',
  /** A fenced write landed after a write with a higher token had landed on that object (a zombie's, or any stale holder's). */
  StaleWrite: 'stale-write',
  /** What an object held at the end contradicts the writes that landed on it. */
  FinalState: 'final-state',
  /** A call outlived its bound (waitMs, timeoutMs) by more than the slack, pauses not counted. */
  Overtime: 'overtime',
} as const
export type ViolationKind = (typeof ViolationKind)[keyof typeof ViolationKind]

export interface Violation {
  readonly kind: ViolationKind
  readonly t: number
  readonly message: string
}

export interface CheckOptions {
  /** How far past its bound a call may return before it counts (event-loop lag on a busy machine). */
  readonly boundSlackMs: number
}

export function check(events: readonly SoakEvent[], options: CheckOptions): Violation[] {
  const history = buildHistory([...events].sort((a, b) => a.t - b.t))
  return [
    ...overlaps(history.leases),
    ...tokenRules(history),
    ...staleWrites(history),
    ...finalState(history),
    ...overtime(history, options.boundSlackMs),
  ].sort((a, b) => a.t - b.t)
}

function byKey<T extends { readonly key: string }>(items: readonly T[]): Map<string, T[]> {
  const groups = new Map<string, T[]>()
  for (const item of items) groups.set(item.key, [...(groups.get(item.key) ?? []), item])
  return groups
}

const describeLease = (lease: LeaseSpan): string =>
  `${lease.id} (token ${lease.token}, valid ${lease.start.toFixed(0)}–${lease.end.toFixed(0)})`

function overlaps(leases: readonly LeaseSpan[]): Violation[] {
  const found: Violation[] = []
  for (const [key, spans] of byKey(leases.filter((lease) => lease.end > lease.start))) {
    const active: LeaseSpan[] = []
    for (const lease of [...spans].sort((a, b) => a.start - b.start)) {
      for (const other of active.filter((a) => a.end > lease.start)) {
        found.push({
          kind: ViolationKind.Overlap,
          t: lease.start,
          message: `${key}: ${describeLease(lease)} valid while ${describeLease(other)} still was`,
        })
      }
      active.splice(0, active.length, ...active.filter((a) => a.end > lease.start), lease)
    }
  }
  return found
}

function tokenRules(history: History): Violation[] {
  const found: Violation[] = []
  const acquired = history.acquires.flatMap(({ start, end }) =>
    end?.status === 'acquired' && end.token !== undefined
      ? [{ key: end.key, id: end.id, token: end.token, calledAt: start.t, returnedAt: end.t }]
      : [],
  )
  for (const [key, list] of byKey(acquired)) {
    const seen = new Map<number, string>()
    for (const item of list) {
      const first = seen.get(item.token)
      if (first === undefined) seen.set(item.token, item.id)
      else
        found.push({
          kind: ViolationKind.TokenReused,
          t: item.returnedAt,
          message: `${key}: token ${item.token} handed to ${first} and again to ${item.id}`,
        })
    }
    // Every acquisition must top every one that had returned before it was called.
    const returned = [...list].sort((a, b) => a.returnedAt - b.returnedAt)
    let next = 0
    let highest: (typeof list)[number] | undefined
    for (const item of [...list].sort((a, b) => a.calledAt - b.calledAt)) {
      for (; (returned[next]?.returnedAt ?? Number.POSITIVE_INFINITY) < item.calledAt; next++) {
        const done = returned[next] as (typeof list)[number]
        if (!highest || done.token > highest.token) highest = done
      }
      if (highest && highest.token > item.token) {
        found.push({
          kind: ViolationKind.TokenOrder,
          t: item.returnedAt,
          message: `${key}: ${item.id} got token ${item.token}, below ${highest.token} of ${highest.id}, which had returned before it was called`,
        })
      }
    }
  }
  return found
}

/** A fenced write that landed: from its call's start to its end. */
interface Landed {
  readonly id: string
  readonly lease: string
  readonly token: number
  readonly start: number
  readonly end: number
  readonly previousToken: number | undefined
}

function landed(history: History): Map<string, Landed[]> {
  const byObject = new Map<string, Landed[]>()
  for (const { start, end } of history.writes) {
    if (end?.outcome !== 'ok') continue
    const { id, lease, token, object } = start
    const write = { id, lease, token, start: start.t, end: end.t, previousToken: end.previousToken }
    byObject.set(object, [...(byObject.get(object) ?? []), write])
  }
  return byObject
}

function staleWrites(history: History): Violation[] {
  const found: Violation[] = []
  for (const [object, writes] of landed(history)) {
    // Every write that landed must carry at least the highest token that had landed before it began.
    const finished = [...writes].sort((a, b) => a.end - b.end)
    let next = 0
    let highest: Landed | undefined
    for (const write of [...writes].sort((a, b) => a.start - b.start)) {
      for (; (finished[next]?.end ?? Number.POSITIVE_INFINITY) < write.start; next++) {
        const done = finished[next] as Landed
        if (!highest || done.token > highest.token) highest = done
      }
      const lease = history.leaseById.get(write.lease)
      const writer =
        lease && write.start >= lease.end
          ? `zombie ${write.lease} (valid until ${lease.end.toFixed(0)})`
          : write.lease
      if (highest && highest.token > write.token) {
        found.push({
          kind: ViolationKind.StaleWrite,
          t: write.start,
          message: `${object}: ${write.id} of ${writer} landed token ${write.token} after ${highest.id} had landed token ${highest.token}`,
        })
      } else if (write.previousToken !== undefined && write.previousToken > write.token) {
        found.push({
          kind: ViolationKind.StaleWrite,
          t: write.start,
          message: `${object}: ${write.id} of ${writer} with token ${write.token} replaced token ${write.previousToken}`,
        })
      }
    }
  }
  return found
}

function finalState(history: History): Violation[] {
  const found: Violation[] = []
  const byObject = landed(history)
  const attempted = new Map<string, WriteEvent>()
  for (const { start, end } of history.writes) if (end?.outcome !== 'rejected') attempted.set(start.id, start)
  const fail = (t: number, message: string) => found.push({ kind: ViolationKind.FinalState, t, message })
  for (const final of history.finals) {
    if (final.of === 'lock') {
      const handed = history.leases.filter((lease) => lease.key === final.key).map((lease) => lease.token)
      const top = Math.max(0, ...handed)
      if ((final.token ?? -1) < top)
        fail(final.t, `${final.object} ends at token ${final.token}, below ${top} handed out`)
      continue
    }
    const top = Math.max(-1, ...(byObject.get(final.object) ?? []).map((write) => write.token))
    const writer = final.write === undefined ? undefined : attempted.get(final.write)
    if (top < 0) continue
    if (final.token === undefined || final.token < top) {
      fail(final.t, `${final.object} ends with token ${final.token}, below ${top}, which landed there`)
    } else if (writer?.object !== final.object || writer.token !== final.token) {
      fail(
        final.t,
        `${final.object} ends with token ${final.token} and a body from ${final.write}, which no writer of that token sent there`,
      )
    }
  }
  return found
}

/** How far past its `timeoutMs` a `fencedPut` may return: a settle already owed is waited out whole. */
const FENCED_SETTLE_MS = settleDelayMs(DEFAULT_READ_VALIDITY_MS)

function overtime(history: History, slackMs: number): Violation[] {
  const found: Violation[] = []
  const judge = (call: Call<{ t: number; w: string; id: string }>, what: string, boundMs: number) => {
    const { start, end } = call
    const stop = end?.t ?? history.processEnd(start.w)
    const took = stop - start.t - history.pausedMs(start.w, start.t, stop)
    if (took > boundMs + slackMs) {
      found.push({
        kind: ViolationKind.Overtime,
        t: start.t,
        message: `${start.id}: ${what} took ${took.toFixed(0)} ms${end ? '' : ' without returning'}, bound ${boundMs} ms + slack ${slackMs} ms`,
      })
    }
  }
  for (const call of history.acquires)
    judge(call, `attempt({ waitMs: ${call.start.waitMs} })`, call.start.waitMs)
  // fencedPut waits out a settle it owes whole, past timeoutMs (the workers keep the default read validity).
  for (const call of history.writes)
    judge(call, `fencedPut({ timeoutMs: ${call.start.timeoutMs} })`, call.start.timeoutMs + FENCED_SETTLE_MS)
  return found
}
