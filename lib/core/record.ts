import { LockCorruptedError } from './errors.js'

/** A JSON value, as stored in `state` (checkpoints). */
export type JsonValue = string | number | boolean | null | JsonValue[] | { [key: string]: JsonValue }

/** The one record format version this library writes and understands. */
export const RECORD_VERSION = 1

/** A lock object larger than this is not a lock record (and reading it would cost memory). */
export const MAX_RECORD_BYTES = 64 * 1024

/**
 * Objects and arrays may nest this many levels deep in a record, the record itself being the
 * first: a deeper one could not be written back (JSON.stringify recurses) and is refused.
 */
export const MAX_RECORD_DEPTH = 100

/**
 * The lock object as stored, field names as on the wire. Fields this version does not know
 * are kept as they are when the record is rewritten, so a newer writer's data survives.
 */
export interface LockRecord {
  readonly v: typeof RECORD_VERSION
  /**
   * Fencing token, kept by renew and release: each acquisition writes one above every token
   * handed out before, the store's clock in ms or one more than the last, whichever is larger.
   */
  readonly token: number
  /** How many times the lock was acquired (a count for people: tokens do not go up by one). */
  readonly run?: number
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
  /** The checkpoint of work not finished yet, for the holder that resumes it; cleared when a run completes. */
  readonly state?: JsonValue
  /** Where the work stands across runs (e.g. the last item processed), kept until a holder replaces it. */
  readonly cursor?: JsonValue
  readonly [field: string]: unknown
}

const isFiniteNonNegative = (value: unknown): value is number =>
  Number.isFinite(value) && (value as number) >= 0

const optionalChecks: Record<string, (value: unknown) => boolean> = {
  run: (value) => Number.isSafeInteger(value) && (value as number) >= 0,
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
  if (nestingDepth(parsed, MAX_RECORD_DEPTH) > MAX_RECORD_DEPTH)
    throw corrupted(`nested more than ${MAX_RECORD_DEPTH} levels deep`)
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

/**
 * The run count an acquisition writes over `record`. Starts again at 1 past the largest safe
 * integer: it only counts, nothing relies on it going up.
 */
export function nextRun(record: LockRecord | undefined): number {
  const run = record?.run ?? 0
  return run >= Number.MAX_SAFE_INTEGER ? 1 : run + 1
}

/**
 * How many levels of objects and arrays `value` nests (a scalar: 0), counted without recursion
 * so that no input can overflow the stack; stops counting once past `limit`.
 */
export function nestingDepth(value: unknown, limit: number): number {
  let deepest = 0
  const pending: [unknown, number][] = [[value, 1]]
  for (let next = pending.pop(); next !== undefined; next = pending.pop()) {
    const [item, depth] = next
    if (typeof item !== 'object' || item === null) continue
    deepest = Math.max(deepest, depth)
    if (deepest > limit) return deepest
    for (const child of Object.values(item)) pending.push([child, depth + 1])
  }
  return deepest
}

export function serializeRecord(record: LockRecord): string {
  return JSON.stringify(record)
}

/** The largest `state` a checkpoint may store, leaving room for the record's own fields. */
export const MAX_STATE_BYTES = MAX_RECORD_BYTES - 4 * 1024
