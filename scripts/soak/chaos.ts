/**
 * The soak's fault plan over time, beside the proxy's per-request faults: workers crashed
 * (SIGKILL) and frozen past their lease (SIGSTOP), radosgw restarted with its data kept, and
 * bursts in which no answer carries a `Date`.
 */
import { spawn } from 'node:child_process'
import type { SoakConfig } from './config.js'
import { type EventBody, FaultKind } from './events.js'
import type { WorkerPool } from './pool.js'
import type { SoakProxy } from './proxy.js'
import { between, type Random } from './random.js'

/** Restarts the S3 engine's front end; undefined when the endpoint is not ours to restart. */
export type RestartRgw = (() => Promise<void>) | undefined

/** `scripts/s3-local.sh restart-rgw`, without blocking the event loop that runs the proxy. */
export function localRgwRestart(script: string): () => Promise<void> {
  return () =>
    new Promise((resolve, reject) => {
      const child = spawn('bash', [script, 'restart-rgw'], { stdio: ['ignore', 'ignore', 'pipe'] })
      let stderr = ''
      child.stderr.on('data', (chunk: Buffer) => {
        stderr += chunk.toString()
      })
      child.once('exit', (code) =>
        code === 0 ? resolve() : reject(new Error(`restart-rgw exited ${code}: ${stderr.trim()}`)),
      )
    })
}

export class Chaos {
  readonly #timers = new Set<NodeJS.Timeout>()
  #restarting: Promise<void> | undefined
  #stopped = false
  /** Restarts of radosgw that failed (the run cannot go on without it). */
  restartFailure: Error | undefined

  constructor(
    private readonly config: SoakConfig,
    private readonly pool: WorkerPool,
    private readonly proxy: SoakProxy,
    private readonly restartRgw: RestartRgw,
    private readonly random: Random,
    private readonly emit: (event: EventBody) => void,
  ) {}

  start(): void {
    const { every } = this.config
    this.#repeat(every.kill, () => this.#kill())
    this.#repeat(every.pause, () => this.#pause())
    this.#repeat(every.noDates, () => this.#noDates())
    if (this.restartRgw) this.#repeat(every.rgwRestart, () => this.#restart())
  }

  /** Stops injecting; waits for a radosgw restart under way, so the run ends with the engine up. */
  async stop(): Promise<void> {
    this.#stopped = true
    for (const timer of this.#timers) clearTimeout(timer)
    await this.#restarting
  }

  /** Runs `fault` at intervals of `meanMs` ± 50 %; never when `meanMs` is infinite (a calm run). */
  #repeat(meanMs: number, fault: () => void): void {
    if (!Number.isFinite(meanMs)) return
    const next = (): void => {
      const timer = setTimeout(
        () => {
          this.#timers.delete(timer)
          if (this.#stopped) return
          fault()
          next()
        },
        between(this.random, 0.5, 1.5) * meanMs,
      )
      this.#timers.add(timer)
    }
    next()
  }

  #kill(): void {
    // Half the crashes hit a holder: its lease must run out before anyone takes over.
    const target = this.pool.pickTarget(this.random() < 0.5)
    if (target) this.pool.kill(target.index)
  }

  #pause(): void {
    const [low, high] = this.config.pauseBeyondLeaseMs
    this.pool.pauseNextHolder(this.config.ttlMs + between(this.random, low, high))
  }

  #noDates(): void {
    this.proxy.stripDatesFor(this.config.noDatesMs)
    this.emit({
      type: 'fault',
      kind: FaultKind.NoDate,
      target: `all answers for ${this.config.noDatesMs} ms`,
    })
  }

  #restart(): void {
    const restart = this.restartRgw
    if (!restart || this.#restarting) return
    this.emit({ type: 'fault', kind: FaultKind.RgwRestart })
    this.#restarting = restart()
      .then(
        () => this.emit({ type: 'fault', kind: FaultKind.RgwUp }),
        (error: Error) => {
          this.restartFailure = error
        },
      )
      .finally(() => {
        this.#restarting = undefined
      })
  }
}
