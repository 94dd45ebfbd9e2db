import type { Clock } from './clock.js'

/**
 * The end of a wait as an abort signal, joined with the caller's own: when it passes, store
 * calls still in flight are cut off (their request timeouts shrink to what is left of the wait),
 * and so are sleeps between tries.
 */
export class WaitDeadline {
  readonly endsAt: number
  readonly signal: AbortSignal
  readonly #reason: Error
  readonly #cancel: () => void

  constructor(clock: Clock, waitMs: number, callerSignal?: AbortSignal) {
    this.endsAt = clock.now() + waitMs
    const controller = new AbortController()
    this.#reason = new Error(`the wait of ${waitMs} ms is over`)
    this.#cancel = clock.schedule(waitMs, () => controller.abort(this.#reason))
    this.signal = callerSignal ? AbortSignal.any([callerSignal, controller.signal]) : controller.signal
  }

  /** Whether `error` is this deadline passing: not the caller's abort, not a store failure. */
  isOver(error: unknown): boolean {
    return error === this.#reason
  }

  /** Stops the timer; call when the wait is done. */
  cancel(): void {
    this.#cancel()
  }
}
