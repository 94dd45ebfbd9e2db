import { createHash } from 'node:crypto'
import { LockStoreError } from '../../lib/core/errors.js'
import { canonicalJson } from '../../lib/core/record.js'
import {
  type LockStore,
  type ReadResult,
  ReadStatus,
  type StoreCallOptions,
  type TakeRequest,
  type TakeResult,
  TakeStatus,
  type WriteResult,
  WriteStatus,
} from '../../lib/core/store.js'
import type { Attributes } from '../../lib/dynamodb/attributes.js'
import { itemFor, readItem } from '../../lib/dynamodb/item.js'
import { takenItem, takeUpdate } from '../../lib/dynamodb/take.js'
import type { SimProcess, World } from './world.js'

/** How often each fault strikes a request, and the engine's answer shapes. */
export interface StoreFaults {
  /** The request never reaches the store: the caller times out. */
  readonly lostRequest: number
  /** The store applies the request, and the answer is lost: the caller times out. */
  readonly lostAnswer: number
  /** 503 SlowDown: not applied, answered at once. */
  readonly unavailable: number
  /** 409 ConditionalRequestConflict on a conditional write: not applied. */
  readonly conflict: number
  /** An answer without a `Date`. */
  readonly missingDate: number
  /** A slow answer: latency up to `slowMs` instead of `latencyMs`. */
  readonly slow: number
  /** Ceph answers If-Match on a missing object with 412 instead of 404. */
  readonly absentAsPreconditionFailed: boolean
  /**
   * Etags are the MD5 of the body, as S3's are (identical bytes, identical etag); otherwise each
   * write gets a new version, as DynamoDB's store makes it.
   */
  readonly etagIsDigest: boolean
  /**
   * A broken store that applies every conditional write (to show the oracle catches it). A
   * `take` then writes over any record it can raise the token of (a number), whatever it holds.
   */
  readonly ignoreConditions?: boolean
  /**
   * dynalite's answer shape, as the DynamoDB store met it before it learned to compare maps
   * leaf by leaf: a replace over a record holding a map or a list (`running`, `history`, `state`)
   * fails its condition although nothing changed. The library cannot work on such an engine; it
   * must say so, never fail silently. A `take` compares no map (its condition names scalars
   * only), so it is not refused.
   */
  readonly mapsNeverEqual?: boolean
  /**
   * A host cut off from the store: a request that meets this fault is lost, and so is every
   * request of its process for up to `PARTITION_MS` after it, as a host whose network fails for a
   * while. As an adversary would, the network cuts off more often (`PARTITION_AFTER_TAKE`) a
   * process that has just taken the lock before any answer dated the store's clock for it (a
   * new host, whose take stamped its lease by its own clock): its lease's raise then does not
   * land, however often it is tried, and the lease runs on the term the take wrote.
   */
  readonly partition?: number
}

export const NO_FAULTS: StoreFaults = {
  lostRequest: 0,
  lostAnswer: 0,
  unavailable: 0,
  conflict: 0,
  missingDate: 0,
  slow: 0,
  absentAsPreconditionFailed: false,
  etagIsDigest: true,
  partition: 0,
}

/** One write the store applied, for the oracle. */
export interface AppliedWrite {
  readonly at: number
  readonly by: string
  readonly kind: 'create' | 'replace' | 'take' | 'delete' | 'write-back'
  readonly body: string | undefined
  readonly etag: string | undefined
  /** When its answer reached the writer (undefined while on its way, or lost). */
  answeredAt?: number
}

/** The item layout of a DynamoDB-like store's items (`lib/dynamodb/item.ts`), its key attribute the default. */
const LAYOUT = { partitionKey: 'pk' } as const

/** A take's record version, and the run past which it reads instead (`lib/dynamodb/take.ts`). */
const TAKEN_RECORD_VERSION = 1
const RUN_CEILING = Number.MAX_SAFE_INTEGER

/** Far more writes over one version than callers retrying their calls make (a spin sends one per round trip). */
const SPIN_LIMIT = 25
const SPIN_WINDOW_MS = 2_000
const LATENCY_MS = 15
const SLOW_MS = 1_500
/** What an SDK request timeout would be: a lost request or answer is known only then. */
const TIMEOUT_MS = 2_000
/** The longest a partition (`StoreFaults.partition`) cuts a process off. */
const PARTITION_MS = 60_000
/** In a world with partitions, the chance that one starts at the request after a process's take. */
const PARTITION_AFTER_TAKE = 1

/**
 * The store, as one object at the store's side (true time is its clock, its `Date` counts whole
 * seconds) and one `LockStore` per process, whose calls cross a network with latency and faults.
 * Every applied write is logged for the oracle.
 */
