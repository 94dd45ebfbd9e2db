import { LockCorruptedError } from './errors.js'

/** A JSON value, as stored in `state` (checkpoints). */
export type JsonValue = string | number | boolean | null | JsonValue[] | { [key: string]: JsonValue }

/** The one record format version this library writes and understands. */
export const RECORD_VERSION = 1

/** A lock object larger than this is not a lock record (and reading it would cost memory). */
export const MAX_RECORD_BYTES = 64 * 1024

/**
 * The lock object as stored, field names as on the wire. Fields this version does not know
 * are kept as they are when the record is rewritten, so a newer writer's data survives.
 */
export interface LockRecord {
  readonly v: typeof RECORD_VERSION
  /** Fencing token: +1 on every acquisition, kept by renew and release. */
  readonly token: number
  /** Seconds since the Unix epoch, by the store's clock; 0 once released. */
  readonly expires_at: number
  /** Who holds (or last held) the lock. */
  readonly owner: string
  /** Seconds since the Unix epoch when the current token was taken. */
  readonly acquired_at?: number
  /** The lease length asked for by the holder. */
  readonly ttl_ms?: number
  /** Id of the last tick that completed (per-tick dedupe). */
  readonly last_run?: string
  /** A holder's checkpoint, handed to the next holder. */
  readonly state?: JsonValue
  readonly [field: string]: unknown
}

const isFiniteNonNegative = (value: unknown): value is number =>
  Number.isFinite(value) && (value as number) >= 0

const optionalChecks: Record<string, (value: unknown) => boolean> = {
  acquired_at: isFiniteNonNegative,
  ttl_ms: isFiniteNonNegative,
  last_run: (value) => typeof value === 'string',
}

/** Reads a lock object body; anything that is not a record this version understands is refused. */
export function parseRecord(raw: string, key: string, etag?: string): LockRecord {
  const corrupted = (why: string, cause?: unknown): LockCorruptedError =>
    new LockCorruptedError(`Lock object "${key}" is not a valid lock record: ${why}. Nothing was written.`, {
      key,
      raw: raw.slice(0, MAX_RECORD_BYTES),
      etag,
      cause,
    })

  if (Buffer.byteLength(raw) > MAX_RECORD_BYTES) throw corrupted(`larger than ${MAX_RECORD_BYTES} bytes`)
  let parsed: unknown
  try {
    parsed = JSON.parse(raw)
  } catch (error) {
    throw corrupted('not JSON', error)
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed))
    throw corrupted('not a JSON object')
  const record = parsed as Record<string, unknown>

  if (record.v !== RECORD_VERSION)
    throw corrupted(`"v" is ${JSON.stringify(record.v)}, expected ${RECORD_VERSION}`)
  const { token, expires_at, owner } = record
  if (!Number.isSafeInteger(token) || (token as number) < 0)
    throw corrupted(`"token" must be a non-negative safe integer, got ${JSON.stringify(token)}`)
  if (!isFiniteNonNegative(expires_at))
    throw corrupted(`"expires_at" must be a non-negative number, got ${JSON.stringify(expires_at)}`)
  if (typeof owner !== 'string') throw corrupted(`"owner" must be a string, got ${JSON.stringify(owner)}`)
  for (const [field, isValid] of Object.entries(optionalChecks)) {
    if (field in record && !isValid(record[field])) throw corrupted(`"${field}" has a wrong type`)
  }
  return record as LockRecord
}

export function serializeRecord(record: LockRecord): string {
  return JSON.stringify(record)
}

/** The largest `state` a checkpoint may store, leaving room for the record's own fields. */
export const MAX_STATE_BYTES = MAX_RECORD_BYTES - 4 * 1024
