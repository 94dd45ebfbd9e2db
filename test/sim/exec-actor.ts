import { type ExecWorld, exec } from '../../lib/exec/adapter.js'
import { ExecOnHeld, type ExecSettings } from '../../lib/exec/settings.js'
import type { SignalSource } from '../../lib/exec/supervise.js'
import { ExitCode } from '../../lib/exit-codes.js'
import { type Stage, unexpected } from './actors.js'
import { type CommandPlan, type MemberPlan, SimGroup } from './sim-group.js'
import type { SimProcess } from './world.js'

/** How one host runs `lambda-singleton exec` on a schedule. */
export interface ExecHost {
  readonly onHeld: ExecOnHeld
  readonly ttlMs: number
  readonly killAfterMs: number
  /** `--tick` from the schedule (the docs' cron recipe), or none. */
  readonly ticks: boolean
  readonly everyMs: number
}

/**
 * A host that runs `exec` (the CLI's own function, lib/cli/exec.ts) on a schedule, as cron does:
 * a new wrapper process each time, whether or not the last one is done. Its command's group is
 * simulated (sim-group.ts): a shell that starts workers, some outliving it, some ignoring
 * SIGTERM. A container stop sometimes sends the wrapper SIGTERM, and a wrapper may be killed (a
 * crash) at any point: `wrappers` lists the live ones for the crash strikes. Its exit code must
 * tell the truth (I5).
 */
export async function execHost(
  stage: Stage,
  name: string,
  host: ExecHost,
  wrappers: SimProcess[],
): Promise<void> {
  const { world } = stage
  const offsetMs = world.random.int(-30_000, 30_000)
  const drift = (world.random.next() - 0.5) * 0.002
  let runs = 0
  while (world.now < stage.endAt) {
    const wait = world.random.int(host.everyMs / 2, host.everyMs)
    await new Promise<void>((resolve) => world.at(world.now + wait, undefined, resolve))
    if (world.now >= stage.endAt) return
    const process = world.process(`${name}.${runs}`, offsetMs, drift)
    wrappers.push(process)
    const due = world.now - (world.now % host.everyMs)
    void runOnce(stage, process, host, { id: `run-${runs++}`, tick: new Date(due).toISOString() }).finally(
      () => {
        wrappers.splice(wrappers.indexOf(process), 1)
      },
    )
  }
}

async function runOnce(
  stage: Stage,
  process: SimProcess,
  host: ExecHost,
  run: { id: string; tick: string },
): Promise<void> {
  const { world } = stage
  const line: ExecSettings = {
    argv: ['job.sh'],
    ttlMs: host.ttlMs,
    onHeld: host.onHeld,
    // Fail at once, or after a wait (what `--on-held wait` was).
    waitMs: host.onHeld === ExecOnHeld.Fail && world.random.chance(0.5) ? world.random.int(0, 5_000) : 0,
    tick: host.ticks ? run.tick : undefined,
    maxTickAgeMs: undefined,
    pauseAfterFailures: world.random.chance(0.2) ? 3 : undefined,
    killAfterMs: host.killAfterMs,
  }
  const listeners = new Set<(signal: NodeJS.Signals) => void>()
  const signals: SignalSource = {
    subscribe(listener) {
      listeners.add(listener)
      return () => listeners.delete(listener)
    },
  }
  const stopped = new AbortController()
  // A container stop: main.ts passes SIGTERM on while a command runs, and aborts otherwise.
  if (world.random.chance(0.1)) {
    process.clock.schedule(world.random.int(0, host.ttlMs * 2), () => {
      stage.trace(`${process.name} gets SIGTERM (${run.id})`)
      if (listeners.size > 0) for (const listener of listeners) listener('SIGTERM')
      else stopped.abort(new Error('SIGTERM'))
    })
  }
  const lines: string[] = []
  let group: SimGroup | undefined
  // Most missing programs are found missing before the lock is asked for; a few vanish between
  // that look and their start.
  const plan = commandPlan(stage, host)
  const missingAtLook = plan.missing && world.random.chance(0.7)
  const simWorld: ExecWorld = {
    clock: process.clock,
    signals,
    runId: () => run.id,
    locate: async () =>
      missingAtLook ? Object.assign(new Error('job.sh: not found in PATH'), { code: 'ENOENT' }) : undefined,
    start: () => (_argv, env) => {
      const token = Number(env.LAMBDA_SINGLETON_TOKEN)
      group = new SimGroup(world, process, plan, 1_000 + Number(run.id.slice(4)))
      stage.oracle.jobStarted(group, token, process, `${process.name}/${run.id}`, host.killAfterMs)
      stage.trace(`${process.name} starts job.sh with token ${token} (${run.id})`)
      return group
    },
  }
  const code = await exec(
    {
      settings: line,
      key: stage.key,
      operator: process.name,
      err: (text) => {
        lines.push(text)
        stage.trace(`${process.name} ${text}`)
      },
      signal: stopped.signal,
      store: stage.store.for(process),
    },
    simWorld,
  ).catch((error: unknown) => {
    // The CLI's main turns a typed error into its exit code; anything else is a bug.
    unexpected(stage, `${process.name} exec`, error)
    return undefined
  })
  stage.trace(`${process.name} exec exited ${code} (${run.id})`)
  // I5: a run that logged its lease lost does not exit as if all went well.
  const lost = lines.some((text) => text.includes('LEASE LOST'))
  if (lost && code === ExitCode.Ok) {
    stage.oracle.fail('I5', `${process.name}/${run.id} logged LEASE LOST and exited 0`)
  }
  if (group?.running && process.alive) {
    stage.oracle.fail('I6', `${process.name}/${run.id} exec returned while its command's processes still run`)
  }
}

/** A shell that starts up to two workers; some outlive it, some ignore SIGTERM. */
function commandPlan(stage: Stage, host: ExecHost): CommandPlan {
  const { random } = stage.world
  const member = (): MemberPlan => ({
    runsMs: random.int(100, host.ttlMs * 2),
    ignoresTerm: random.chance(0.3),
  })
  return {
    leader: member(),
    workers: Array.from({ length: random.int(0, 2) }, member),
    status: random.chance(0.8) ? 0 : 1,
    missing: random.chance(0.03),
  }
}
