import type { Clock } from './clock.js'
import type { LockStore } from './store.js'

/** Round trips longer than this say little about the store's clock. */
const MAX_SAMPLE_ROUND_TRIP_MS = 5_000
/**
 * How fast our clock may drift from the store's, as a fraction: what we learned of the offset
 * loosens by this much of the time since. 200 ppm is ten times what an NTP-disciplined clock
 * drifts, so an hour-old estimate is kept, 0.72 s wider.
 */
export const MAX_DRIFT = 200e-6

/**
 * Weight of a slower round trip in the running estimate of a round trip's length. A faster one
 * counts at once: the first calls of a process (connections, credentials) are slow.
 */
const ROUND_TRIP_WEIGHT = 0.2

/** What we know of the store's clock at one instant: the interval it lies in (epoch ms). */
export interface ServerTime {
  readonly lower: number
  readonly upper: number
  /** The middle of the interval: the best single guess. */
  readonly mid: number
  /** Half the interval's width: how far `mid` may be from the truth. */
  readonly halfWidth: number
}

/** Local times (epoch ms) between which the store's clock turns its next whole second (`tick`, store time). */
export interface TickWindow {
  readonly tick: number
  readonly from: number
  readonly to: number
}

/** The probes spent on one tick: their spacing, chosen when the first was sent, and the last one's time. */
export interface ProbePace {
  tick: number
  spacingMs: number
  /** The probes per tick the spacing was set for: a caller that wants more tightens it once. */
  probesPerTick: number
  lastAt: number
}

/**
 * What we know of the store's clock, learned from the `Date` of its answers. An answer dated
 * `D` (resolution `r`), sent at local time `s` and received at `t`, puts the offset between the
 * store's clock and ours in `[D - t, D + r - s]`. Every answer narrows the interval further (the
 * intersection of all of them, each loosened by the drift since), so the one-second resolution
 * of `Date` shrinks to about a round trip once answers have straddled a second boundary.
 *
 * Leases are judged on this clock, not on local ones, so that contenders whose clocks disagree
 * still agree on when a lease ends. Until an answer has carried a date, there is nothing to
 * judge with: `at()` returns undefined (a lock then refuses, or trusts its own clock if told to).
 */
export class ServerClock {
  #lowerOffset = Number.NEGATIVE_INFINITY
  #upperOffset = Number.POSITIVE_INFINITY
  /** Local time of the last answer that narrowed (or reset) the interval. */
  #learnedAt: number | undefined
  #roundTripMs: number | undefined
  /** How probes are paced (see `clock-probe.ts`): the locks sharing this estimate share one pace. */
  readonly probePace: ProbePace = {
    tick: Number.NaN,
    spacingMs: 0,
    probesPerTick: 0,
    lastAt: Number.NEGATIVE_INFINITY,
  }

  constructor(
    private readonly clock: Clock,
    private readonly resolutionMs: number,
  ) {}

  /** Whether an answer has told the store's time. */
  get known(): boolean {
    return this.#learnedAt !== undefined
  }

  /** How long a dated answer takes to come back, lately, at best (ms); undefined before the first. */
  get roundTripMs(): number | undefined {
    return this.#roundTripMs
  }

  /** Learns from an answer dated `serverDate`, to a call sent at `sentAt` and answered at `receivedAt`. */
  observe(serverDate: number | undefined, sentAt: number, receivedAt: number): void {
    if (serverDate === undefined) return
    // A call that spanned a long pause (a frozen Lambda) bounds the offset too loosely to use.
    if (receivedAt - sentAt > MAX_SAMPLE_ROUND_TRIP_MS && this.known) return
    const roundTrip = Math.max(0, receivedAt - sentAt)
    this.#roundTripMs =
      this.#roundTripMs === undefined || roundTrip < this.#roundTripMs
        ? roundTrip
        : this.#roundTripMs + ROUND_TRIP_WEIGHT * (roundTrip - this.#roundTripMs)
    const lower = serverDate - receivedAt
    const upper = serverDate + this.resolutionMs - sentAt
    const drift = this.#drift(receivedAt)
    const narrowedLower = Math.max(this.#lowerOffset - drift, lower)
    const narrowedUpper = Math.min(this.#upperOffset + drift, upper)
    // Disjoint: the store's clock was stepped, or another of its hosts answered with another
    // clock. What it says now is what counts.
    const disjoint = narrowedLower > narrowedUpper
    this.#lowerOffset = disjoint ? lower : narrowedLower
    this.#upperOffset = disjoint ? upper : narrowedUpper
    this.#learnedAt = receivedAt
  }

  /** The store's time at local time `localTime` (default now); undefined until an answer was dated. */
  at(localTime: number = this.clock.now()): ServerTime | undefined {
    if (!this.known) return undefined
    const drift = this.#drift(localTime)
    const lower = localTime + this.#lowerOffset - drift
    const upper = localTime + this.#upperOffset + drift
    return { lower, upper, mid: (lower + upper) / 2, halfWidth: (upper - lower) / 2 }
  }

  /**
   * When the store's clock turns its next whole second (of `resolutionMs`) after local time
   * `localTime`, as far as we know: between `from` and `to`. An answer to a call sent after
   * `from` that still carries the old second, or one received before `to` that carries the new
   * one, moves that end: that is how the estimate narrows below the resolution. Undefined until
   * an answer was dated.
   */
  nextTick(localTime: number = this.clock.now()): TickWindow | undefined {
    const time = this.at(localTime)
    if (!time) return undefined
    const tick = (Math.floor(time.lower / this.resolutionMs) + 1) * this.resolutionMs
    // The store's clock reads `tick` at a local time between these: the latest it may already
    // read it is when our upper bound reaches it, the earliest when our lower bound does.
    return { tick, from: localTime + (tick - time.upper), to: localTime + (tick - time.lower) }
  }

  #drift(localTime: number): number {
    return this.#learnedAt === undefined ? 0 : Math.abs(localTime - this.#learnedAt) * MAX_DRIFT
  }
}

const shared = new WeakMap<object, WeakMap<Clock, ServerClock>>()

/**
 * The one estimate of `store`'s clock (of its `clockSource`) shared by every lock of this process
 * that judges time by `clock`. What one lock learned, the next need not learn again: a fresh lock knows the store's
 * time to about a round trip instead of a whole second (so its first token waits that much, not
 * a second), and a burst of answers without `Date` does not leave it without a clock.
 */
export function serverClockOf(store: LockStore, clock: Clock): ServerClock {
  const source = store.clockSource ?? store
  let byClock = shared.get(source)
  if (!byClock) {
    byClock = new WeakMap()
    shared.set(source, byClock)
  }
  let serverClock = byClock.get(clock)
  if (!serverClock) {
    serverClock = new ServerClock(clock, store.clockResolutionMs)
    byClock.set(clock, serverClock)
  }
  return serverClock
}
