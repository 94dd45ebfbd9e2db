import type { Clock } from '../../lib/core/clock.js'

/** Simulated time shared by a store and its contenders. Nothing waits for real. */
export class SimTime {
  now = 1_800_000_000_000

  advance(ms: number): void {
    this.now += ms
  }

  /** The store's clock: the reference. */
  readonly serverClock: Clock = {
    now: () => this.now,
    sleep: async (ms) => this.advance(ms),
  }

  /** A contender's clock: off by `offsetMs` and running `drift` faster (0.01 = 1 %). */
  localClock(offsetMs = 0, drift = 0): Clock {
    const start = this.now
    return {
      now: () => start + offsetMs + (this.now - start) * (1 + drift),
      sleep: async (ms, signal) => {
        signal?.throwIfAborted()
        this.advance(ms)
      },
    }
  }
}
