import { ConflictReason, LockConflictError, LockOptionsError, LockStoreError } from './errors.js'
import {
  CLEARED_SCHEDULE,
  type EndedByOperatorRecord,
  type LockRecord,
  type PauseRecord,
  parseRecord,
  RECORD_VERSION,
  serializeRecord,
  withSchedule,
} from './record.js'
import { salvage } from './salvage.js'
import { ReadStatus, WriteStatus } from './store.js'
import type { Snapshot, StoreSession } from './store-session.js'
import { isFreeToTake } from './timing.js'
import { isAheadOfClock, tokenAfter } from './token.js'

/** Budget for store retries of an operator's call (`inspect` included). */
export const OPERATOR_BUDGET_MS = 10_000

/** How `forceRelease` frees a lock. */
export interface ForceReleaseOptions {
  /**
   * Release only this version of the record (`LockInfo.etag`, as `inspect` showed it): refuses
   * (`LockConflictError` `changed`, nothing written) when the lock changed since, so that a
   * decision made on what was shown never ends a newer run's lease. @default the version it reads
   */
  readonly etag?: string
}

/**
 * Frees the lock now with a higher token, so the stuck holder is fenced off, and names the
 * ended lease in `ended_by`. `null` when there is no object. Conditional on the version it read
 * (or `options.etag`): it never ends a lease it did not judge. Resolves the record written, also
 * when a run took the lock after it (its answer lost, a read settled it). Throws
 * `LockConflictError` for a token no acquisition could follow (`tokenAfter`).
 */
export async function forceRelease(
  session: StoreSession,
  operator: string,
  options: ForceReleaseOptions = {},
): Promise<LockRecord | null> {
  const deadline = session.clock.now() + OPERATOR_BUDGET_MS
  const snapshot = await judged(session, options.etag, deadline)
  if (!snapshot) return null
  const record: LockRecord = {
    ...snapshot.record,
    token: session.nextToken(snapshot.record.token),
    expires_at: 0,
    owner: `force-released by ${operator}`,
    ended_by: endedBy(session, snapshot.record, operator, 'force-release'),
  }
  const landing = await operatorWrite(session, { record, etag: snapshot.etag, what: 'released', deadline })
  if (!landing.landed) throw changed(session.key, 'released', WriteStatus.Conflict)
  return record
}

/** How `LockOperator.pause` pauses a job. */
export interface PauseOptions {
  /** Why, for whoever looks (`inspect`, the skipped runs' log lines and results). */
  readonly note?: string
  /**
   * Also end the lease of a run that holds the lock now, as `forceRelease` does: the token goes
   * up, so its renewal, release and fenced writes are refused. Without it, a held lock stays
   * held and the pause takes effect from the next run. @default false
   */
  readonly now?: boolean
  /**
   * Pause only this version of the record (`LockInfo.etag`): refuses (`changed`, nothing written)
   * when the lock changed since. @default the version it reads
   */
  readonly etag?: string
}

/** What `pause` wrote, and whether it ended a live lease to do so. */
export interface PauseResult {
  /** The record written. */
  readonly record: LockRecord
  /** The record as it was before. */
  readonly previous: LockRecord
  /** The lock was held when read: by `previous.owner`, who goes on unless `endedLease`. */
  readonly wasHeld: boolean
  /** The live lease was ended (`now`). */
  readonly endedLease: boolean
  /**
   * The record as a read found it when the write's answer was lost and someone wrote after it
   * (the holder, or a run that took the lock): the pause landed, and this is what is there now.
   */
  readonly after?: LockRecord
}

/** What `resume` found and wrote. */
export interface ResumeResult {
  /** The record as it is now (as it was, when it was not paused). */
  readonly record: LockRecord
  /** The pause it lifted; `undefined` when the job was not paused and nothing was written. */
  readonly lifted: PauseRecord | undefined
}

/**
 * Pauses the job: every run skips until `resume`. The record stays as it is but for `paused`
 * (and its version, 2), so the holder of a live lease keeps it (its writes carry the pause over)
 * unless `now`. `null` when there is no object. Conditional on what was read: refuses
 * (`LockConflictError`, nothing written) when the lock changed meanwhile, but for a 409 answered
 * to a pause that ends no lease, which goes over what is there then.
 */
