import type { SignalSource } from './supervise.js'

/**
 * Signals passed on to the command: a container stop (SIGTERM), Ctrl-C, a closed terminal. The
 * CLI handles the same ones when no command runs (lib/cli/main.ts): one left to its default
 * action there would kill the wrapper between its acquisition and its release, the lock held.
 */
export const FORWARDED_SIGNALS = ['SIGINT', 'SIGTERM', 'SIGHUP'] as const

/**
 * The process's own signals, as a source for `exec`'s supervision. One per process, made where
 * the process's signals are handled (lib/cli/main.ts), which asks `forwarding` before acting on
 * any of them: while a command runs, exec passes them on to it and releases after it, so
 * the wrapper must not abort or exit on them.
 */
export class ProcessSignals implements SignalSource {
  #subscribed = 0

  /** Whether a command is being supervised, and so receives the process's signals. */
  get forwarding(): boolean {
    return this.#subscribed > 0
  }

  subscribe(listener: (signal: NodeJS.Signals) => void): () => void {
    const pass = (signal: NodeJS.Signals) => listener(signal)
    this.#subscribed++
    for (const signal of FORWARDED_SIGNALS) process.on(signal, pass)
    return () => {
      for (const signal of FORWARDED_SIGNALS) process.off(signal, pass)
      this.#subscribed--
    }
  }
}