export class SimStore {
  readonly #objects = new Map<string, { body: string; etag: string }>()
  /**
   * A DynamoDB-like store's items, as `lib/dynamodb` maps bodies onto them (`itemFor`, and
   * `takeUpdate` with `takenItem` for a take): each object's body is what `readItem` reads of its
   * item, so every world drives the real mapping with the core's bodies.
   */
  readonly #items = new Map<string, Attributes>()
  /** Bodies the item mapping did not read back as written, or takes it made otherwise than the model (I4). */
  readonly misread: string[] = []
  #version = 0
  readonly log: AppliedWrite[] = []
  /** Processes that wrote over one version again and again while the store contradicted them. */
  readonly spinning = new Set<string>()
  readonly #refusals = new Map<string, number[]>()
  /** Told of each applied write (for the trace). */
  onWrite: (write: AppliedWrite) => void = () => {}
  faults: StoreFaults
  /** Until when (true time) each partitioned process is cut off. */
  readonly #partitioned = new WeakMap<SimProcess, number>()
  /** Processes whose last request was a take, sent before any answer had dated the store's clock for them. */
  readonly #justTook = new WeakSet<SimProcess>()
  /** Processes that were sent a dated answer. */
  readonly #dated = new WeakSet<SimProcess>()

  constructor(
    readonly world: World,
    faults: StoreFaults,
  ) {
    this.faults = faults
  }

