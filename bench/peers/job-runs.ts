/**
 * A 50 ms job, run after run: what each peer adds to an invocation's wall time (acquire,
 * handler, release, minus the handler's own time) and what it sends, in three rows, each one
 * interleaved run of every peer:
 *
 * - a warm container invoked at a fixed phase of the second, as a cron's invocations arrive
 *   (every minute at the same sub-second phase; here every 2 s, or every few whole seconds
 *   when a round of all the peers takes longer);
 * - a warm container invoked back to back;
 * - a new process per run (new-process.ts), timed from just before the first lock call.
 *
 * lambda-singleton waits for its fencing token until the store's clock has surely passed it,
 * as long as its estimate of that clock is wide, and answers dated in whole seconds that always
 * arrive at the same phase of the second never narrow it: the first row shows that wait run
 * after run, and its first runs against its later ones.
 */
import { spawn } from 'node:child_process'
import { setTimeout as sleep } from 'node:timers/promises'
import { fileURLToPath } from 'node:url'
import type { PeerId, PeerSetup } from './all.js'
import { containerOf, nextTick } from './compare.js'
import type { Container, Contender } from './contender.js'
import { type JobRun, type JobShape, runJob } from './job.js'

export interface JobRow {
  readonly label: string
  /** The label in a few words, for the Markdown table. */
  readonly short: string
  /** How the runs were timed, in a line. */
  readonly how: string
  /** Each peer's runs, in the order they ran. */
  readonly on: ReadonlyMap<Contender, readonly JobRun[]>
}

/** A run in a new process, with what it took that process to get ready for it. */
export interface ProcessRun extends JobRun {
  /** Importing the bench's engine helpers and the peer's modules (through tsx). */
  readonly loadMs: number
  /** Making the peer's client, store and handler. */
  readonly clientMs: number
}

export interface JobRunOptions {
  /** Rounds of the fixed-phase row. */
  readonly phaseRounds: number
  /** A round of the fixed-phase row starts on a multiple of this (whole seconds). */
  readonly periodMs: number
  /** Rounds of the back-to-back row. */
  readonly burstRounds: number
  /** New processes per peer. */
  readonly processes: number
}

/** The first peer's phase (ms past the second) in the fixed-phase row; each next one is a step later. */
export const FIRST_PHASE_MS = 120

export const PHASE_STEP_MS = 150

export async function measureJobRuns(
  contenders: ReadonlyMap<Contender, PeerId>,
  setup: PeerSetup,
  options: JobRunOptions,
): Promise<JobRow[]> {
  const peers = [...contenders.keys()]
  // Every lock exists and is released before its first measured run, as a cron's does after its
  // first tick; the container that did it is not used again.
  for (const job of ['fixed-phase', 'back-to-back', 'new-process'])
    for (const c of peers) await runJob(containerOf(c), job, nextTick())
  return [
    await fixedPhase(peers, options),
    await backToBack(peers, options.burstRounds),
    await newProcesses(contenders, setup, options.processes),
  ]
}

const seconds = (ms: number) => (ms / 1_000).toFixed(1)
const runsOf = (peers: readonly Contender[]) => new Map(peers.map((c): [Contender, JobRun[]] => [c, []]))

/** The first instant at or after `notBefore` (epoch ms) that is `phaseMs` past a second. */
function atPhase(notBefore: number, phaseMs: number): number {
  const at = Math.floor(notBefore / 1_000) * 1_000 + phaseMs
  return at >= notBefore ? at : at + 1_000
}

/**
 * One new container per peer, invoked once per round, each peer at its own phase of the second
 * (120, 270, 420… ms past it), always the same: in the first second of the round (which starts
 * at the first multiple of `periodMs` after the round before it ended) or, when the peer before
 * it ran into that second, the first second after. The order within a round is fixed, so that
 * each peer keeps its phase; when every peer is done within `periodMs`, each is invoked every
 * `periodMs` exactly, otherwise every few whole seconds, at the same phase all the same.
 */
async function fixedPhase(peers: readonly Contender[], options: JobRunOptions): Promise<JobRow> {
  const { phaseRounds, periodMs } = options
  const containers = new Map(peers.map((c) => [c, containerOf(c)]))
  const runs = runsOf(peers)
  for (let round = 0; round < phaseRounds; round++) {
    let notBefore = Math.ceil((Date.now() + 5) / periodMs) * periodMs
    for (const [i, c] of peers.entries()) {
      const at = atPhase(Math.max(notBefore, Date.now() + 5), FIRST_PHASE_MS + i * PHASE_STEP_MS)
      await sleep(at - Date.now())
      runs.get(c)?.push(await runJob(containers.get(c) as Container, 'fixed-phase', nextTick()))
      notBefore = Date.now()
    }
  }
  const apart = [...runs.values()].flatMap((taken) =>
    taken.slice(1).map((run, i) => run.startedAt - (taken[i]?.startedAt ?? Number.NaN)),
  )
  return {
    label: 'a 50 ms job, warm container, invoked at a fixed phase of the second',
    short: 'warm, fixed phase',
    how:
      `each peer at its own phase, ${FIRST_PHASE_MS}, ${FIRST_PHASE_MS + PHASE_STEP_MS}… ms past the second, ` +
      `a round from the first multiple of ${periodMs / 1_000} s after the last one ended (a peer's runs were ` +
      `${seconds(Math.min(...apart))}–${seconds(Math.max(...apart))} s apart)`,
    on: runs,
  }
}

