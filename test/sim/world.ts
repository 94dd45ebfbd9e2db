import type { Clock } from '../../lib/core/clock.js'

/** A small, fast, seeded PRNG (mulberry32): one seed replays a whole world. */
export class Random {
  #state: number

  constructor(seed: number) {
    this.#state = seed >>> 0
  }

  next(): number {
    this.#state = (this.#state + 0x6d2b79f5) >>> 0
    let t = this.#state
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296
  }

  /** An integer in [min, max]. */
  int(min: number, max: number): number {
    return min + Math.floor(this.next() * (max - min + 1))
  }

  chance(p: number): boolean {
    return this.next() < p
  }

  pick<T>(items: readonly T[]): T {
    return items[Math.floor(this.next() * items.length)] as T
  }
}

interface SimEvent {
  readonly at: number
  readonly seq: number
  readonly process: SimProcess | undefined
  readonly fire: () => void
  cancelled: boolean
}

/**
 * A process of the simulated world: its own clock (offset and drift against true time), and a
 * life that can end (a crash: nothing it awaits ever resumes) or pause (a freeze: nothing it
 * awaits resumes until the thaw, while its clock runs on).
 */
export class SimProcess {
  alive = true
  frozenUntil = 0
  readonly clock: Clock

  constructor(
    readonly world: World,
    readonly name: string,
    readonly offsetMs: number,
    readonly drift: number,
  ) {
    const start = world.now
    const toLocal = (trueTime: number) => trueTime + offsetMs + (trueTime - start) * drift
    const toTrueDelay = (ms: number) => Math.max(0, ms) / (1 + drift)
    this.clock = {
      now: () => toLocal(world.now),
      sleep: (ms, signal) =>
        new Promise<void>((resolve, reject) => {
          if (signal?.aborted) return reject(signal.reason)
          const onAbort = (): void => {
            cancel()
            reject(signal?.reason)
          }
          const cancel = world.at(world.now + toTrueDelay(ms), this, () => {
            signal?.removeEventListener('abort', onAbort)
            resolve()
          })
          signal?.addEventListener('abort', onAbort, { once: true })
        }),
      schedule: (ms, callback) => world.at(world.now + toTrueDelay(ms), this, callback),
    }
  }

  get frozen(): boolean {
    return this.world.now < this.frozenUntil
  }

  readonly #onCrash: (() => void)[] = []

  crash(): void {
    if (!this.alive) return
    this.alive = false
    for (const listener of this.#onCrash) listener()
  }

  /** Calls `listener` when the process crashes: what the kernel does for a dead process (closes its sockets). */
  onCrash(listener: () => void): void {
    this.#onCrash.push(listener)
  }

  freeze(forMs: number): void {
    this.frozenUntil = Math.max(this.frozenUntil, this.world.now + forMs)
  }
}

/**
 * Simulated true time and the events waiting in it. One event fires at a time; between two,
 * every promise callback the last one released runs to completion, and so does the real async
 * work it started outside the world (`outsideBegins`: the AWS SDK's own pipeline, which reads
 * files on its first request), so a schedule depends on nothing but the seed.
 */
export class World {
  now = 1_800_000_000_000
  readonly random: Random
  readonly #queue: SimEvent[] = []
  #seq = 0
  /** Events fired so far. */
  steps = 0
  #outside = 0

  constructor(seed: number) {
    this.random = new Random(seed)
  }

  process(name: string, offsetMs = 0, drift = 0): SimProcess {
    return new SimProcess(this, name, offsetMs, drift)
  }

  /** Runs `fire` at true time `at`, for `process` (dropped once it crashed, deferred while frozen). */
  at(at: number, process: SimProcess | undefined, fire: () => void): () => void {
    const event: SimEvent = { at: Math.max(at, this.now), seq: this.#seq++, process, fire, cancelled: false }
    this.#insert(event)
    return () => {
      event.cancelled = true
    }
  }

  #insert(event: SimEvent): void {
    // Binary search for the first event that fires after this one.
    let lo = 0
    let hi = this.#queue.length
    while (lo < hi) {
      const mid = (lo + hi) >>> 1
      const other = this.#queue[mid] as SimEvent
      if (other.at < event.at || (other.at === event.at && other.seq < event.seq)) lo = mid + 1
      else hi = mid
    }
    this.#queue.splice(lo, 0, event)
  }

  /**
   * Fires events in order until true time `until`, calling `check` after each one (and after the
   * promise callbacks it released). Resolves at `until`, or when nothing is left to fire.
   */
  async runUntil(until: number, check: () => void): Promise<void> {
    await this.#settle()
    for (;;) {
      const event = this.#queue[0]
      if (!event || event.at > until) break
      this.#queue.shift()
      if (event.cancelled) continue
      const { process } = event
      if (process && !process.alive) continue
      this.now = event.at
      if (process?.frozen) {
        this.#insert({ ...event, at: process.frozenUntil, seq: this.#seq++ })
        continue
      }
      this.steps++
      event.fire()
      await this.#settle()
      check()
    }
    this.now = Math.max(this.now, until)
  }

  /**
   * Work under way outside the world, on real async turns (an SDK request between its `send` and
   * the simulated network, or on its way back), begins: until it ends (`outsideEnds`), the world
   * fires no event. Such work must wait on nothing but real I/O or timers, never on the world.
   */
  outsideBegins(): void {
    this.#outside++
  }

  outsideEnds(): void {
    this.#outside--
  }

  /** Lets the last event's promise callbacks run, then waits out the work it started outside. */
  async #settle(): Promise<void> {
    await drain()
    const started = performance.now()
    while (this.#outside > 0) {
      // Real time only bounds a hang (work outside that waits on the world): no schedule reads it.
      if (performance.now() - started > OUTSIDE_LIMIT_MS) {
        throw new Error(
          `sim: ${this.#outside} piece(s) of work outside the world still running after ${OUTSIDE_LIMIT_MS} ms of real time`,
        )
      }
      await drain()
    }
  }

  /** Events left, cancelled ones aside. */
  get pending(): number {
    return this.#queue.filter((event) => !event.cancelled).length
  }
}

/** Real time the world waits for work outside it (`World.outsideBegins`) before it calls it a hang. */
const OUTSIDE_LIMIT_MS = 10_000

/** Lets every promise callback released so far run: one macrotask turn drains the microtasks. */
function drain(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve))
}
