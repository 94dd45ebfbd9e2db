import type { Clock } from '../../lib/core/clock.js'

interface Timer {
  readonly at: number
  readonly callback: () => void
}

/**
 * Simulated time shared by a store and its contenders, where waiting moves time forward at
 * once: `sleep` advances it, and timers (`schedule`) fire as it passes them. Nothing waits for real.
 */
export class SimTime {
  now = 1_800_000_000_000
  readonly #timers = new Set<Timer>()

  advance(ms: number): void {
    this.now += ms
    for (const timer of [...this.#timers].sort((a, b) => a.at - b.at)) {
      if (timer.at > this.now) break
      this.#timers.delete(timer)
      timer.callback()
    }
  }

  /** The store's clock: the reference. */
  readonly serverClock: Clock = this.localClock()

  /** A contender's clock: off by `offsetMs` and running `drift` faster (0.01 = 1 %). */
  localClock(offsetMs = 0, drift = 0): Clock {
    const start = this.now
    return {
      now: () => start + offsetMs + (this.now - start) * (1 + drift),
      sleep: async (ms, signal) => {
        signal?.throwIfAborted()
        this.advance(ms)
      },
      schedule: (ms, callback) => {
        const timer = { at: this.now + ms / (1 + drift), callback }
        this.#timers.add(timer)
        return () => this.#timers.delete(timer)
      },
    }
  }
}

/** Lets every pending promise callback run (the in-memory store answers without real I/O). */
export async function settle(): Promise<void> {
  for (let turn = 0; turn < 8; turn++) await new Promise((resolve) => setImmediate(resolve))
}

/**
 * A clock for event-driven tests: time stands still until a test moves it, and it moves from
 * timer to timer, letting the code settle in between, so a heartbeat, a watchdog and a handler
 * that sleeps all interleave as they would in real time, deterministically and at once.
 */
export class ManualClock implements Clock {
  #now: number
  readonly #timers = new Set<Timer>()

  constructor(start = 1_800_000_000_000) {
    this.#now = start
  }

  now(): number {
    return this.#now
  }

  /** Timers scheduled and not yet fired or cancelled: what would still wake the process. */
  get pending(): number {
    return this.#timers.size
  }

  schedule(ms: number, callback: () => void): () => void {
    const timer = { at: this.#now + Math.max(0, ms), callback }
    this.#timers.add(timer)
    return () => this.#timers.delete(timer)
  }

  sleep(ms: number, signal?: AbortSignal): Promise<void> {
    return new Promise((resolve, reject) => {
      if (signal?.aborted) return reject(signal.reason)
      const onAbort = (): void => {
        cancel()
        reject(signal?.reason)
      }
      const cancel = this.schedule(ms, () => {
        signal?.removeEventListener('abort', onAbort)
        resolve()
      })
      signal?.addEventListener('abort', onAbort, { once: true })
    })
  }

  /** Moves time forward by `ms`, firing each timer at its own time and settling after each. */
  async advance(ms: number): Promise<void> {
    const target = this.#now + ms
    await settle()
    for (let next = this.#next(); next && next.at <= target; next = this.#next()) {
      this.#fire(next)
      await settle()
    }
    this.#now = target
    await settle()
  }

  /**
   * Runs until `work` settles, jumping from timer to timer whenever everything else is idle.
   * Fails when nothing is left to wait for (a deadlock) or after `limitMs` of simulated time.
   */
  async run<T>(work: Promise<T>, limitMs = 24 * 3_600_000): Promise<T> {
    let done = false
    const tracked = work.finally(() => {
      done = true
    })
    tracked.catch(() => undefined)
    const limit = this.#now + limitMs
    await settle()
    while (!done) {
      const next = this.#next()
      if (!next) throw new Error('ManualClock.run: nothing left to wait for, and the work is not done')
      if (next.at > limit) throw new Error(`ManualClock.run: not done within ${limitMs} ms`)
      this.#fire(next)
      await settle()
    }
    return tracked
  }

  #next(): Timer | undefined {
    let next: Timer | undefined
    for (const timer of this.#timers) if (!next || timer.at < next.at) next = timer
    return next
  }

  #fire(timer: Timer): void {
    this.#timers.delete(timer)
    this.#now = Math.max(this.#now, timer.at)
    timer.callback()
  }
}

/**
 * `clock` as seen by a process whose timers do not run: Lambda froze it, or its event loop is
 * blocked. Time passes and sleeps end, but nothing scheduled fires (no watchdog, no heartbeat),
 * so whatever the protocol checks by the clock itself is all that stands.
 */
export function withoutTimers(clock: Clock): Clock {
  return {
    now: () => clock.now(),
    sleep: (ms, signal) => clock.sleep(ms, signal),
    schedule: () => () => {},
  }
}
