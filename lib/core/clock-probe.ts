import type { Clock } from './clock.js'
import { type ServerClock, serverClockOf } from './server-clock.js'
import type { LockStore } from './store.js'

/**
 * Probes spent on one turn of the store's second at most: they are spread across the window in
 * which it may turn, so the estimate narrows to that spacing plus a round trip.
 */
export const PROBES_PER_TICK = 40
/**
 * Probes spent on one turn while a lease is held: the estimate is narrow already then (it only
 * loosened by the drift allowed since), and these probes are paid for every run they serve.
 */
export const BACKGROUND_PROBES_PER_TICK = 8
/** Probes sent to learn the store's clock before any lease is asked for (a Lambda's INIT), at most. */
export const STARTUP_PROBES = 10
/** ...for this long at most (ms): past it, the probes would outlast the start they serve. */
const STARTUP_MS = 1_500
/** A probe sent while a lease is held waits this long for its answer at most: a later one says little. */
const BACKGROUND_PROBE_TIMEOUT_MS = 1_000
/** An estimate narrower than this many round trips is as sharp as probes can make it. */
const SHARP_ROUND_TRIPS = 3
/** ...or narrower than this (ms), whatever the round trip: a few ms of wait are not worth requests. */
const SHARP_MS = 8

/** When the next probe is due, and the pace it keeps for its turn of the second. */
export interface ProbePlan {
  /** Local time (epoch ms) to send it. */
  readonly at: number
  /** The turn of the store's second it is for (store time), and the spacing kept for that turn. */
  readonly tick: number
  readonly spacingMs: number
  /** The probes per tick that spacing was set for. */
  readonly probesPerTick: number
}

/**
 * When to ask the store the time next, so that its answer lands close after a turn of its
 * second, or undefined when no probe sent before local time `until` would tell anything new.
 *
 * Why: `Date` counts whole seconds, so what an answer says of the store's clock is a second
 * wide, unless two answers fall on both sides of a turn of the second. A scheduled job's calls
 * come at the same sub-second phase every time and never straddle one by chance; probes timed
 * across the window where the turn is due do, on purpose. The caller sends them only while it
 * waits anyway (for its token, or while it holds a lease), so they cost requests, not time.
 *
 * Probes go one window-width / `PROBES_PER_TICK` apart (at least a round trip), walking forward:
 * an answer that still shows the old second moves the window's start past its sending, and the
 * first that shows the new one closes it. Locks sharing the estimate share one pace.
 */
export function nextProbeAt(
  clock: ServerClock,
  now: number,
  until: number,
  probesPerTick = PROBES_PER_TICK,
): ProbePlan | undefined {
  const time = clock.at(now)
  const window = clock.nextTick(now)
  if (!time || !window) return undefined
  const roundTrip = clock.roundTripMs ?? 0
  const width = time.upper - time.lower
  if (width <= Math.max(SHARP_ROUND_TRIPS * roundTrip, SHARP_MS)) return undefined
  const pace = clock.probePace
  // The spacing is set once per tick: recomputed from the shrinking window, it would shrink too.
  // A caller that waits on the answer (a token awaited) wants more probes per tick than one that
  // only keeps the estimate narrow (INIT, a held lease): it tightens the tick's spacing, once.
  const kept = pace.tick === window.tick && pace.probesPerTick >= probesPerTick
  const spacingMs = kept ? pace.spacingMs : Math.ceil(Math.max(roundTrip, width / probesPerTick, 1))
  const perTick = kept ? pace.probesPerTick : probesPerTick
  const at = Math.max(now, window.from + spacingMs, pace.lastAt + spacingMs)
  // Sent this late, its answer comes back after the turn is surely past: it would say nothing new.
  if (at + roundTrip >= window.to || at >= until) return undefined
  return { at, tick: window.tick, spacingMs, probesPerTick: perTick }
}

