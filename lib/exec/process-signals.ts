import type { SignalSource } from './supervise.js'

/** Signals passed on to the command: a container stop (SIGTERM), Ctrl-C, a closed terminal. */
const FORWARDED = ['SIGINT', 'SIGTERM', 'SIGHUP'] as const

/**
 * The process's own signals, as a source for `exec`'s supervision. One per process, made where
 * the process's signals are handled (lib/cli/main.ts), which asks `forwarding` before acting on
 * SIGINT or SIGTERM: while a command runs, exec passes them on to it and releases after it, so
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
    for (const signal of FORWARDED) process.on(signal, pass)
    return () => {
      for (const signal of FORWARDED) process.off(signal, pass)
      this.#subscribed--
    }
  }
}
