/** A JSON value, as stored in `state` (checkpoints). */
export type JsonValue = string | number | boolean | null | JsonValue[] | { [key: string]: JsonValue }

/**
 * The record format version this library writes for a record that is not paused: readers of
 * every release understand it, and keep the fields they do not know when they rewrite it.
 */
export const RECORD_VERSION = 1

/**
 * The record format version of a paused record (one with `paused`). Readers before pausing
 * existed (1.0) refuse it, as they refuse every version they do not know, rather than run a
 * paused job or write over its pause; `resume` writes version 1 again. This release reads both.
 */
export const PAUSED_RECORD_VERSION = 2

/** Who paused a job, when and why (`LockRecord.paused`). */
export interface PauseRecord {
  /** An operator (`lambda-singleton pause`), or the job's own run after failed runs (`pauseAfterFailures`). */
  readonly by: string
  /** Seconds since the Unix epoch when it was paused. */
  readonly at: number
  /** Why, as given with the pause. */
  readonly note?: string
}

/**
 * The schedule control fields: the ones an operator may change under a live lease without
 * ending it (pause, resume), named once here for every write, rebase and reset of them.
 */
export const OPERATOR_FIELDS = ['paused', 'failures', 'failed_run'] as const
export type OperatorField = (typeof OPERATOR_FIELDS)[number]

/**
 * The field the run recorder keeps (`LockOptions.recordRun`): its own writer's, so no holder's
 * write sets it, and the first to give way when a record outgrows its size (`withinRecordSize`).
 */
export const RUN_LOG_FIELD = 'history'

/**
 * What `reset` keeps of the record it repairs: the operator's decision about the job (a pause),
 * which is not part of what reset repairs. Nothing when there is none, or no valid record.
 */
export function keptByReset(record: LockRecord | undefined): Pick<LockRecord, 'paused'> {
  return record?.paused === undefined ? {} : { paused: record.paused }
}

/**
 * The run that holds the lock, as its acquisition wrote it (`LockRecord.running`): its token and
 * the tick it runs for. Trusted only while `token` is the record's own: a writer that does not
 * know the field (an older release) keeps it as it is when it takes the lock with a new token.
 */
export interface RunningRecord {
  readonly token: number
  readonly tick: string
  /**
   * The holder reads the record at least this often (ms) while it runs, and stops when it finds
   * itself replaced: only such a run may be replaced (`onHeld: 'replace'`), since one that never
   * looks would run on beside its replacement to its end.
   */
  readonly watch_ms?: number
}

/** The run a newer tick's run replaced (`LockRecord.replaced`), so that the replaced run can tell. */
export interface ReplacedRecord {
  /** The replaced run's fencing token. */
  readonly token: number
  readonly owner: string
  /** The tick it ran for, when its record said. */
  readonly tick?: string
  /** Seconds since the Unix epoch, by the store's clock, when it was replaced. */
  readonly at: number
}

/**
 * The lease an operator ended on purpose (`LockRecord.ended_by`): by `forceRelease`, or by `pause`
 * with `now`. Kept until the next such write (acquisitions and holders' writes keep it), so that
 * the ended run can tell it was an operator, and the operator, after a lost answer, that its own
 * write landed even when a run wrote after it.
 */
export interface EndedByOperatorRecord {
  /** The ended lease's fencing token. */
  readonly token: number
  /** Who held it. */
  readonly owner: string
  /** The operator. */
  readonly by: string
  /** `force-release` or `pause`; a newer writer may add others. */
  readonly action: string
  /** Seconds since the Unix epoch, by the store's clock, when it was ended. */
  readonly at: number
}

/** The record's own top-level fields, those this version writes or reads, in the order they matter. */
export const RECORD_FIELDS = [
  'v',
  'token',
  'expires_at',
  'owner',
  'run',
  'acquired_at',
  'ttl_ms',
  'last_run',
  'paused',
  'ended_by',
  'running',
  'replaced',
  'failures',
  'failed_run',
  'state',
  'cursor',
  'history',
] as const satisfies readonly KnownField[]