/** Notes a probe of `plan` sent at local time `sentAt`: the locks sharing the estimate keep its pace. */
export function probeSent(clock: ServerClock, plan: ProbePlan, sentAt: number): void {
  const pace = clock.probePace
  pace.tick = plan.tick
  pace.spacingMs = plan.spacingMs
  pace.probesPerTick = plan.probesPerTick
  pace.lastAt = sentAt
}

/** Asks the store the time for one lock, when the plans above say it is worth a request. */
export class ClockProber {
  constructor(
    private readonly store: LockStore,
    private readonly key: string,
    private readonly clock: Clock,
    private readonly serverClock: ServerClock,
  ) {}

  /**
   * Keeps the estimate narrow while a lease is held (until local time `until`, or until the
   * returned function is called): when a turn of the store's second falls within the lease and
   * the estimate has loosened since it was narrowed, a few probes find the turn again. The work
   * runs anyway, so they cost requests, not time; a job at a cron's fixed phase that lasts a
   * second or more keeps its estimate as narrow as its first run made it.
   */
  narrowWhileHeld(until: number): () => void {
    let stopped = false
    let cancel = (): void => {}
    const plan = (): void => {
      const now = this.clock.now()
      const probe = stopped
        ? undefined
        : nextProbeAt(this.serverClock, now, until, BACKGROUND_PROBES_PER_TICK)
      if (probe === undefined) return
      cancel = this.clock.schedule(probe.at - now, () => {
        const giveUpAt = Math.min(until, this.clock.now() + BACKGROUND_PROBE_TIMEOUT_MS)
        if (!stopped) void this.probe(probe, giveUpAt).then(plan)
      })
    }
    plan()
    return () => {
      stopped = true
      cancel()
    }
  }

  /**
   * Asks the store the time, as `plan` said, to narrow the estimate; given up at local time
   * `until` (when the wait it serves would be over anyway). Never fails: the wait ends by the
   * clock without it.
   */
  async probe(plan: ProbePlan, until: number): Promise<void> {
    probeSent(this.serverClock, plan, this.clock.now())
    await this.ask(until)
  }

  /** Asks the store the time once, given up at local time `until`. Never fails. */
  async ask(until: number): Promise<void> {
    const sentAt = this.clock.now()
    const giveUp = new AbortController()
    const cancel = this.clock.schedule(until - sentAt, () => giveUp.abort())
    try {
      const options = { signal: giveUp.signal }
      const serverDate = this.store.probeDate
        ? await this.store.probeDate(this.key, options)
        : (await this.store.read(this.key, options)).serverDate
      this.serverClock.observe(serverDate, sentAt, this.clock.now())
    } catch {
      // A probe only sharpens the estimate.
    } finally {
      cancel()
    }
  }
}

/**
 * Learns the store's clock before any lease is asked for, as a Lambda initialises: one dated
 * answer, then a few probes timed across the next turn of the store's second (`nextProbeAt`), so
 * that a cold start's first token waits a few ms instead of up to a second. At most
 * `STARTUP_PROBES` requests over `STARTUP_MS`; never rejects, and holds no timer that would keep
 * the process alive. `key` is one the caller may read (a probe is a HEAD or a projected read).
 * Ends for good once `stopped` says so (an invocation began): from then on only a token awaited
 * probes, at its own pace, so that a run that never reads its token sends none, and none of its
 * requests waits behind one.
 */
export async function learnStoreClock(
  store: LockStore,
  key: string,
  clock: Clock,
  stopped: () => boolean = () => false,
): Promise<void> {
  const serverClock = serverClockOf(store, clock)
  const prober = new ClockProber(store, key, clock, serverClock)
  const until = clock.now() + STARTUP_MS
  for (let sent = 0; sent < STARTUP_PROBES && !stopped(); sent++) {
    const now = clock.now()
    if (now >= until) return
    if (serverClock.known) {
      const plan = nextProbeAt(serverClock, now, until, STARTUP_PROBES)
      if (plan === undefined) return
      if (plan.at > now) await new Promise<void>((resolve) => clock.schedule(plan.at - now, resolve))
      if (stopped()) return
      await prober.probe(plan, until)
    } else await prober.ask(until)
  }
}