  /**
   * The `LockStore` that `process` sees. A DynamoDB-like store (etags not digests) can also
   * `take` in one request, as an UpdateItem does; an S3-like one cannot (S3 has no partial
   * update), and its worlds draw exactly what they drew before `take` existed.
   */
  for(process: SimProcess): LockStore {
    const call = <T extends object>(
      options: StoreCallOptions | undefined,
      kind: Kind,
      apply: () => T,
      dated?: Dated<T>,
    ) => this.#call(process, options, kind, apply, dated)
    return {
      clockResolutionMs: 1_000,
      read: (key, options) => call(options, 'read', () => this.#read(key)),
      create: (key, body, options) => call(options, 'write', () => this.#create(process, key, body)),
      replace: (key, body, etag, options) =>
        call(options, 'write', () => this.#replace(process, key, body, etag)),
      probeDate: async (_key, options) =>
        (await call<{ serverDate?: number }>(options, 'read', () => ({}))).serverDate,
      ...(!this.faults.etagIsDigest && {
        take: (key: string, take: TakeRequest, options?: StoreCallOptions) =>
          call<TakeResult>(options, 'take', () => this.#take(process, key, take), takeDated),
      }),
    }
  }

  /** The object as stored, for the oracle and for outside writers. */
  peek(key: string): { body: string; etag: string } | undefined {
    return this.#objects.get(key)
  }

  /** An outside writer deletes the object. */
  delete(key: string): void {
    this.#objects.delete(key)
    this.#items.delete(key)
    this.#logged({ at: this.world.now, by: 'outside', kind: 'delete', body: undefined, etag: undefined })
  }

  /** An outside writer puts an old body back (a restore from a backup or a version). */
  writeBack(key: string, body: string): void {
    const etag = this.#put(key, body, 'outside')
    this.#logged({ at: this.world.now, by: 'outside', kind: 'write-back', body, etag })
  }

  #logged(write: AppliedWrite): void {
    this.log.push(write)
    this.onWrite(write)
  }

  /**
   * One request across the network. A take meets the same faults as a write; a conflict
   * (DynamoDB's TransactionConflict) fails it as a retryable error, as the DynamoDB store does,
   * since a take has no `conflict` answer.
   */
  #call<T extends object>(
    process: SimProcess,
    options: StoreCallOptions | undefined,
    kind: Kind,
    apply: () => T,
    dated: Dated<T> = (result, date) => ({ ...result, ...date }),
  ): Promise<T> {
    const { world } = this
    const random = world.random
    const faults = this.faults
    const latency = () => random.int(1, random.chance(faults.slow) ? SLOW_MS : LATENCY_MS)
    // A take sent before any dated answer stamps its lease by the process's own clock.
    const blind = kind === 'take' && !this.#dated.has(process)
    return new Promise((resolve, reject) => {
      const signal = options?.signal
      if (signal?.aborted) return reject(signal.reason)
      let settled = false
      const answer = (delay: number, settle: () => void) =>
        world.at(world.now + delay, process, () => {
          if (settled) return
          settled = true
          signal?.removeEventListener('abort', onAbort)
          settle()
        })
      const onAbort = (): void => {
        if (settled) return
        settled = true
        reject(signal?.reason)
      }
      signal?.addEventListener('abort', onAbort, { once: true })
      const timeout = (what: string) =>
        new LockStoreError(`simulated: ${what}`, { key: 'sim', retryable: true })
      world.at(world.now + latency(), undefined, () => {
        if (this.#cutOff(process) || random.chance(faults.lostRequest)) {
          answer(TIMEOUT_MS, () => reject(timeout('request lost')))
          return
        }
        if (random.chance(faults.unavailable)) {
          answer(latency(), () => reject(timeout('503 SlowDown')))
          return
        }
        if (kind !== 'read' && random.chance(faults.conflict)) {
          if (kind === 'take') {
            answer(latency(), () => reject(timeout('TransactionConflict')))
            return
          }
          const date = this.#date()
          answer(latency(), () => resolve({ status: WriteStatus.Conflict, ...date } as unknown as T))
          return
        }
        const logged = this.log.length
        const result = apply()
        const applied = this.log.length > logged ? this.log.at(-1) : undefined
        const date = random.chance(faults.missingDate) ? {} : this.#date()
        if (random.chance(faults.lostAnswer)) {
          answer(TIMEOUT_MS, () => reject(timeout('answer lost')))
          return
        }
        if (blind && applied) this.#justTook.add(process)
        answer(latency(), () => {
          if (applied) applied.answeredAt = world.now
          if ('serverDate' in date) this.#dated.add(process)
          resolve(dated(result, date))
        })
      })
    })
  }

  /** Whether `process` is cut off from the store now, starting a partition when one strikes. */
  #cutOff(process: SimProcess): boolean {
    const { world } = this
    // No draw where the fault is off: the worlds from before it existed run as they did (and
    // the liveness check, which stops the faults, ends every partition).
    if (!this.faults.partition) return false
    if ((this.#partitioned.get(process) ?? 0) > world.now) return true
    const chance = this.#justTook.delete(process) ? PARTITION_AFTER_TAKE : this.faults.partition
    if (!world.random.chance(chance)) return false
    this.#partitioned.set(process, world.now + world.random.int(1, PARTITION_MS))
    return true
  }

  #read(key: string): ReadResult {
    const object = this.#objects.get(key)
    return object ? { status: ReadStatus.Found, ...object } : { status: ReadStatus.Absent }
  }

  #create(process: SimProcess, key: string, body: string): WriteResult {
    if (this.#objects.has(key) && !this.faults.ignoreConditions)
      return { status: WriteStatus.PreconditionFailed }
    const etag = this.#put(key, body)
    this.#logged({ at: this.world.now, by: process.name, kind: 'create', body, etag })
    return { status: WriteStatus.Written, etag }
  }

  #replace(process: SimProcess, key: string, body: string, etag: string): WriteResult {
    const object = this.#objects.get(key)
    if (!object) {
      return this.faults.absentAsPreconditionFailed
        ? { status: WriteStatus.PreconditionFailed }
        : { status: WriteStatus.Absent }
    }
    if (object.etag !== etag && !this.faults.ignoreConditions)
      return { status: WriteStatus.PreconditionFailed }
    if (this.faults.mapsNeverEqual && /"(running|history|state)":/.test(object.body)) {
      this.#contradicted(process, etag)
      return { status: WriteStatus.PreconditionFailed }
    }
    const written = this.#put(key, body)
    this.#logged({ at: this.world.now, by: process.name, kind: 'replace', body, etag: written })
    return { status: WriteStatus.Written, etag: written }
  }

  /**
   * A take, as DynamoDB's UpdateItem of `lib/dynamodb/take.ts` makes it: over a record of version
   * 1, released, not paused, whose token is a number below `tokenBelow` and whose run, if any, a
   * number below `RUN_CEILING`; it sets the lease, raises token and run, removes `running`, keeps
   * the rest. Logged as a replace (the oracle reads its body's token like any write's). Refused,
   * it answers the record as a read would (DynamoDB's ALL_OLD on a failed condition).
   */
  #take(process: SimProcess, key: string, take: TakeRequest): TakeResult {
    const object = this.#objects.get(key)
    const record = object && recordOf(object.body)
    const taken = record && this.#takenRecord(record, take)
    if (!object || !taken) return { status: TakeStatus.NotTaken, current: this.#read(key) }
    const { body, item } = this.#takenItem(key, taken, take)
    const etag = this.#put(key, body, 'library', item)
    this.#logged({ at: this.world.now, by: process.name, kind: 'take', body, etag })
    return { status: TakeStatus.Taken, body, etag, previous: object.body }
  }

  /**
   * The item a take leaves and its body, as the DynamoDB store computes the item from the one
   * before (`takenItem`) and reads it (`readItem`); `taken` is the model's record, which the body
   * must equal. No item (an S3-like store's take is never offered): the model's record.
   */
  #takenItem(
    key: string,
    taken: Record<string, unknown>,
    take: TakeRequest,
  ): { body: string; item?: Attributes } {
    const old = this.#items.get(key)
    if (!old) return { body: JSON.stringify(taken) }
    const item = takenItem(old, takeUpdate(LAYOUT.partitionKey, take))
    const body = readItem(LAYOUT, item).body
    if (canonicalJson(recordOf(body)) !== canonicalJson(taken))
      this.misread.push(`a take wrote ${body} where an UpdateItem writes ${JSON.stringify(taken)}`)
    return { body, item }
  }