export async function pause(
  session: StoreSession,
  operator: string,
  options: PauseOptions = {},
): Promise<PauseResult | null> {
  const deadline = session.clock.now() + OPERATOR_BUDGET_MS
  let snapshot = await judged(session, options.etag, deadline)
  for (;;) {
    if (!snapshot) return null
    const planned = pausing(session, snapshot, operator, options)
    const landing = await operatorWrite(session, {
      record: planned.record,
      etag: snapshot.etag,
      what: 'paused',
      deadline,
      isOurs: (current) =>
        sameJson(current.paused, planned.record.paused) &&
        (!planned.endedLease || sameJson(current.ended_by, planned.record.ended_by)),
    })
    if (landing.landed)
      return { ...planned, previous: snapshot.record, ...(landing.after && { after: landing.after }) }
    // A pause that may end a lease was judged on what it read: it ends none it did not see.
    if (options.now === true || options.etag !== undefined) {
      throw changed(session.key, 'paused', WriteStatus.Conflict)
    }
    snapshot = landing.current
  }
}

/** The record a pause writes over `snapshot`, and what it does to the lease there. */
function pausing(session: StoreSession, snapshot: Snapshot, operator: string, options: PauseOptions) {
  const previous = snapshot.record
  const paused: PauseRecord = {
    by: operator,
    at: Math.round(session.serverTime().mid) / 1000,
    ...(options.note !== undefined && { note: options.note }),
  }
  const wasHeld = !session.isFree(snapshot)
  const endedLease = options.now === true && wasHeld
  const ended: Partial<LockRecord> = endedLease
    ? {
        token: session.nextToken(previous.token),
        expires_at: 0,
        owner: `paused by ${operator}`,
        ended_by: endedBy(session, previous, operator, 'pause'),
      }
    : {}
  return { record: { ...withSchedule(previous, { paused }), ...ended }, wasHeld, endedLease }
}

/**
 * Resumes a paused job: removes `paused`, and the count of failed runs with it, so the next
 * run starts afresh (the record goes back to version 1). Writes nothing when it is not paused.
 * `null` when there is no object.
 */
export async function resume(session: StoreSession): Promise<ResumeResult | null> {
  const deadline = session.clock.now() + OPERATOR_BUDGET_MS
  let { snapshot } = await session.read(deadline)
  for (;;) {
    if (!snapshot) return null
    const lifted = snapshot.record.paused
    if (lifted === undefined) return { record: snapshot.record, lifted }
    const record = withSchedule(snapshot.record, CLEARED_SCHEDULE)
    const landing = await operatorWrite(session, {
      record,
      etag: snapshot.etag,
      what: 'resumed',
      deadline,
      isOurs: (current) => current.paused === undefined,
    })
    if (landing.landed) return { record: landing.after ?? record, lifted }
    // Lifting a pause ends no lease: it goes over what is there now.
    snapshot = landing.current
  }
}

/** The record read, or `undefined` for none; refuses when it is not the version `etag` judged. */
async function judged(
  session: StoreSession,
  etag: string | undefined,
  deadline: number,
): Promise<Snapshot | undefined> {
  const { snapshot } = await session.read(deadline)
  if (etag !== undefined && snapshot !== undefined && snapshot.etag !== etag) {
    throw refused(
      session.key,
      `the lock changed since it was judged (${snapshot.record.owner} wrote token ${snapshot.record.token} since)`,
      ConflictReason.Changed,
    )
  }
  return snapshot
}

/** Who ends the lease of `previous`, and when, for `LockRecord.ended_by`. */
function endedBy(
  session: StoreSession,
  previous: LockRecord,
  operator: string,
  action: string,
): EndedByOperatorRecord {
  const at = Math.round(session.serverTime().mid) / 1000
  return { token: previous.token, owner: previous.owner, by: operator, action, at }
}

/** An operator's write: the record, the version it goes over, and how to tell it in a later record. */
interface OperatorWrite {
  readonly record: LockRecord
  readonly etag: string
  /** For messages: `released`, `paused`, `resumed`. */
  readonly what: string
  readonly deadline: number
  /** Whether `current`, written after a lost answer, shows this write landed under it. */
  readonly isOurs?: (current: LockRecord) => boolean
}

/** Written (`after`: what a settle read found written over it since), or not, after a 409 and a change. */
type Landing =
  | { readonly landed: true; readonly after?: LockRecord }
  | { readonly landed: false; readonly current: Snapshot | undefined }