/** One new container per peer, invoked again as soon as the peer before it in the round is done. */
async function backToBack(peers: readonly Contender[], rounds: number): Promise<JobRow> {
  const containers = new Map(peers.map((c) => [c, containerOf(c)]))
  const runs = runsOf(peers)
  for (let round = 0; round < rounds; round++) {
    for (let i = 0; i < peers.length; i++) {
      const c = peers[(round + i) % peers.length] as Contender
      runs.get(c)?.push(await runJob(containers.get(c) as Container, 'back-to-back', nextTick()))
    }
  }
  return {
    label: 'a 50 ms job, warm container, invoked back to back',
    short: 'warm, back to back',
    how: 'each invocation as soon as the one before it (of any peer, in turn) is done',
    on: runs,
  }
}

const NEW_PROCESS_SCRIPT = fileURLToPath(new URL('./new-process.ts', import.meta.url))
const NEW_PROCESS_TIMEOUT_MS = 60_000

/** What new-process.ts is given, as JSON in its one argument. */
export interface NewProcessTask {
  readonly id: PeerId
  readonly setup: PeerSetup
  readonly job: string
  readonly event: ReturnType<typeof nextTick>
  /** The first lock call starts at this many ms past the second. */
  readonly phaseMs: number
  /** The handler. @default FENCES_AT_ONCE */
  readonly shape?: JobShape
}

/**
 * `processes` new processes per peer, one at a time, the peers in turn; the k-th of each peer
 * starts its run at k/processes of the way through a second (plus 60 ms), so the phases spread
 * over the second.
 */
async function newProcesses(
  contenders: ReadonlyMap<Contender, PeerId>,
  setup: PeerSetup,
  processes: number,
): Promise<JobRow> {
  const peers = [...contenders.keys()]
  const runs = runsOf(peers)
  for (let round = 0; round < processes; round++) {
    const phaseMs = (60 + Math.floor((round * 1_000) / processes)) % 1_000
    for (let i = 0; i < peers.length; i++) {
      const c = peers[(round + i) % peers.length] as Contender
      const id = contenders.get(c) as PeerId
      runs.get(c)?.push(await inNewProcess({ id, setup, job: 'new-process', event: nextTick(), phaseMs }))
    }
  }
  return {
    label: 'a 50 ms job, new process',
    short: 'new process',
    how:
      'timed from just before the first lock call (node, tsx and the modules already loaded), ' +
      'phases spread over the second',
    on: runs,
  }
}

/**
 * Runs `task` in a new Node.js process, through tsx as the bench itself runs: lambda-singleton
 * from its source, or, with BENCH_COLD_BUILT=1, as built (dist/, after `npm run build`), as a
 * user's function loads it. BENCH_NODE_FLAGS: flags for those processes' node (`--no-lazy`
 * compiles every function as it loads, which shows what a cold run's lazy compilation costs).
 */
export function inNewProcess(task: NewProcessTask): Promise<ProcessRun> {
  const args = [
    ...(process.env.BENCH_NODE_FLAGS?.split(' ').filter(Boolean) ?? []),
    ...(process.env.BENCH_COLD_BUILT === '1' ? [] : ['--conditions=lambda-singleton-source']),
    '--import',
    'tsx',
    NEW_PROCESS_SCRIPT,
    JSON.stringify(task),
  ]
  return new Promise((resolve, reject) => {
    // Inside Lambda as far as the library can tell: a handler made at start learns the store's clock.
    const env = { ...process.env, AWS_LAMBDA_FUNCTION_NAME: task.job }
    const child = spawn(process.execPath, args, { stdio: ['ignore', 'pipe', 'pipe'], env })
    let stdout = ''
    let stderr = ''
    child.stdout.on('data', (chunk) => {
      stdout += chunk
    })
    child.stderr.on('data', (chunk) => {
      stderr += chunk
    })
    const timer = setTimeout(() => child.kill('SIGKILL'), NEW_PROCESS_TIMEOUT_MS)
    child.on('error', reject)
    child.on('close', (code, signal) => {
      clearTimeout(timer)
      const last = stdout.trim().split('\n').at(-1) ?? ''
      if (code !== 0 || !last.startsWith('{')) {
        reject(new Error(`${task.id} in a new process: exit ${code ?? signal}\n${stderr}${stdout}`))
        return
      }
      const parsed = JSON.parse(last) as Omit<ProcessRun, 'operations' | 'extra' | 'units'> & {
        operations: [string, number][]
        extra: [string, number][] | null
        units: [string, number][] | null
      }
      resolve({
        ...parsed,
        operations: new Map(parsed.operations),
        extra: parsed.extra ? new Map(parsed.extra) : undefined,
        units: parsed.units ? new Map(parsed.units) : undefined,
      })
    })
  })
}
