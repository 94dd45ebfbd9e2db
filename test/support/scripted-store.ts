import { LockStoreError } from '../../lib/core/errors.js'
import {
  type LockStore,
  type ReadResult,
  ReadStatus,
  type StoreCallOptions,
  type WriteResult,
  WriteStatus,
} from '../../lib/core/store.js'
import { MemoryLockStore, type MemoryLockStoreOptions } from '../../lib/memory/index.js'

type Call = 'read' | 'create' | 'replace'

/**
 * What the store does on one call, instead of simply answering (`ok`):
 * - `transient`: fails with a retryable `LockStoreError` (a 503), touching nothing
 * - `fatal`: fails with a non-retryable `LockStoreError` (a 403 on a write)
 * - `conflict`: answers 409 ConditionalRequestConflict, touching nothing
 * - `answer-lost`: the write lands, then its answer is lost (a retryable failure)
 * - `ambiguous`: the write lands, and the store, having retried it itself, answers 412 flagged ambiguous
 * - `precondition-failed`: answers 412, touching nothing (Ceph's answer to If-Match on a missing object)
 * - `denied`: a read that answers "absent, unconfirmed" (S3's 403 to a reader who may not list)
 * - a function: runs first (another process writing in between, time passing), then the call
 *   goes on as the step it returns, or is answered normally
 */
export type Step =
  | 'ok'
  | 'transient'
  | 'fatal'
  | 'conflict'
  | 'answer-lost'
  | 'ambiguous'
  | 'precondition-failed'
  | 'denied'
  | ((memory: MemoryLockStore) => Step | undefined | Promise<Step | undefined>)

/**
 * An in-memory store whose next calls can be scripted to fail, conflict or lose their answers,
 * as S3 and DynamoDB do under faults and races. Unscripted calls are answered normally.
 */
export class ScriptedStore implements LockStore {
  readonly memory: MemoryLockStore
  readonly clockResolutionMs: number
  /** Every call made, in order. */
  readonly calls: Call[] = []
  /** The abort signal each call was given, in order. */
  readonly signals: (AbortSignal | undefined)[] = []
  readonly #steps: Record<Call, Step[]> = { read: [], create: [], replace: [] }

  constructor(options: MemoryLockStoreOptions = {}) {
    this.memory = new MemoryLockStore({ clockResolutionMs: 1_000, ...options })
    this.clockResolutionMs = this.memory.clockResolutionMs
  }

  /** Queues what the next calls of this kind do, one step per call. */
  script(call: Call, ...steps: Step[]): this {
    this.#steps[call].push(...steps)
    return this
  }

  count(call: Call): number {
    return this.calls.filter((c) => c === call).length
  }

  read(key: string, options?: StoreCallOptions): Promise<ReadResult> {
    return this.#call('read', options, () => this.memory.read(key, options))
  }

  create(key: string, body: string, options?: StoreCallOptions): Promise<WriteResult> {
    return this.#call('create', options, () => this.memory.create(key, body, options))
  }

  replace(key: string, body: string, etag: string, options?: StoreCallOptions): Promise<WriteResult> {
    return this.#call('replace', options, () => this.memory.replace(key, body, etag, options))
  }

  /** Clock probes are answered, never scripted, and not counted among the protocol's calls. */
  probeDate(key: string, options?: StoreCallOptions): Promise<number | undefined> {
    return this.memory.probeDate(key, options)
  }

  async #call<T extends ReadResult | WriteResult>(
    call: Call,
    options: StoreCallOptions | undefined,
    answer: () => Promise<T>,
  ): Promise<T> {
    this.calls.push(call)
    this.signals.push(options?.signal)
    let step = this.#steps[call].shift()
    while (typeof step === 'function') step = await step(this.memory)
    switch (step) {
      case undefined:
      case 'ok':
        return answer()
      case 'transient':
        throw new LockStoreError(`injected 503 on ${call}`, { retryable: true })
      case 'fatal':
        throw new LockStoreError(`injected 403 on ${call}`, { retryable: false })
      // Answers the engine gives carry its date, like any other.
      case 'conflict':
        return { status: WriteStatus.Conflict, ...this.memory.dateNow() } as T
      case 'precondition-failed':
        return { status: WriteStatus.PreconditionFailed, ...this.memory.dateNow() } as T
      case 'denied':
        return { status: ReadStatus.Absent, unconfirmed: true, ...this.memory.dateNow() } as T
      case 'answer-lost':
        await answer()
        throw new LockStoreError(`injected connection reset after ${call}`, { retryable: true })
      case 'ambiguous': {
        const result = (await answer()) as WriteResult
        return (
          result.status === WriteStatus.Written
            ? { status: WriteStatus.PreconditionFailed, ambiguous: true, ...this.memory.dateNow() }
            : result
        ) as T
      }
    }
  }
}
