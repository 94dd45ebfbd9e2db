import type { LockContext } from './context.js'
import { ConflictReason, LockConflictError, LockOptionsError } from './errors.js'
import { type LockRecord, parseRecord, RECORD_VERSION, serializeRecord } from './record.js'
import { ReadStatus, WriteStatus } from './store.js'

/** Budget for store retries of an operator's call. */
const OPERATOR_BUDGET_MS = 10_000

/** Frees the lock now, token + 1, so the stuck holder is fenced off. `null` when there is no object. */
export async function forceRelease(context: LockContext, operator: string): Promise<LockRecord | null> {
  const snapshot = await context.read(context.clock.now() + OPERATOR_BUDGET_MS)
  if (!snapshot) return null
  const record: LockRecord = {
    ...snapshot.record,
    token: snapshot.record.token + 1,
    expires_at: 0,
    owner: `force-released by ${operator}`,
  }
  const result = await context.write(
    serializeRecord(record),
    snapshot.etag,
    context.clock.now() + OPERATOR_BUDGET_MS,
  )
  if (result.status !== WriteStatus.Written) {
    throw new LockConflictError(
      `Lock "${context.key}" changed while being released (${result.status}); nothing was written, try again`,
      { key: context.key, reason: ConflictReason.Changed },
    )
  }
  context.remember(record, result.etag)
  return record
}

/**
 * Replaces whatever is at the key with a released record carrying `token`. Never lowers a token
 * that the object, valid or not, shows; never replaces a valid record that is held.
 */
export async function reset(context: LockContext, operator: string, token: number): Promise<LockRecord> {
  const { key } = context
  if (!Number.isSafeInteger(token) || token < 0) {
    throw new LockOptionsError(`reset token must be a non-negative safe integer, got ${token}`, { key })
  }
  const refused = (message: string, reason: ConflictReason): LockConflictError =>
    new LockConflictError(`Lock "${key}": ${message}; nothing was written`, { key, reason })
  if (token <= context.highestToken) {
    throw refused(
      `reset token ${token} must be above ${context.highestToken}, already handed out`,
      ConflictReason.TokenTooLow,
    )
  }
  const current = await context.store.read(key)
  if (current.status === ReadStatus.Found) {
    let record: LockRecord | undefined
    try {
      record = parseRecord(current.body, key, current.etag)
    } catch {
      // Corrupted: exactly what reset is for. Still never go below a token it may carry.
      const found = tokenIn(current.body)
      if (token <= (found ?? Number.NEGATIVE_INFINITY)) {
        throw refused(
          `reset token ${token} must be above the token ${found} in the object`,
          ConflictReason.TokenTooLow,
        )
      }
    }
    if (record && record.expires_at !== 0) {
      throw refused(
        `the lock is not released (owner ${record.owner}); refusing to reset`,
        ConflictReason.NotReleased,
      )
    }
    if (record && token <= record.token) {
      throw refused(
        `reset token ${token} must be above the current token ${record.token}`,
        ConflictReason.TokenTooLow,
      )
    }
  }
  const record: LockRecord = { v: RECORD_VERSION, token, expires_at: 0, owner: `reset by ${operator}` }
  const body = serializeRecord(record)
  const result =
    current.status === ReadStatus.Found
      ? await context.store.replace(key, body, current.etag)
      : await context.store.create(key, body)
  if (result.status !== WriteStatus.Written) {
    throw refused(`the lock object changed while being reset (${result.status})`, ConflictReason.Changed)
  }
  context.remember(record, result.etag)
  return record
}

/** A numeric `token` in a body that is JSON but not a valid record, if there is one. */
function tokenIn(body: string): number | undefined {
  let token: unknown
  try {
    token = (JSON.parse(body) as { token?: unknown }).token
  } catch {
    // Not JSON, or JSON null: no token to respect.
  }
  return Number.isFinite(token) ? (token as number) : undefined
}
