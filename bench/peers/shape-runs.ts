/**
 * The three handlers users write (job.ts, JOB_SHAPES): one that never reads its fencing token,
 * one that reads it after a second of work, one that reads it at once. Each in three rows, every
 * peer interleaved in each: a new process per run (cold), a warm container invoked back to back,
 * and, when asked for (it takes `cronRuns` minutes), a warm container invoked every 60 s at a
 * fixed phase of the second, as a cron's invocations arrive. Only lambda-singleton reads a token;
 * the peers run the same work. A fourth row per handler, warm at a fixed phase every few seconds (as
 * often as the peers in turn allow), is the frequent schedule's.
 */
import { setTimeout as sleep } from 'node:timers/promises'
import type { PeerId, PeerSetup } from './all.js'
import { containerOf, nextTick } from './compare.js'
import type { Container, Contender } from './contender.js'
import { JOB_SHAPES, type JobRun, type JobShape, runJob } from './job.js'
import { inNewProcess, type JobRow } from './job-runs.js'

export interface ShapeRunOptions {
  /** New processes per peer and handler. */
  readonly processes: number
  /** Warm runs back to back per peer and handler. */
  readonly burstRounds: number
  /** Warm runs every 60 s per peer and handler; 0 leaves that row out. */
  readonly cronRuns: number
}

const MINUTE_MS = 60_000
/** Slots of the every-minute row start this far apart, so that a 1 s job fits in each. */
const SLOT_MS = 1_500
/** Each slot starts this many ms past a second, always the same. */
const SLOT_PHASE_MS = 120

export async function measureShapes(
  contenders: ReadonlyMap<Contender, PeerId>,
  setup: PeerSetup,
  options: ShapeRunOptions,
): Promise<JobRow[]> {
  const peers = [...contenders.keys()]
  const rows: JobRow[] = []
  for (const shape of JOB_SHAPES) {
    rows.push(await cold(contenders, setup, shape, options.processes))
    rows.push(await warmBackToBack(peers, shape, options.burstRounds))
    rows.push(await everyFewSeconds(peers, shape, options.burstRounds))
  }
  if (options.cronRuns > 0) rows.push(...(await everyMinute(peers, options.cronRuns)))
  return rows
}

const jobOf = (shape: JobShape) => `shape-${shape.token}`

/** A new process per run, the peers in turn, phases spread over the second. */
async function cold(
  contenders: ReadonlyMap<Contender, PeerId>,
  setup: PeerSetup,
  shape: JobShape,
  processes: number,
): Promise<JobRow> {
  const peers = [...contenders.keys()]
  const on = new Map(peers.map((c): [Contender, JobRun[]] => [c, []]))
  for (let round = 0; round < processes; round++) {
    const phaseMs = (60 + Math.floor((round * 1_000) / processes)) % 1_000
    for (let i = 0; i < peers.length; i++) {
      const c = peers[(round + i) % peers.length] as Contender
      const id = contenders.get(c) as PeerId
      on.get(c)?.push(await inNewProcess({ id, setup, job: jobOf(shape), event: nextTick(), phaseMs, shape }))
    }
  }
  return {
    label: `a handler that ${shape.name}, new process`,
    short: `${shape.name}: new process`,
    how: 'timed from just before the first lock call (node, tsx and the modules already loaded), phases spread over the second',
    on,
  }
}

/** One warm container per peer, invoked again as soon as the one before it is done. */
async function warmBackToBack(peers: readonly Contender[], shape: JobShape, rounds: number): Promise<JobRow> {
  const containers = new Map(peers.map((c) => [c, containerOf(c)]))
  const on = new Map(peers.map((c): [Contender, JobRun[]] => [c, []]))
  for (const c of peers) await runJob(containers.get(c) as Container, jobOf(shape), nextTick(), shape) // warm up
  for (let round = 0; round < rounds; round++) {
    for (let i = 0; i < peers.length; i++) {
      const c = peers[(round + i) % peers.length] as Contender
      on.get(c)?.push(await runJob(containers.get(c) as Container, jobOf(shape), nextTick(), shape))
    }
  }
  return {
    label: `a handler that ${shape.name}, warm, back to back`,
    short: `${shape.name}: warm, back to back`,
    how: 'each invocation as soon as the one before it (of any peer, in turn) is done',
    on,
  }
}

/**
 * One warm container per peer, each invoked at a fixed phase of the second as often as the peers
 * in turn allow (a slot of `SLOT_MS` each: every 8 s for five peers): a frequent schedule, where
 * the drift allowed between runs is a few ms at most, as in the old every-2-s row.
 */
async function everyFewSeconds(peers: readonly Contender[], shape: JobShape, runs: number): Promise<JobRow> {
  const containers = new Map(peers.map((c) => [c, containerOf(c)]))
  const on = new Map(peers.map((c): [Contender, JobRun[]] => [c, []]))
  for (const c of peers) await runJob(containers.get(c) as Container, jobOf(shape), nextTick(), shape) // warm up
  const periodMs = Math.ceil((peers.length * SLOT_MS) / 1_000) * 1_000
  const start = Math.ceil((Date.now() + 1_000) / 1_000) * 1_000
  for (let round = 0; round < runs; round++) {
    for (const [i, c] of peers.entries()) {
      const at = start + round * periodMs + i * SLOT_MS + SLOT_PHASE_MS
      await sleep(Math.max(0, at - Date.now()))
      on.get(c)?.push(await runJob(containers.get(c) as Container, jobOf(shape), nextTick(), shape))
    }
  }
  return {
    label: `a handler that ${shape.name}, warm, every ${periodMs / 1_000} s at a fixed phase`,
    short: `${shape.name}: warm, every ${periodMs / 1_000} s`,
    how: `each peer in a slot of its own, ${SLOT_PHASE_MS} or ${SLOT_PHASE_MS + 500} ms past a second, every ${periodMs / 1_000} s`,
    on,
  }
}

/**
 * One warm container per peer and handler, each invoked once a minute in a slot of its own,
 * `SLOT_PHASE_MS` past a second, always the same: a cron's cadence. The first run of each (the
 * container's first, which also creates its lock) is a run like the others and is counted.
 */
async function everyMinute(peers: readonly Contender[], runs: number): Promise<JobRow[]> {
  const slots = JOB_SHAPES.flatMap((shape) => peers.map((c) => ({ shape, c, container: containerOf(c) })))
  const on = new Map(
    JOB_SHAPES.map((shape) => [shape, new Map(peers.map((c): [Contender, JobRun[]] => [c, []]))]),
  )
  const start = Math.ceil((Date.now() + 1_000) / 1_000) * 1_000
  for (let round = 0; round < runs; round++) {
    for (const [i, { shape, c, container }] of slots.entries()) {
      const at = start + round * MINUTE_MS + i * SLOT_MS + SLOT_PHASE_MS
      await sleep(Math.max(0, at - Date.now()))
      on.get(shape)
        ?.get(c)
        ?.push(await runJob(container, `cron-${shape.token}`, nextTick(), shape))
    }
  }
  return JOB_SHAPES.map((shape) => ({
    label: `a handler that ${shape.name}, warm, every 60 s at a fixed phase`,
    short: `${shape.name}: warm, every 60 s`,
    how: `each peer and handler in a slot of its own, ${SLOT_PHASE_MS} or ${SLOT_PHASE_MS + 500} ms past a second, once a minute; the first run counted`,
    on: on.get(shape) ?? new Map(),
  }))
}
