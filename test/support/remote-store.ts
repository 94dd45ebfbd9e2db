import type { ReadResult, StoreCallOptions, WriteResult } from '../../lib/core/store.js'
import type { LockStore } from '../../lib/extend.js'
import { Lock } from '../../lib/index.js'
import { MemoryLockStore } from '../../lib/memory/index.js'
import { leaseOf } from './lease-of.js'
import type { ManualClock } from './sim-clock.js'

export const SECOND = 1_000
const KEY = 'jobs/cron'

export interface Network {
  /** Local ms a call takes to reach the store, and its answer to come back. */
  legs(): readonly [out: number, back: number]
}

export const steady = (roundTripMs: number): Network => ({ legs: () => [roundTripMs / 2, roundTripMs / 2] })

/**
 * A store across a network, on simulated time: each call takes its legs on the local clock;
 * the store dates its answers to the second by its own clock, `offsetMs` ahead of the local one
 * and running `drift` faster. `truth()` is the store's time now, to hold estimates against.
 */
export class RemoteStore implements LockStore {
  readonly clockResolutionMs = SECOND
  readonly inner: MemoryLockStore
  readonly truth: () => number
  /** Called before each call is sent, as the caller would see the world then. */
  onSend: () => void = () => {}

  constructor(
    readonly local: ManualClock,
    readonly network: Network,
    offsetMs: number,
    drift = 0,
  ) {
    const start = local.now()
    this.truth = () => local.now() + offsetMs + (local.now() - start) * drift
    const clock = { now: this.truth, sleep: () => Promise.resolve(), schedule: () => () => {} }
    this.inner = new MemoryLockStore({ clock, clockResolutionMs: SECOND })
  }

  read(key: string, options?: StoreCallOptions): Promise<ReadResult> {
    return this.#call(options, () => this.inner.read(key))
  }
  create(key: string, body: string, options?: StoreCallOptions): Promise<WriteResult> {
    return this.#call(options, () => this.inner.create(key, body))
  }
  replace(key: string, body: string, etag: string, options?: StoreCallOptions): Promise<WriteResult> {
    return this.#call(options, () => this.inner.replace(key, body, etag))
  }
  probeDate(key: string, options?: StoreCallOptions): Promise<number | undefined> {
    return this.#call(options, () => this.inner.probeDate(key))
  }

  async #call<T>(options: StoreCallOptions | undefined, answer: () => Promise<T>): Promise<T> {
    this.onSend()
    const [out, back] = this.network.legs()
    await this.local.sleep(out, options?.signal)
    const result = await answer()
    await this.local.sleep(back, options?.signal)
    return result
  }
}

export interface Invocation {
  /** Local ms the lock added to the invocation: its wall time less the handler's. */
  readonly addedMs: number
  readonly probes: number
  readonly token: number
  /** The store's true time when the token was handed out (or the lease, for a job that reads no token). */
  readonly handedOutAt: number
}

/**
 * When a job reads its token: before its work (it fences at once), after it (it fences its
 * output), or never (it wants one run at a time and writes nothing fenced).
 */
export type TokenRead = 'at-once' | 'after-work' | 'never'

/**
 * A warm container: every `periodMs` of the store's time, at `phaseMs` past its second (the
 * scheduler's clock is the store's), one invocation takes the lock, works `workMs` and releases.
 */
export async function cron(
  store: RemoteStore,
  options: { periodMs: number; phaseMs: number; workMs: number; invocations: number; token?: TokenRead },
): Promise<Invocation[]> {
  const read = options.token ?? 'at-once'
  const { local } = store
  const clock = local
  const runs: Invocation[] = []
  for (let i = 0; i < options.invocations; i++) {
    let tick = Math.ceil(store.truth() / options.periodMs) * options.periodMs + options.phaseMs
    if (tick <= store.truth()) tick += options.periodMs
    await local.advance(tick - store.truth())
    const probes = store.inner.requests.probe
    const startedAt = local.now()

    const lock = new Lock({ store, key: KEY, owner: `invocation-${i}`, ttlMs: 60_000, clock })
    const lease = await local.run(leaseOf(lock.tryAcquire()))
    if (!lease) throw new Error(`invocation ${i} found the lock held`)
    let handedOutAt = store.truth()
    if (read === 'at-once') {
      await local.run(lease.fencingToken())
      handedOutAt = store.truth()
    }
    await local.run(local.sleep(options.workMs))
    if (read === 'after-work') {
      await local.run(lease.fencingToken())
      handedOutAt = store.truth()
    }
    await local.run(lease.release())
    runs.push({
      addedMs: local.now() - startedAt - options.workMs,
      probes: store.inner.requests.probe - probes,
      token: lease.record.token,
      handedOutAt,
    })
  }
  return runs
}