/** The named fields of `LockRecord`, its index signature aside. */
type KnownField = keyof { [K in keyof LockRecord as string extends K ? never : K]: true }
/** Fails to compile when `LockRecord` gains a field that `RECORD_FIELDS` does not list. */
const everyFieldListed: Exclude<KnownField, (typeof RECORD_FIELDS)[number]> extends never ? true : never =
  true
void everyFieldListed

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
  /** 1, or 2 while paused (`PAUSED_RECORD_VERSION`): written from `paused`, whatever the object says. */
  readonly v: typeof RECORD_VERSION | typeof PAUSED_RECORD_VERSION
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
  /** Set while the job is paused: its runs skip until it is resumed. Makes the record version 2. */
  readonly paused?: PauseRecord
  /** Failed runs in a row, the last of them being run number `failed_run`; a completed run clears both. */
  readonly failures?: number
  /** The `run` of the last failed run counted in `failures`. */
  readonly failed_run?: number
  /** The last runs, oldest first (newest last), written by the holders' own writes (`HistoryEntry`). */
  readonly history?: readonly HistoryEntry[]
  /** The tick the holder runs for, while it holds the lock: what `onHeld: 'replace'` compares. */
  readonly running?: RunningRecord
  /** The last run replaced by a newer tick's run; kept until the next replacement. */
  readonly replaced?: ReplacedRecord
  /** The last lease an operator ended (force-release, pause with `now`); kept until the next one. */
  readonly ended_by?: EndedByOperatorRecord
  readonly [field: string]: unknown
}

/** How a run recorded in `LockRecord.history` ended. */
export const RunOutcome = {
  /** Its release said it completed (the handler returned). */
  Completed: 'completed',
  /** Its release said it failed (the handler threw). */
  Failed: 'failed',
  /** Its lease ran out unrenewed; it freed the record itself, nobody having taken over. */
  Lost: 'lost',
  /** It never released: the next acquisition took over its expired lease and recorded it. */
  Abandoned: 'abandoned',
  /** A run of a newer tick took the lock from it while it ran (`onHeld: 'replace'`), and recorded it. */
  Replaced: 'replaced',
} as const
/** How a run recorded in `LockRecord.history` ended (`RunOutcome`). */
export type RunOutcome = (typeof RunOutcome)[keyof typeof RunOutcome]

/** One run in `LockRecord.history`. Times in seconds since the Unix epoch, by the store's clock. */
export interface HistoryEntry {
  /** The run's fencing token. */
  readonly token: number
  /** The tick it ran for, when known (for `abandoned` and `replaced`, when its acquisition wrote `running`). */
  readonly tick?: string
  /** Who ran it. */
  readonly owner: string
  /** When it took the lock (`acquired_at`). */
  readonly started: number
  /** When it released; for `abandoned`, when its lease expired (`expires_at`). */
  readonly ended: number
  /** `completed`, `failed`, `lost`, `abandoned` or `replaced`; a newer writer may add others. */
  readonly outcome: RunOutcome | (string & {})
  readonly [field: string]: unknown
}

/**
 * `record` with the oldest history entries dropped, down to none, until it is at most `limit`
 * bytes as stored; the same record when it fits. Every holder's write goes through it, so history
 * never makes a write too large that would fit without it, and never costs a checkpoint or a
 * cursor its place: a record too large without any history is left to be refused as it is.
 */