/**
 * Replaces the record read with etag `etag`, and says whether it landed. A lost answer is settled
 * by a read (`StoreSession.write`): written, even when someone wrote after it. A 409 is someone
 * else's write in flight: tried again while the record is unchanged; once it changed, `landed`
 * false, for the caller to judge again. Refuses (`LockConflictError`) when someone else wrote first.
 */
async function operatorWrite(session: StoreSession, write: OperatorWrite): Promise<Landing> {
  const { record, etag, what, deadline } = write
  const isOurs = write.isOurs ?? ((current: LockRecord) => sameJson(current.ended_by, record.ended_by))
  for (let conflicts = 0; ; conflicts++) {
    const result = await session.write(serializeRecord(record), etag, deadline).catch((error: unknown) => {
      throw mayHaveLanded(session.key, what, error)
    })
    if (result.status === WriteStatus.Written) {
      session.remember(record, result.etag)
      return { landed: true }
    }
    if (result.status !== WriteStatus.Conflict) {
      // A settle read after a lost answer found another write: ours may be under it.
      if (result.current && isOurs(result.current.record))
        return { landed: true, after: result.current.record }
      throw changed(session.key, what, result.status)
    }
    const { snapshot } = await session.read(deadline)
    if (snapshot?.etag !== etag) {
      // A 409 after a try whose answer was lost: that try may be what changed the record.
      if (snapshot && isOurs(snapshot.record)) {
        return sameJson(snapshot.record, record) ? { landed: true } : { landed: true, after: snapshot.record }
      }
      return { landed: false, current: snapshot }
    }
    await session.waitBeforeRetry(conflicts, undefined, deadline)
    if (session.clock.now() >= deadline) {
      throw new LockStoreError(
        `Lock "${session.key}": ${conflicts + 1} write conflicts in a row while being ${what}; nothing was written`,
        { key: session.key, retryable: true },
      )
    }
  }
}

/** A store failure after the write was sent: it may have landed, and only a read can tell. */
function mayHaveLanded(key: string, what: string, error: unknown): unknown {
  if (!(error instanceof LockStoreError) || !error.retryable) return error
  return new LockStoreError(
    `Lock "${key}": the store kept failing while the lock was being ${what}, so the write may have been written: ` +
      'inspect the lock before trying again',
    { key, retryable: true, cause: error },
  )
}

function changed(key: string, what: string, status: string): LockConflictError {
  return refused(key, `the lock changed while being ${what} (${status})`, ConflictReason.Changed)
}

/** Equal as stored (records are read back from the JSON this library wrote, in its key order). */
function sameJson(a: unknown, b: unknown): boolean {
  return JSON.stringify(a) === JSON.stringify(b)
}

export interface ResetOptions {
  /**
   * The token to store: above every token the lock handed out and the object shows, and at most
   * 10 s ahead of the store's clock. Required unless `backToClock`.
   */
  readonly token?: number
  /**
   * Instead of `token`: store a token from the store's clock (the latest it may read now), even
   * below the token the object shows or this lock has seen. The repair of a token no acquisition
   * can follow (`record-ahead-of-clock`, `tokens-exhausted`), which only an outside write makes.
   * Every token this library handed out is below it (each was handed out once the store's clock
   * had passed it); but objects that `fencedPut` wrote with a higher token, under the outside
   * one, refuse every new holder's write until they are removed or rewritten. @default false
   */
  readonly backToClock?: boolean
  /**
   * Also replace an object that may be held: a valid record not yet expired, or a body that
   * does not show itself released or expired. Never lowers a token (`backToClock` aside).
   * @default false
   */
  readonly force?: boolean
}

/**
 * Replaces whatever is at the key with a released record carrying `token` (or, `backToClock`,
 * one from the store's clock). Without `backToClock`, never lowers a token that the object,
 * valid or not, shows; never replaces what it cannot prove released or expired unless forced.
 */
