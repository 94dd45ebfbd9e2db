import { Lock } from '../core/lock.js'
import type { LockOptions } from '../core/lock-options.js'
import type { LockStore } from '../core/store.js'

/** Locks kept per lifecycle (per key), so warm invocations re-acquire with one request. */
export const MAX_CACHED_LOCKS = 256

/**
 * A lifecycle's locks, one per key, kept across invocations: a warm invocation's lock knows its
 * last write, so it re-acquires with one request. At most `MAX_CACHED_LOCKS`, the least recently
 * used forgotten first; a lock in use (`use` … `doneWith`) is never forgotten.
 */
export class LockCache {
  readonly #locks = new Map<string, Lock>()
  /** Invocations using each key's lock now: acquiring it, or running under it until released. */
  readonly #using = new Map<string, number>()
  readonly #storeOf: () => Promise<LockStore>
  readonly #options: Omit<LockOptions, 'store' | 'key'>

  /** `storeOf` is asked for the store each time a lock is made (it may fail, and later succeed). */
  constructor(storeOf: () => Promise<LockStore>, options: Omit<LockOptions, 'store' | 'key'>) {
    this.#storeOf = storeOf
    this.#options = options
  }

  /** `key`'s lock: the one kept, else a new one on the store. */
  async lockFor(key: string): Promise<Lock> {
    const kept = this.#locks.get(key)
    if (kept) {
      // The most recently used last: the first one in the map is the one to forget.
      this.#locks.delete(key)
      this.#locks.set(key, kept)
      return kept
    }
    const store = await this.#storeOf()
    // Another call (INIT's read ahead, an invocation) may have made it meanwhile: one lock per key.
    const made = this.#locks.get(key)
    if (made) return made
    if (this.#locks.size >= MAX_CACHED_LOCKS) this.#forgetOne()
    const lock = new Lock({ ...this.#options, store, key })
    this.#locks.set(key, lock)
    return lock
  }

  /** One more invocation uses `key`'s lock: acquiring it, or running under it until released. */
  use(key: string): void {
    this.#using.set(key, (this.#using.get(key) ?? 0) + 1)
  }

  /** An invocation `use` counted is done with `key`'s lock: once per `use`. */
  doneWith(key: string): void {
    const left = (this.#using.get(key) ?? 1) - 1
    if (left > 0) this.#using.set(key, left)
    else this.#using.delete(key)
  }

  /**
   * Forgets the least recently used lock no invocation uses now. One in use is never forgotten:
   * its owner's calls take turns in it, and a second delivery of a running request given a new
   * lock would find its own owner's live lease and take it over as a crashed run's.
   */
  #forgetOne(): void {
    for (const key of this.#locks.keys()) {
      if (!this.#using.has(key)) {
        this.#locks.delete(key)
        return
      }
    }
  }
}
