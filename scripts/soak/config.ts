/** The soak's settings: the full run and the quick one (CI), and what a worker is told. */
import { parseArgs } from 'node:util'
import type { FaultRates } from './proxy.js'

export interface SoakConfig {
  readonly quick: boolean
  readonly durationMs: number
  readonly workers: number
  /** Lock keys; each has `objectsPerKey` data objects that only its holders write. */
  readonly keys: readonly string[]
  readonly objectsPerKey: number
  readonly ttlMs: number
  readonly marginMs: number
  readonly requestTimeoutMs: number
  readonly writeTimeoutMs: number
  /** How far a worker's local clock may be off the true one, either way (ms). */
  readonly maxSkewMs: number
  /** Mean interval between faults of each kind the orchestrator injects (ms). */
  readonly every: {
    readonly kill: number
    readonly pause: number
    readonly rgwRestart: number
    readonly noDates: number
  }
  /** How long a paused worker stays stopped, beyond its lease (ms). */
  readonly pauseBeyondLeaseMs: readonly [number, number]
  /** How long every answer loses its `Date` in a no-dates burst (ms). */
  readonly noDatesMs: number
  readonly proxyRates: FaultRates
  readonly proxyDelayMs: readonly [number, number]
  /** A call may outlast its bound (waitMs, timeoutMs) by this much before it counts as a violation. */
  readonly boundSlackMs: number
  /** Fewer acquisitions than this fails the run: it did not exercise the lock enough. */
  readonly minAcquisitions: number
  readonly seed: number
  readonly reportDir: string
}

const FULL: Omit<SoakConfig, 'seed' | 'reportDir'> = {
  quick: false,
  durationMs: 600_000,
  workers: 16,
  keys: keyNames(12),
  objectsPerKey: 2,
  ttlMs: 3_000,
  marginMs: 500,
  requestTimeoutMs: 1_000,
  writeTimeoutMs: 3_000,
  maxSkewMs: 30_000,
  every: { kill: 12_000, pause: 15_000, rgwRestart: 100_000, noDates: 75_000 },
  pauseBeyondLeaseMs: [500, 4_000],
  noDatesMs: 4_000,
  proxyRates: {
    reset: 0.01,
    slowdown: 0.01,
    internal: 0.005,
    delay: 0.01,
    'no-date': 0.015,
    'lose-response': 0.005,
    'cut-body': 0.005,
  },
  proxyDelayMs: [100, 1_500],
  boundSlackMs: 1_500,
  minAcquisitions: 10_000,
}

/** At most three minutes in all, the engine's start included: for CI. */
const QUICK: Partial<SoakConfig> = {
  quick: true,
  durationMs: 90_000,
  every: { kill: 8_000, pause: 10_000, rgwRestart: 40_000, noDates: 30_000 },
  // A floor that proves the run did real work, low enough for a busy CI machine.
  minAcquisitions: 100,
}

/** No faults at all: the throughput the machine gives, to compare a run with faults against. */
const CALM: Partial<SoakConfig> = {
  every: {
    kill: Number.POSITIVE_INFINITY,
    pause: Number.POSITIVE_INFINITY,
    rgwRestart: Number.POSITIVE_INFINITY,
    noDates: Number.POSITIVE_INFINITY,
  },
  maxSkewMs: 0,
  proxyRates: {},
}

const USAGE = `usage: npm run soak -- [--quick] [--calm] [--duration SECONDS] [--workers N] [--keys N] [--seed N] [--out DIR] [--check EVENTS.jsonl]`

export type Command = { readonly check: string } | { readonly soak: SoakConfig }

export function parseCommand(argv: readonly string[]): Command {
  const { values } = parseArgs({
    args: [...argv],
    options: {
      quick: { type: 'boolean', default: false },
      calm: { type: 'boolean', default: false },
      duration: { type: 'string' },
      workers: { type: 'string' },
      keys: { type: 'string' },
      seed: { type: 'string' },
      out: { type: 'string' },
      check: { type: 'string' },
      help: { type: 'boolean', default: false },
    },
  })
  if (values.help) {
    console.info(USAGE)
    process.exit(0)
  }
  if (values.check) return { check: values.check }
  const profile = values.quick ? { ...FULL, ...QUICK } : FULL
  const base = values.calm ? { ...profile, ...CALM } : profile
  const duration = values.duration === undefined ? base.durationMs : Number(values.duration) * 1_000
  const seed = values.seed === undefined ? Math.floor(Math.random() * 2 ** 31) : Number(values.seed)
  const workers = values.workers === undefined ? base.workers : Number(values.workers)
  const keyCount = values.keys === undefined ? base.keys.length : Number(values.keys)
  const counts = [workers, keyCount].every((n) => Number.isSafeInteger(n) && n >= 1)
  if (!(duration > 0) || !Number.isSafeInteger(seed) || !counts) throw new Error(USAGE)
  const keys = values.keys === undefined ? base.keys : keyNames(keyCount)
  // A shorter run than its profile's cannot be held to the profile's acquisition count.
  const minAcquisitions = Math.round((base.minAcquisitions * duration) / base.durationMs)
  // The quick run (CI) keeps its own folder, so that it never replaces a full run's results.
  const reportDir = values.out ?? (values.quick ? 'reports/soak-quick' : 'reports/soak')
  return { soak: { ...base, durationMs: duration, workers, keys, minAcquisitions, seed, reportDir } }
}

/** What the orchestrator passes a worker in `SOAK_WORKER` (JSON). */
export interface WorkerConfig
  extends Pick<
    SoakConfig,
    'keys' | 'objectsPerKey' | 'ttlMs' | 'marginMs' | 'requestTimeoutMs' | 'writeTimeoutMs'
  > {
  /** `w<slot>.<incarnation>`. */
  readonly id: string
  readonly log: string
  readonly endpoint: string
  readonly bucket: string
  /** The worker's local clock runs this far ahead of the true one (negative: behind). */
  readonly offsetMs: number
  readonly seed: number
}

/** The soak's keys, `k0` to `k<count - 1>`. */
function keyNames(count: number): string[] {
  return Array.from({ length: count }, (_, i) => `k${i}`)
}

/** The lock object of a soak key. */
export function lockKeyOf(key: string): string {
  return `soak/locks/${key}`
}

/** The data objects that holders of `key` write. */
export function objectsOf(key: string, count: number): string[] {
  return Array.from({ length: count }, (_, i) => `soak/data/${key}/${i}`)
}
