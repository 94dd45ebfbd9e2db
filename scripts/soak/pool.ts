/**
 * The soak's worker processes: spawns them (bundled once with esbuild, so that a restart after a
 * crash takes a fraction of a second), crashes and pauses them on request, restarts the crashed,
 * and knows which lease each one holds, so that faults can be aimed at holders.
 */
import { type ChildProcess, spawn } from 'node:child_process'
import { createInterface } from 'node:readline'
import { fileURLToPath } from 'node:url'
import { build } from 'esbuild'
import type { SoakConfig, WorkerConfig } from './config.js'
import { type EventBody, FaultKind } from './events.js'
import { between, pick, type Random } from './random.js'

type Emit = (event: EventBody) => void

interface Slot {
  readonly index: number
  incarnation: number
  id: string
  child: ChildProcess | undefined
  /** The lock key whose lease it holds, as it last said. */
  holding: string | undefined
  paused: boolean
  /** Set when we killed it or asked it to stop: its exit is no crash. */
  expectExit: boolean
}

/** Bundles the worker into one file that plain `node` starts in ~0.2 s (tsx takes 1–2 s). */
export async function bundleWorker(outDir: string): Promise<string> {
  const outfile = `${outDir}/worker.mjs`
  await build({
    entryPoints: [fileURLToPath(new URL('./worker.ts', import.meta.url))],
    bundle: true,
    platform: 'node',
    format: 'esm',
    target: 'node22',
    conditions: ['source'],
    outfile,
    logLevel: 'warning',
    // The AWS SDK's CommonJS parts call require().
    banner: {
      js: "import { createRequire } from 'node:module'; const require = createRequire(import.meta.url);",
    },
  })
  return outfile
}

export class WorkerPool {
  readonly #slots: Slot[]
  #stopping = false
  #pauseNextHolder: number | undefined
  /** Workers that exited without being killed or stopped: a crash of the library or the worker. */
  unexpectedExits = 0
  /** Leases the workers said they took (for progress; the checker counts from the logs). */
  acquisitions = 0