  /** What a take makes of `record`, or undefined where its condition fails (or its update could not apply). */
  #takenRecord(record: Record<string, unknown>, take: TakeRequest): Record<string, unknown> | undefined {
    const { running: _running, ...kept } = record
    const { token, run } = kept
    const hasRun = Object.hasOwn(kept, 'run')
    // Even without its condition, an update cannot add one to what is not a number.
    if (typeof token !== 'number' || (hasRun && typeof run !== 'number')) return undefined
    const holds =
      kept.v === TAKEN_RECORD_VERSION &&
      kept.expires_at === 0 &&
      !Object.hasOwn(kept, 'paused') &&
      token < take.tokenBelow &&
      (!hasRun || (run as number) < RUN_CEILING)
    if (!holds && !this.faults.ignoreConditions) return undefined
    return {
      ...kept,
      owner: take.owner,
      expires_at: take.expires_at,
      acquired_at: take.acquired_at,
      ttl_ms: take.ttl_ms,
      token: token + 1,
      run: ((run as number | undefined) ?? 0) + 1,
    }
  }

  /**
   * A write refused although its condition held: the library must name such an engine after one
   * read (I5), not write the same thing again and again until its lease runs out. Calls of one
   * process over one version within `SPIN_WINDOW_MS` are counted.
   */
  #contradicted(process: SimProcess, etag: string): void {
    const key = `${process.name} ${etag}`
    const now = this.world.now
    const recent = (this.#refusals.get(key) ?? []).filter((at) => now - at <= SPIN_WINDOW_MS)
    recent.push(now)
    this.#refusals.set(key, recent)
    if (recent.length > SPIN_LIMIT) this.spinning.add(process.name)
  }

  /** Stores `body` (by a process of the library, or from `outside`; a take's with its `item`) under a new etag. */
  #put(key: string, body: string, by: 'library' | 'outside' = 'library', item?: Attributes): string {
    if (this.faults.etagIsDigest) {
      const etag = createHash('md5').update(body).digest('hex')
      this.#objects.set(key, { body, etag })
      return etag
    }
    const etag = `v${++this.#version}`
    if (item) this.#items.set(key, item)
    this.#objects.set(key, { body: item ? body : this.#mapped(key, body, by), etag })
    return etag
  }

  /**
   * What a DynamoDB-like store's reader finds of `body` once written as an item: the very bytes
   * (guarantees.md, I4), else a misread. A body no item holds (not JSON, say) can come only from
   * outside: an item read as that text (as one holding a set is read), which the library's writes
   * must never make.
   */
  #mapped(key: string, body: string, by: 'library' | 'outside'): string {
    let item: Attributes
    try {
      item = itemFor(LAYOUT, key, body).item
    } catch (error) {
      this.#items.delete(key)
      if (by === 'library') this.misread.push(`wrote ${body}, which no item holds: ${String(error)}`)
      return body
    }
    this.#items.set(key, item)
    const read = readItem(LAYOUT, item).body
    if (read !== body) this.misread.push(`wrote ${body}, read back ${read}`)
    return read
  }

  #date(): { serverDate: number } {
    return { serverDate: this.world.now - (this.world.now % 1_000) }
  }
}

type Kind = 'read' | 'write' | 'take'
/** Puts the answer's date on a result (a refused take's read gets it too). */
type Dated<T> = (result: T, date: { serverDate?: number }) => T

const takeDated: Dated<TakeResult> = (result, date) =>
  result.status === TakeStatus.Taken
    ? { ...result, ...date }
    : { ...result, current: { ...result.current, ...date }, ...date }

/** The record a body holds, or undefined (not JSON, or not an object). */
function recordOf(body: string): Record<string, unknown> | undefined {
  try {
    const record: unknown = JSON.parse(body)
    return typeof record === 'object' && record !== null && !Array.isArray(record)
      ? (record as Record<string, unknown>)
      : undefined
  } catch {
    return undefined
  }
}
