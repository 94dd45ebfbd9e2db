// A command's process group with no processes: members that obey or ignore signals, on a clock.
import { constants } from 'node:os'
import type { Clock } from '../../lib/core/clock.js'
import type { CommandGroup, LeaderExit } from '../../lib/exec/command-group.js'
import type { SignalSource } from '../../lib/exec/supervise.js'

/** A signal as the group received it, and when by the test's clock. */
export interface Received {
  readonly signal: NodeJS.Signals
  readonly at: number
}

interface Member {
  readonly ignores: readonly NodeJS.Signals[]
  alive: boolean
}

export interface GroupShape {
  /** Signals the command itself ignores (SIGKILL cannot be). */
  readonly leaderIgnores?: readonly NodeJS.Signals[]
  /** Processes the command started, each with the signals it ignores. */
  readonly children?: readonly (readonly NodeJS.Signals[])[]
}

export class FakeGroup implements CommandGroup {
  readonly pid: number | undefined
  readonly leaderExit: Promise<LeaderExit>
  readonly received: Received[] = []
  closed = false
  readonly #clock: Clock
  readonly #leader: Member
  readonly #children: Member[]
  #exitLeader: (exit: LeaderExit) => void = () => {}
  readonly #whenGone: (() => void)[] = []

  constructor(clock: Clock, shape: GroupShape = {}, notStarted?: NodeJS.ErrnoException) {
    this.#clock = clock
    this.pid = notStarted ? undefined : 4242
    this.#leader = { ignores: shape.leaderIgnores ?? [], alive: !notStarted }
    this.#children = (shape.children ?? []).map((ignores) => ({ ignores, alive: !notStarted }))
    this.leaderExit = notStarted
      ? Promise.resolve({ kind: 'not-started', error: notStarted })
      : new Promise((resolve) => {
          this.#exitLeader = resolve
        })
  }

  get running(): boolean {
    return this.#leader.alive || this.#children.some((child) => child.alive)
  }

  gone(): Promise<void> {
    if (!this.running) return Promise.resolve()
    return new Promise((resolve) => this.#whenGone.push(resolve))
  }

  signal(signal: NodeJS.Signals): void {
    this.received.push({ signal, at: this.#clock.now() })
    for (const child of this.#children)
      if (child.alive && !child.ignores.includes(signal)) child.alive = false
    if (this.#leader.alive && !this.#leader.ignores.includes(signal))
      this.#end(128 + constants.signals[signal])
    this.#checkGone()
  }

  close(): void {
    this.closed = true
  }

  /** The command itself exits with `status`; what it started runs on. */
  exit(status: number): void {
    this.#end(status)
    this.#checkGone()
  }

  /** The processes the command started exit. */
  childrenExit(): void {
    for (const child of this.#children) child.alive = false
    this.#checkGone()
  }

  #end(status: number): void {
    if (!this.#leader.alive) return
    this.#leader.alive = false
    this.#exitLeader({ kind: 'exited', status })
  }

  #checkGone(): void {
    if (!this.running) for (const resolve of this.#whenGone.splice(0)) resolve()
  }
}

/** The signals a test sends the wrapper. */
export class FakeSignals implements SignalSource {
  readonly #listeners = new Set<(signal: NodeJS.Signals) => void>()

  get subscribed(): number {
    return this.#listeners.size
  }

  subscribe(listener: (signal: NodeJS.Signals) => void): () => void {
    const own = (signal: NodeJS.Signals) => listener(signal)
    this.#listeners.add(own)
    return () => this.#listeners.delete(own)
  }

  send(signal: NodeJS.Signals): void {
    for (const listener of this.#listeners) listener(signal)
  }
}