export async function reset(
  session: StoreSession,
  operator: string,
  options: ResetOptions,
): Promise<LockRecord> {
  const { key } = session
  const { token: given, backToClock = false, force = false } = options
  if (backToClock === (given !== undefined)) {
    throw new LockOptionsError('reset takes either a token or backToClock, not both nor neither', { key })
  }
  if (given !== undefined) assertGivenToken(session, given)
  const { current, server } = await session.peek()
  const token = given ?? tokenAfter(0, server, key)
  if (isAheadOfClock(token, server)) {
    // The clock floor could not cover it: a deletion would let the next token fall below it.
    throw refused(
      key,
      `reset token ${token} is ahead of the store's clock (${Math.floor(server.upper)} ms); tokens follow that clock`,
      ConflictReason.TokenAheadOfClock,
    )
  }
  if (current.status === ReadStatus.Found) {
    // Forced, whether it has expired does not matter: no clock is needed to say so.
    const serverLower = force ? Number.NEGATIVE_INFINITY : server.lower
    // Back to the clock lowers the token on purpose: only whether it may be held is checked.
    assertResettable(session, { ...current, serverLower }, backToClock ? undefined : token, force)
  }
  // A pause is an operator's decision about the job, not part of what reset repairs: it stays.
  const paused = current.status === ReadStatus.Found ? validRecordIn(current, key)?.paused : undefined
  const record: LockRecord = {
    v: RECORD_VERSION,
    token,
    expires_at: 0,
    owner: `reset by ${operator}`,
    ...(paused && { paused }),
  }
  const body = serializeRecord(record)
  const result = await session.writeOnce(body, current.status === ReadStatus.Found ? current.etag : null)
  if (result.status !== WriteStatus.Written) {
    throw refused(key, `the lock object changed while being reset (${result.status})`, ConflictReason.Changed)
  }
  // Its token is the floor from now on: above every token seen (a given one must be), or back
  // to the clock, where this lock follows the clock again, not the tokens it saw before.
  session.rememberReset(record, result.etag)
  return record
}

/** Throws unless `token` is one reset may write, before anything is sent. */
function assertGivenToken(session: StoreSession, token: number): void {
  const { key } = session
  // The largest safe integer would leave the lock nothing to hand out above it.
  if (!Number.isSafeInteger(token) || token < 0 || token >= Number.MAX_SAFE_INTEGER) {
    throw new LockOptionsError(
      `reset token must be an integer from 0 to ${Number.MAX_SAFE_INTEGER - 1}, got ${token}`,
      { key },
    )
  }
  if (token <= session.highestToken) {
    throw refused(
      key,
      `reset token ${token} must be above ${session.highestToken}, already handed out`,
      ConflictReason.TokenTooLow,
    )
  }
}

/**
 * Throws `LockConflictError` (nothing written) unless `token` is above every token the object
 * shows (no token: not checked) and the object is released or expired (or `force`). A body that
 * is not a valid record is judged by what it shows of itself: its `expires_at` if it has a
 * numeric one, else nothing.
 */
function assertResettable(
  session: StoreSession,
  found: { body: string; etag: string; serverLower: number },
  token: number | undefined,
  force: boolean,
): void {
  const { key } = session
  const record = validRecordIn(found, key)
  // Not a valid record: exactly what reset is for, but it may still be a live lease.
  const shown = record ? { token: record.token, expiresAt: record.expires_at } : salvage(found.body)
  if (token !== undefined && shown.token !== undefined && !(token > shown.token)) {
    throw refused(
      key,
      record
        ? `reset token ${token} must be above the current token ${shown.token}`
        : `reset token ${token} must be above the token ${shown.token} in the object`,
      ConflictReason.TokenTooLow,
    )
  }
  if (force || isOver(shown.expiresAt, found.serverLower, session.marginMs)) return
  const expiry = `expires_at ${JSON.stringify(shown.expiresAt ?? null)}`
  throw refused(
    key,
    record
      ? `the lock is not released nor expired (owner ${record.owner}, ${expiry}); refusing to reset without force`
      : `the object is not a valid record and shows itself neither released nor expired (${expiry}); refusing to reset without force`,
    ConflictReason.NotReleased,
  )
}

function validRecordIn(found: { body: string; etag: string }, key: string): LockRecord | undefined {
  try {
    return parseRecord(found.body, key, found.etag)
  } catch {
    return undefined
  }
}

/** Whether a lease ending at `expiresAt` (seconds, 0 once released) is over for every contender. */
function isOver(expiresAt: number | undefined, serverLower: number, marginMs: number): boolean {
  return expiresAt !== undefined && isFreeToTake(expiresAt, serverLower, marginMs)
}

function refused(key: string, message: string, reason: ConflictReason): LockConflictError {
  return new LockConflictError(`Lock "${key}": ${message}; nothing was written`, { key, reason })
}