  constructor(
    private readonly config: SoakConfig,
    private readonly worker: { script: string; endpoint: string; bucket: string; logDir: string },
    private readonly random: Random,
    private readonly emit: Emit,
  ) {
    this.#slots = Array.from({ length: config.workers }, (_, index) => ({
      index,
      incarnation: -1,
      id: '',
      child: undefined,
      holding: undefined,
      paused: false,
      expectExit: false,
    }))
  }

  /** Starts the workers a quarter second apart: twelve node processes at once starve a busy machine. */
  start(): void {
    for (const slot of this.#slots) setTimeout(() => this.#stopping || this.#spawn(slot), slot.index * 250)
  }

  /** A running, unpaused worker; one that holds a lease when `holder` and there is one. */
  pickTarget(holder: boolean): { id: string; index: number } | undefined {
    const live = this.#slots.filter((slot) => slot.child && !slot.paused && !slot.expectExit)
    const holders = live.filter((slot) => slot.holding !== undefined)
    const from = holder && holders.length > 0 ? holders : live
    return from.length > 0 ? pick(this.random, from) : undefined
  }

  /** SIGKILL, as a crash; restarted after a short while, as a new process with a new clock. */
  kill(index: number): void {
    const slot = this.#slots[index]
    if (!slot?.child) return
    slot.expectExit = true
    slot.child.kill('SIGKILL')
    this.emit({ type: 'fault', kind: FaultKind.Kill, target: slot.id })
  }

  /**
   * Freezes the next worker that says it took a lease, for `ms`, right then: it wakes up a
   * zombie about to write with its old token.
   */
  pauseNextHolder(ms: number): void {
    this.#pauseNextHolder = ms
  }

  /** SIGSTOP for `ms`, then SIGCONT: a holder frozen past its lease wakes up as a zombie. */
  pause(index: number, ms: number): void {
    const slot = this.#slots[index]
    const child = slot?.child
    if (!slot || !child) return
    slot.paused = true
    child.kill('SIGSTOP')
    this.emit({ type: 'fault', kind: FaultKind.Pause, target: slot.id })
    setTimeout(() => this.#resume(slot, child), ms)
  }

  #resume(slot: Slot, child: ChildProcess): void {
    if (slot.child !== child || !slot.paused) return
    slot.paused = false
    child.kill('SIGCONT')
    this.emit({ type: 'fault', kind: FaultKind.Resume, target: slot.id })
  }

  /** Asks every worker to finish its critical section and leave; kills those that do not within `graceMs`. */
  async stop(graceMs: number): Promise<void> {
    this.#stopping = true
    const exits = this.#slots.map((slot) => {
      const child = slot.child
      if (!child || child.exitCode !== null || child.signalCode !== null) return Promise.resolve()
      slot.expectExit = true
      if (slot.paused) this.#resume(slot, child)
      child.kill('SIGTERM')
      return new Promise<void>((resolve) => {
        const timer = setTimeout(() => {
          child.kill('SIGKILL')
          this.emit({ type: 'fault', kind: FaultKind.Kill, target: slot.id })
        }, graceMs)
        child.once('exit', () => {
          clearTimeout(timer)
          resolve()
        })
      })
    })
    await Promise.all(exits)
  }

  /** A worker says what it holds: count its acquisition, and freeze it if a pause is waiting for a holder. */
  #heard(slot: Slot, line: string): void {
    let said: { holding?: string | null }
    try {
      said = JSON.parse(line) as { holding?: string | null }
    } catch {
      return // not ours (a library warning)
    }
    slot.holding = said.holding ?? undefined
    if (!slot.holding) return
    this.acquisitions++
    const pauseMs = this.#pauseNextHolder
    if (pauseMs !== undefined && !this.#stopping && !slot.expectExit) {
      this.#pauseNextHolder = undefined
      this.pause(slot.index, pauseMs)
    }
  }

  #spawn(slot: Slot): void {
    slot.incarnation++
    slot.id = `w${slot.index}.${slot.incarnation}`
    slot.holding = undefined
    slot.paused = false
    slot.expectExit = false
    const skew = this.config.maxSkewMs
    const config: WorkerConfig = {
      id: slot.id,
      log: `${this.worker.logDir}/${slot.id}.jsonl`,
      endpoint: this.worker.endpoint,
      bucket: this.worker.bucket,
      keys: this.config.keys,
      objectsPerKey: this.config.objectsPerKey,
      ttlMs: this.config.ttlMs,
      marginMs: this.config.marginMs,
      requestTimeoutMs: this.config.requestTimeoutMs,
      writeTimeoutMs: this.config.writeTimeoutMs,
      // Clocks far ahead, far behind, and right: the lock must judge leases on the store's clock.
      offsetMs: Math.round(
        pick(this.random, [-skew, -skew / 3, 0, skew / 3, skew]) + between(this.random, -250, 250),
      ),
      seed: Math.floor(this.random() * 2 ** 31),
    }
    const child = spawn(process.execPath, [this.worker.script], {
      env: { ...process.env, SOAK_WORKER: JSON.stringify(config) },
      stdio: ['ignore', 'pipe', 'inherit'],
    })
    slot.child = child
    createInterface({ input: child.stdout as NodeJS.ReadableStream }).on('line', (line) =>
      this.#heard(slot, line),
    )
    child.once('exit', (code, signal) => {
      if (slot.child !== child) return
      slot.child = undefined
      if (!slot.expectExit) {
        this.unexpectedExits++
        this.emit({
          type: 'worker',
          w: slot.id,
          phase: 'end',
          pid: child.pid ?? 0,
          exit: `${signal ?? code}`,
        })
      }
      // A crashed worker comes back soon, as a new process (a new Lambda container).
      if (!this.#stopping)
        setTimeout(() => this.#stopping || this.#spawn(slot), between(this.random, 200, 1_500))
    })
  }
}
