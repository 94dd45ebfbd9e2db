// reset: the repair of a record no acquisition can take (unreadable, or a token no acquisition can
// follow), written over whatever is there, never lowering a token unless told to go back to the clock.
import { ConflictReason, LockOptionsError } from './errors.js'
import { refused } from './operator-write.js'
import { parseRecord } from './parse-record.js'
import { keptByReset, type LockRecord, RECORD_VERSION, serializeRecord } from './record.js'
import { salvage } from './salvage.js'
import { ReadStatus, WriteStatus } from './store.js'
import type { StoreSession } from './store-session.js'
import { isFreeToTake } from './timing.js'
import { isAheadOfClock, tokenAfter } from './token.js'

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
  const record: LockRecord = {
    v: RECORD_VERSION,
    token,
    expires_at: 0,
    owner: `reset by ${operator}`,
    ...keptByReset(current.status === ReadStatus.Found ? validRecordIn(current, key) : undefined),
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
