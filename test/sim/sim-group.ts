import type { CommandGroup, LeaderExit } from '../../lib/exec/command-group.js'
import type { SimProcess, World } from './world.js'

/** One process of a command's group: how long it works, and whether it ignores SIGTERM. */
export interface MemberPlan {
  readonly runsMs: number
  readonly ignoresTerm: boolean
}

/** What the command does: the command itself (the leader), and the workers it starts. */
export interface CommandPlan {
  readonly leader: MemberPlan
  readonly workers: readonly MemberPlan[]
  readonly status: number
  /** The program is not there: nothing starts (ENOENT). */
  readonly missing: boolean
}

/** How soon a process that honours SIGTERM is gone, and how soon the kernel reaps a SIGKILL. */
const TERM_EXIT_MS = 50
const KILL_EXIT_MS = 5
/** How soon the watchdog (a socket's end closed) or the parent-death signal kills the group. */
export const ORPHAN_KILL_MS = 50

interface Member {
  readonly plan: MemberPlan
  alive: boolean
}

/**
 * A command's process group on simulated time, as `CommandGroup` promises it for real processes
 * (lib/exec/process-group.ts, whose real-process tests show it keeps these promises): a signal
 * reaches every member; the leader's exit says nothing of the workers; a wrapper that crashes
 * takes the group down within `ORPHAN_KILL_MS`. Members run on their own (a frozen or crashed
 * wrapper does not stop them); only what resolves to the wrapper waits on the wrapper.
 */
export class SimGroup implements CommandGroup {
  readonly pid: number | undefined
  readonly leaderExit: Promise<LeaderExit>
  /** When the group was first asked to stop (SIGTERM, or SIGKILL), by true time. */
  firstStopAt: number | undefined
  /** When the wrapper crashed while the group ran. */
  orphanedAt: number | undefined
  readonly #members: Member[]
  readonly #gone: (() => void)[] = []
  #closed = false
  #exitLeader: (exit: LeaderExit) => void = () => {}

  constructor(
    readonly world: World,
    readonly wrapper: SimProcess,
    plan: CommandPlan,
    pid: number,
  ) {
    this.leaderExit = new Promise((resolve) => {
      this.#exitLeader = (exit) => world.at(world.now, wrapper, () => resolve(exit))
    })
    if (plan.missing) {
      this.pid = undefined
      this.#members = []
      const error = Object.assign(new Error('spawn job.sh ENOENT'), { code: 'ENOENT' })
      this.#exitLeader({ kind: 'not-started', error })
      return
    }
    this.pid = pid
    this.#members = [plan.leader, ...plan.workers].map((member) => ({ plan: member, alive: true }))
    this.#members.forEach((member, index) => {
      world.at(world.now + member.plan.runsMs, undefined, () => this.#exit(member, index === 0, plan.status))
    })
    wrapper.onCrash(() => {
      if (this.#closed || !this.running) return
      this.orphanedAt = world.now
      world.at(world.now + world.random.int(1, ORPHAN_KILL_MS), undefined, () => this.#killAll())
    })
  }

  get running(): boolean {
    return this.#members.some((member) => member.alive)
  }

  gone(): Promise<void> {
    if (!this.running) return Promise.resolve()
    return new Promise((resolve) =>
      this.#gone.push(() => this.world.at(this.world.now, this.wrapper, resolve)),
    )
  }

  signal(signal: NodeJS.Signals): void {
    if (!this.running) return
    this.firstStopAt ??= this.world.now
    const { world } = this
    this.#members.forEach((member, index) => {
      if (!member.alive) return
      if (signal === 'SIGKILL') {
        world.at(world.now + world.random.int(0, KILL_EXIT_MS), undefined, () =>
          this.#exit(member, index === 0, 137),
        )
      } else if (!member.plan.ignoresTerm) {
        world.at(world.now + world.random.int(1, TERM_EXIT_MS), undefined, () =>
          this.#exit(member, index === 0, 143),
        )
      }
    })
  }

  close(): void {
    this.#closed = true
  }

  #killAll(): void {
    this.#members.forEach((member, index) => {
      this.#exit(member, index === 0, 137)
    })
  }

  #exit(member: Member, leader: boolean, status: number): void {
    if (!member.alive) return
    member.alive = false
    if (leader) this.#exitLeader({ kind: 'exited', status })
    if (this.running) return
    for (const resolve of this.#gone.splice(0)) resolve()
  }
}
