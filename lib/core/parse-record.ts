import { LockCorruptedError } from './errors.js'
import {
  type LockRecord,
  MAX_RECORD_BYTES,
  MAX_RECORD_DEPTH,
  nestingDepth,
  PAUSED_RECORD_VERSION,
  RECORD_VERSION,
} from './record.js'

/*
 * What every reader of a record refuses, in one place: a read (`parseRecord`) and a holder's
 * write (`wrongField`, before anything is sent) check the same things, so nothing this release
 * writes is a record another reader calls corrupted.
 */

const isFiniteNonNegative = (value: unknown): value is number =>
  Number.isFinite(value) && (value as number) >= 0

const optionalChecks: Record<string, (value: unknown) => boolean> = {
  run: isCount,
  acquired_at: isFiniteNonNegative,
  ttl_ms: isFiniteNonNegative,
  last_run: (value) => typeof value === 'string',
  paused: isPauseRecord,
  failures: isCount,
  failed_run: isCount,
  history: isHistory,
  running: isRunningRecord,
  replaced: isReplacedRecord,
  ended_by: isEndedByOperatorRecord,
}

function isEndedByOperatorRecord(value: unknown): boolean {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return false
  const { token, owner, by, action, at } = value as Record<string, unknown>
  return (
    isCount(token) &&
    typeof owner === 'string' &&
    typeof by === 'string' &&
    typeof action === 'string' &&
    isFiniteNonNegative(at)
  )
}

function isRunningRecord(value: unknown): boolean {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return false
  const { token, tick, watch_ms } = value as Record<string, unknown>
  return (
    isCount(token) &&
    typeof tick === 'string' &&
    (watch_ms === undefined || (typeof watch_ms === 'number' && Number.isFinite(watch_ms) && watch_ms > 0))
  )
}

function isReplacedRecord(value: unknown): boolean {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return false
  const { token, owner, tick, at } = value as Record<string, unknown>
  return (
    isCount(token) &&
    typeof owner === 'string' &&
    (tick === undefined || typeof tick === 'string') &&
    isFiniteNonNegative(at)
  )
}

function isHistory(value: unknown): boolean {
  return Array.isArray(value) && value.every(isHistoryEntry)
}

function isHistoryEntry(value: unknown): boolean {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return false
  const { token, tick, owner, started, ended, outcome } = value as Record<string, unknown>
  return (
    isCount(token) &&
    (tick === undefined || typeof tick === 'string') &&
    typeof owner === 'string' &&
    isFiniteNonNegative(started) &&
    isFiniteNonNegative(ended) &&
    typeof outcome === 'string'
  )
}

function isCount(value: unknown): boolean {
  return Number.isSafeInteger(value) && (value as number) >= 0
}

function isPauseRecord(value: unknown): boolean {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return false
  const { by, at, note } = value as Record<string, unknown>
  return typeof by === 'string' && isFiniteNonNegative(at) && (note === undefined || typeof note === 'string')
}

/**
 * Why `record`'s fields are not what every reader takes (the name of the first field of a wrong
 * type), or undefined when they are: checked before a record is written, as on every read.
 */
export function wrongField(record: Readonly<Record<string, unknown>>): string | undefined {
  for (const [field, isValid] of Object.entries(optionalChecks)) {
    if (field in record && !isValid(record[field])) return field
  }
  return undefined
}

/** The versions this release reads. */
const READABLE_VERSIONS: readonly unknown[] = [RECORD_VERSION, PAUSED_RECORD_VERSION]

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

  if (!READABLE_VERSIONS.includes(record.v))
    throw corrupted(`"v" is ${JSON.stringify(record.v)}, expected ${READABLE_VERSIONS.join(' or ')}`)
  const { token, expires_at, owner } = record
  if (!Number.isSafeInteger(token) || (token as number) < 0)
    throw corrupted(`"token" must be a non-negative safe integer, got ${JSON.stringify(token)}`)
  if (!isFiniteNonNegative(expires_at))
    throw corrupted(`"expires_at" must be a non-negative number, got ${JSON.stringify(expires_at)}`)
  if (typeof owner !== 'string') throw corrupted(`"owner" must be a string, got ${JSON.stringify(owner)}`)
  const wrong = wrongField(record)
  if (wrong !== undefined) throw corrupted(`"${wrong}" has a wrong type`)
  return record as LockRecord
}
