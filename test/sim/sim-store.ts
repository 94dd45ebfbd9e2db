import { createHash } from 'node:crypto'
import { LockStoreError } from '../../lib/core/errors.js'
import {
  type LockStore,
  type ReadResult,
  ReadStatus,
  type StoreCallOptions,
  type WriteResult,
  WriteStatus,
} from '../../lib/core/store.js'
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
  /** A broken store that applies every conditional write (to show the oracle catches it). */
  readonly ignoreConditions?: boolean
  /**
   * dynalite's answer shape, as the DynamoDB store met it before it learned to compare maps
   * leaf by leaf: a replace over a record holding a map or a list (`running`, `history`, `state`)
   * fails its condition although nothing changed. The library cannot work on such an engine; it
   * must say so, never fail silently.
   */
  readonly mapsNeverEqual?: boolean
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
}

/** One write the store applied, for the oracle. */
export interface AppliedWrite {
  readonly at: number
  readonly by: string
  readonly kind: 'create' | 'replace' | 'delete' | 'write-back'
  readonly body: string | undefined
  readonly etag: string | undefined
  /** When its answer reached the writer (undefined while on its way, or lost). */
  answeredAt?: number
}

/** Far more writes over one version than callers retrying their calls make (a spin sends one per round trip). */
const SPIN_LIMIT = 25
const SPIN_WINDOW_MS = 2_000
const LATENCY_MS = 15
const SLOW_MS = 1_500
/** What an SDK request timeout would be: a lost request or answer is known only then. */
const TIMEOUT_MS = 2_000

/**
 * The store, as one object at the store's side (true time is its clock, its `Date` counts whole
 * seconds) and one `LockStore` per process, whose calls cross a network with latency and faults.
 * Every applied write is logged for the oracle.
 */
export class SimStore {
  readonly #objects = new Map<string, { body: string; etag: string }>()
  #version = 0
  readonly log: AppliedWrite[] = []
  /** Processes that wrote over one version again and again while the store contradicted them. */
  readonly spinning = new Set<string>()
  readonly #refusals = new Map<string, number[]>()
  /** Told of each applied write (for the trace). */
  onWrite: (write: AppliedWrite) => void = () => {}
  faults: StoreFaults

  constructor(
    readonly world: World,
    faults: StoreFaults,
  ) {
    this.faults = faults
  }

  /** The `LockStore` that `process` sees. */
  for(process: SimProcess): LockStore {
    const call = <T extends object>(
      options: StoreCallOptions | undefined,
      kind: 'read' | 'write',
      apply: () => T,
    ) => this.#call(process, options, kind, apply)
    return {
      clockResolutionMs: 1_000,
      read: (key, options) => call(options, 'read', () => this.#read(key)),
      create: (key, body, options) => call(options, 'write', () => this.#create(process, key, body)),
      replace: (key, body, etag, options) =>
        call(options, 'write', () => this.#replace(process, key, body, etag)),
      probeDate: async (_key, options) =>
        (await call<{ serverDate?: number }>(options, 'read', () => ({}))).serverDate,
    }
  }

  /** The object as stored, for the oracle and for outside writers. */
  peek(key: string): { body: string; etag: string } | undefined {
    return this.#objects.get(key)
  }

  /** An outside writer deletes the object. */
  delete(key: string): void {
    this.#objects.delete(key)
    this.#logged({ at: this.world.now, by: 'outside', kind: 'delete', body: undefined, etag: undefined })
  }

  /** An outside writer puts an old body back (a restore from a backup or a version). */
  writeBack(key: string, body: string): void {
    const etag = this.#put(key, body)
    this.#logged({ at: this.world.now, by: 'outside', kind: 'write-back', body, etag })
  }

  #logged(write: AppliedWrite): void {
    this.log.push(write)
    this.onWrite(write)
  }

  #call<T extends object>(
    process: SimProcess,
    options: StoreCallOptions | undefined,
    kind: 'read' | 'write',
    apply: () => T,
  ): Promise<T> {
    const { world } = this
    const random = world.random
    const faults = this.faults
    const latency = () => random.int(1, random.chance(faults.slow) ? SLOW_MS : LATENCY_MS)
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
        if (random.chance(faults.lostRequest)) {
          answer(TIMEOUT_MS, () => reject(timeout('request lost')))
          return
        }
        if (random.chance(faults.unavailable)) {
          answer(latency(), () => reject(timeout('503 SlowDown')))
          return
        }
        if (kind === 'write' && random.chance(faults.conflict)) {
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
        answer(latency(), () => {
          if (applied) applied.answeredAt = world.now
          resolve({ ...result, ...date })
        })
      })
    })
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

  #put(key: string, body: string): string {
    const etag = this.faults.etagIsDigest
      ? createHash('md5').update(body).digest('hex')
      : `v${++this.#version}`
    this.#objects.set(key, { body, etag })
    return etag
  }

  #date(): { serverDate: number } {
    return { serverDate: this.world.now - (this.world.now % 1_000) }
  }
}