export function withinRecordSize(record: LockRecord, limit: number = MAX_RECORD_BYTES): LockRecord {
  const { history, ...without } = record
  if (history === undefined || history.length === 0) return record
  // Sizes added up rather than the record serialized once per dropped entry: a near-full record
  // is 64 KiB of JSON, and it may carry 100 entries.
  const sizes = history.map((entry) => Buffer.byteLength(JSON.stringify(entry)))
  let size =
    Buffer.byteLength(serializeRecord(without as LockRecord)) +
    ',"history":[]'.length +
    sizes.reduce((sum, entrySize) => sum + entrySize + 1, -1)
  let dropped = 0
  while (dropped < history.length && size > limit) {
    size -= (sizes[dropped] ?? 0) + 1
    dropped++
  }
  if (dropped === 0) return record
  return (
    dropped === history.length ? without : { ...without, history: history.slice(dropped) }
  ) as LockRecord
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

/**
 * The record as stored. Its version follows from what it carries: 2 while paused, so that a
 * reader that does not know pausing refuses it; 1 otherwise, so that every reader may rewrite it.
 * One record has one spelling, however it was built: its own fields in `RECORD_FIELDS` order,
 * then the others by name, and every map's by name. A store that keeps fields rather than bytes
 * (DynamoDB's) reads that spelling back from the fields alone, so it need not keep the text too,
 * and the core still knows its own write by its bytes.
 */
export function serializeRecord(record: LockRecord): string {
  const v = record.paused === undefined ? RECORD_VERSION : PAUSED_RECORD_VERSION
  return recordJson({ ...record, v })
}

/**
 * `fields` spelled as `serializeRecord` spells a record, its version as it is: a store that
 * keeps fields rather than bytes can tell by it whether a body is in that one spelling.
 */
export function recordJson(fields: { readonly [name: string]: unknown }): string {
  return JSON.stringify(inOrder(fields, RECORD_FIELDS))
}

/**
 * The names of `map` in the order a record is spelled in: `first`'s (those present) first, then
 * the others by name. A store that keeps fields rather than bytes lists them so to read a record
 * back as the core wrote it.
 */
export function namesInOrder(map: object, first: readonly string[] = []): string[] {
  const rest = Object.keys(map)
    .filter((name) => !first.includes(name))
    .sort()
  return [...first.filter((name) => Object.hasOwn(map, name)), ...rest]
}

/** `map` with its names as `namesInOrder` lists them; maps within by name. */
function inOrder(map: { readonly [name: string]: unknown }, first: readonly string[] = []): object {
  const names = namesInOrder(map, first)
  // fromEntries, not assignment: a field named "__proto__" must stay a field.
  return Object.fromEntries(names.map((name) => [name, valueInOrder(map[name])]))
}

function valueInOrder(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(valueInOrder)
  if (typeof value === 'object' && value !== null) return inOrder(value as { [name: string]: unknown })
  return value
}

/**
 * `record` with `fields` set, or (`null`) removed; `undefined` leaves one as it is. Its version
 * follows, as `serializeRecord` writes it. Checks nothing: its callers write only fields they own.
 */
export function withFields(record: LockRecord, fields: { readonly [field: string]: unknown }): LockRecord {
  const next: Record<string, unknown> = { ...record }
  for (const [field, value] of Object.entries(fields)) {
    if (value === null) delete next[field]
    else if (value !== undefined) next[field] = value
  }
  next.v = next.paused === undefined ? RECORD_VERSION : PAUSED_RECORD_VERSION
  return next as LockRecord
}

/**
 * A holder's write `next`, meant to replace `base` (what it last wrote), made to replace
 * `current` instead, when `current` is `base` with only operator fields changed (paused or
 * resumed meanwhile): those changes carried over, the rest as the holder meant it. `undefined`
 * when anything else changed: then someone else holds, or held, the lock.
 */
export function rebaseOnOperatorWrite(
  base: LockRecord,
  current: LockRecord,
  next: LockRecord,
): LockRecord | undefined {
  const rest = (record: LockRecord) => {
    const others: Record<string, unknown> = { ...record }
    for (const field of ['v', ...OPERATOR_FIELDS]) delete others[field]
    return canonicalJson(others)
  }
  if (rest(base) !== rest(current)) return undefined
  const changed: Record<string, unknown> = {}
  for (const field of OPERATOR_FIELDS) {
    if (canonicalJson(base[field]) !== canonicalJson(current[field])) changed[field] = current[field] ?? null
  }
  return withFields(next, changed)
}

/** A value as JSON with every map's names by name, so equal values compare equal however built. */
export function canonicalJson(value: unknown): string {
  return JSON.stringify(valueInOrder(value)) ?? 'undefined'
}

/** The largest `state` a checkpoint may store, leaving room for the record's own fields. */
export const MAX_STATE_BYTES = MAX_RECORD_BYTES - 4 * 1024
