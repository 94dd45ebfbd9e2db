/**
 * The peer comparison: each way of keeping a scheduled job from overlapping, driven through the
 * same invocations in one interleaved run. Each "container" is one Lambda execution environment
 * with its own SDK client, so a count is what that environment sent.
 */
import { setTimeout as sleep } from 'node:timers/promises'
import { interleave, type Measured, median, timed } from '../measure.js'
import { type Container, type Contender, type Invocation, Outcome, tick } from './contender.js'

export interface PeerRow {
  readonly label: string
  readonly on: ReadonlyMap<Contender, Measured>
}

export interface TakeoverTimes {
  /** Milliseconds from the crashed run's start to the next run's start, sorted. */
  readonly afterMs: readonly number[]
  readonly medianMs: number
}

const RUN_MS = 60_000 // what a run's context says is left of its invocation
let ticks = 0
/** The next Scheduler tick: later than every one before it in this process. */
export const nextTick = () => tick(ticks++)
const noWork = async () => undefined

/** Every container made, closed at the end (crashed ones never finish on their own). */
const containers: Container[] = []
export function containerOf(contender: Contender): Container {
  const made = contender.container()
  containers.push(made)
  return made
}
export function closeContainers(): void {
  for (const container of containers.splice(0)) container.close()
}

/** A job that starts, signals it, and waits until let go. */
function gatedWork() {
  let started!: () => void
  let letGo!: () => void
  const hasStarted = new Promise<void>((resolve) => {
    started = resolve
  })
  const gate = new Promise<void>((resolve) => {
    letGo = resolve
  })
  const work = () => {
    started()
    return gate
  }
  return { hasStarted, letGo, work }
}

/** One invocation in `container`, timed and counted. */
async function sampleInvoke(container: Container, invocation: Invocation, expected?: Outcome) {
  const {
    ms,
    operations,
    units,
    value: outcome,
  } = await timed(container.requests, () => container.invoke(invocation), container.units)
  if (expected && outcome !== expected)
    throw new Error(`${invocation.job}: expected ${expected}, got ${outcome}`)
  return { ms, operations, ...(units && { units }), outcome }
}

export async function comparePeers(
  contenders: readonly Contender[],
  rounds: number,
  heldRounds: number,
): Promise<PeerRow[]> {
  const rows: PeerRow[] = []
  const row = async (label: string, measured: Promise<Map<Contender, Measured>>) => {
    rows.push({ label, on: await measured })
  }

  const warm = new Map(contenders.map((c) => [c, containerOf(c)]))
  for (const [, container] of warm) {
    for (let i = 0; i < 3; i++) await container.invoke(run('warm'))
  }
  await row(
    'a run, warm container',
    interleave(contenders, rounds, (c) => sampleInvoke(warm.get(c) as Container, run('warm'), Outcome.Ran)),
  )

  for (const c of contenders) await containerOf(c).invoke(run('cold'))
  // Each new container starts at a random point of the second (unmeasured), as cold starts do:
  // one right after another would start just after the turn of the second its probes found.
  await row(
    'a run, new container (random phase)',
    interleave(contenders, rounds, async (c) => {
      const container = containerOf(c)
      await sleep(Math.random() * 1_000)
      return sampleInvoke(container, run('cold'), Outcome.Ran)
    }),
  )

  await heldRows(contenders, rounds, heldRounds, row)
  return rows
}

type AddRow = (label: string, measured: Promise<Map<Contender, Measured>>) => Promise<void>

/** Rows where another environment is invoked while (or after) a holder runs the job. */
async function heldRows(contenders: readonly Contender[], rounds: number, heldRounds: number, row: AddRow) {
  // A holder and a second environment per contender, both kept warm across rounds.
  const pairs = new Map(contenders.map((c) => [c, { holder: containerOf(c), other: containerOf(c) }]))
  const whileHeld = (job: string, sameTick: boolean) =>
    interleave(contenders, heldRounds, async (c) => {
      const { holder, other } = pairs.get(c) as { holder: Container; other: Container }
      const held = nextTick()
      const gated = gatedWork()
      const holding = holder.invoke({ job, event: held, remainingMs: RUN_MS, work: gated.work })
      await gated.hasStarted
      const event = sameTick ? held : nextTick()
      const sample = await sampleInvoke(other, { job, event, remainingMs: RUN_MS, work: noWork })
      gated.letGo()
      await holding
      return sample
    })
  await row('the same tick again, while it runs', whileHeld('dup-running', true))
  await row('the next tick, while a run holds the lock', whileHeld('next-running', false))

  await row(
    'the same tick again, after it completed',
    interleave(contenders, rounds, async (c) => {
      const { holder, other } = pairs.get(c) as { holder: Container; other: Container }
      const done = nextTick()
      await holder.invoke({ job: 'dup-done', event: done, remainingMs: RUN_MS, work: noWork })
      return sampleInvoke(other, { job: 'dup-done', event: done, remainingMs: RUN_MS, work: noWork })
    }),
  )
}

function run(job: string): Invocation {
  return { job, event: nextTick(), remainingMs: RUN_MS, work: noWork }
}

/**
 * Takeover after a crash: a run starts with `ttlMs` left of its invocation (or a lease of
 * `ttlMs`) and its process dies; a redelivery of the same tick is tried every `pollMs` in
 * another environment until it runs. `trials` crashes at once, on jobs of their own, started at
 * different phases of the second.
 */
export async function measureCrashTakeover(
  contender: Contender,
  ttlMs: number,
  trials: number,
  pollMs = 100,
): Promise<TakeoverTimes> {
  const afterMs = await Promise.all(
    Array.from({ length: trials }, async (_, trial) => {
      await sleep(Math.floor((trial * 1_000) / trials) + Math.floor(Math.random() * 50))
      const job = `takeover-${trial}-${Date.now()}`
      const event = nextTick()
      const crashed = containerOf(contender)
      const next = containerOf(contender)
      const started = gatedWork()
      const startedAt = performance.now()
      void crashed.invoke({ job, event, remainingMs: ttlMs, work: started.work, crashes: true })
      await started.hasStarted
      for (;;) {
        await sleep(pollMs)
        const outcome = await next.invoke({ job, event, remainingMs: RUN_MS, work: noWork })
        if (outcome === Outcome.Ran) return performance.now() - startedAt
      }
    }),
  )
  const sorted = afterMs.sort((a, b) => a - b)
  return { afterMs: sorted, medianMs: median(sorted) }
}
