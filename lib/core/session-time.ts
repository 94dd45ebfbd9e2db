import type { Clock } from './clock.js'
import { ClockProber, nextProbeAt } from './clock-probe.js'
import { LockClockError } from './errors.js'
import { type ServerClock, type ServerTime, serverClockOf } from './server-clock.js'
import type { LockStore } from './store.js'
import type { Snapshot } from './store-session.js'
import {
  holderDeadline,
  isFreeToTake,
  type LeaseTerm,
  leaseTermFor,
  leaseTermFromToken,
  leaseTermUntil,
} from './timing.js'
import { tokenWaitMs } from './token.js'

/**
 * The store's clock as one lock's session knows it, and what is judged by it: the store's time,
 * a lease's term and its end for the holder, whether a record is free, and how long a token waits
 * before it may be handed out. The estimate is shared with the process's other locks on the
 * store (`serverClockOf`); the arithmetic is `timing.ts`'s and `token.ts`'s.
 */
export class SessionTime {
  readonly #estimate: ServerClock
  readonly #prober: ClockProber
  readonly #trustLocalClock: boolean

  constructor(
    store: LockStore,
    readonly key: string,
    readonly marginMs: number,
    readonly clock: Clock,
    trustLocalClock: boolean,
  ) {
    this.#trustLocalClock = trustLocalClock
    this.#estimate = serverClockOf(store, clock)
    this.#prober = new ClockProber(store, key, clock, this.#estimate)
  }

  /** An answer dated `serverDate` (if it was), to a request sent at `sentAt` and answered at `receivedAt`. */
  observe(serverDate: number | undefined, sentAt: number, receivedAt: number): void {
    this.#estimate.observe(serverDate, sentAt, receivedAt)
  }

  /**
   * The store's time at local time `localTime` (default now). Before any answer was dated there
   * is nothing to judge leases by: `LockClockError`, unless told to trust the local clock.
   */
  serverTime(localTime: number = this.clock.now()): ServerTime {
    const time = this.#estimate.at(localTime)
    if (time) return time
    if (!this.#trustLocalClock) {
      throw new LockClockError(
        `Lock "${this.key}": the store's answers carry no date, so there is no clock to judge leases by. ` +
          'Let the Date header through (a proxy may strip it), or pass trustLocalClock: true if every ' +
          "contender's clock is synchronised to within the clock-skew margin",
        { key: this.key },
      )
    }
    return localServerTime(localTime)
  }

  /**
   * What a take writes (`LockStore.take`), judged by the store's clock as far as we know it, else
   * by the local clock: a take needs no answer first, and the lease it lands is judged by its
   * own answer's date (a term too short ends early; one too long is cut by the raise).
   */
  takeTerm(ttlMs: number, holdUntil: number | undefined): { term: LeaseTerm; server: ServerTime } {
    const now = this.clock.now()
    const server = this.#estimate.at(now) ?? localServerTime(now)
    const term =
      holdUntil === undefined
        ? leaseTermFor(ttlMs, now, server, this.marginMs)
        : leaseTermUntil(holdUntil, now, server)
    return { term, server }
  }

  /** Free to take (see `isFreeToTake`), judged by the store's clock when `snapshot` was read. */
  isFree(snapshot: Snapshot): boolean {
    return isFreeToTake(snapshot.record.expires_at, snapshot.serverLower, this.marginMs)
  }

  /** A lease of `ttlMs` from now (see `leaseTermFor`). */
  termFor(ttlMs: number): LeaseTerm {
    const now = this.clock.now()
    return leaseTermFor(ttlMs, now, this.serverTime(now), this.marginMs)
  }

  /** A new lease of `ttlMs` counted from its `token` (see `leaseTermFromToken`). */
  termFromToken(token: number, ttlMs: number): LeaseTerm {
    const now = this.clock.now()
    return leaseTermFromToken(token, ttlMs, now, this.serverTime(now), this.marginMs)
  }

  /** A lease held until local time `until` (see `leaseTermUntil`). */
  termUntil(until: number): LeaseTerm {
    const now = this.clock.now()
    return leaseTermUntil(until, now, this.serverTime(now))
  }

  /** When, by what we know now, a holder must consider a lease ending at `expiresAt` over. */
  deadlineOf(expiresAt: number): number {
    const now = this.clock.now()
    return holderDeadline(expiresAt, now, this.serverTime(now), this.marginMs)
  }

  /**
   * Waits until the store's clock has surely passed `token`, so that every later acquisition
   * takes a higher one (see `tokenAfter`). While it waits, it asks the store the time at the
   * moments that narrow the estimate most (`nextProbeAt`): the wait ends as soon as the estimate
   * shows the store's clock past the token, and the next acquisitions of this process wait only
   * as long as the narrowed estimate is wide. A lease's `fencingToken()` waits here, after the
   * lease's write landed; `signal` (the lease's) abandons the wait. A wait no longer than a round
   * trip is slept: a probe's answer could not end it sooner.
   */
  async awaitToken(token: number, signal?: AbortSignal): Promise<void> {
    for (;;) {
      signal?.throwIfAborted()
      const now = this.clock.now()
      const wait = tokenWaitMs(token, this.serverTime(now))
      if (wait <= 0) return
      const worthProbing = wait > (this.#estimate.roundTripMs ?? 0)
      const probe = worthProbing ? nextProbeAt(this.#estimate, now, now + wait) : undefined
      if (probe === undefined) await this.clock.sleep(wait, signal)
      else if (probe.at > now) await this.clock.sleep(probe.at - now, signal)
      else await this.#prober.probe(probe, now + wait)
    }
  }

  /** Keeps the estimate narrow while a lease is held, until `until` or the call of what it returns. */
  narrowWhileHeld(until: number): () => void {
    return this.#prober.narrowWhileHeld(until)
  }
}

/** The local clock taken for the store's, exactly: where no answer has dated the store's clock. */
function localServerTime(localTime: number): ServerTime {
  return { lower: localTime, upper: localTime, mid: localTime, halfWidth: 0 }
}
