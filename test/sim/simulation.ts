import { Lock } from '../../lib/core/lock.js'
import { AcquireStatus } from '../../lib/core/lock-options.js'
import { ExecOnHeld } from '../../lib/exec/settings.js'
import { OnHeld } from '../../lib/lifecycle/options.js'
import { LockOperator } from '../../lib/operator/lock-operator.js'
import {
  coreContender,
  exclusiveContender,
  LambdaFunction,
  operator,
  type Stage,
  type Tick,
  tamperer,
} from './actors.js'
import { type ExecHost, execHost } from './exec-actor.js'
import { holdingOf, Oracle, type Violation } from './oracle.js'
import { SimS3 } from './sim-s3.js'
import { NO_FAULTS, SimStore, type StoreFaults } from './sim-store.js'
import { Random, type SimProcess, World } from './world.js'

/** Who takes part in one schedule, and which faults strike: all drawn from the seed. */
export interface Scenario {
  readonly seed: number
  readonly durationMs: number
  readonly marginMs: number
  readonly core: readonly { calls: number; heartbeat: boolean; ttlMs: number }[]
  readonly exclusive: readonly { ttlMs: number }[]
  readonly functions: readonly {
    onHeld: OnHeld
    ttlMs: number | undefined
    timeoutMs: number
    historySize: number
  }[]
  /** Hosts running `lambda-singleton exec` from cron. */
  readonly exec: readonly ExecHost[]
  readonly tickEveryMs: number
  /** Chance a tick is delivered twice, and that the duplicate shares the request id. */
  readonly duplicates: number
  readonly operatorEveryMs: number | undefined
  readonly tamperEveryMs: number | undefined
  readonly crashEveryMs: number | undefined
  readonly freezeEveryMs: number | undefined
  /** Chance that a process freezes as an S3 answer reaches it (between fencedPut's read and write). */
  readonly freezeOnAnswer: number
  readonly faults: StoreFaults
}

export interface Outcome {
  readonly scenario: Scenario
  readonly violations: readonly Violation[]
  readonly trace: readonly string[]
  readonly steps: number
}

/** The scenario a seed stands for. */
export function scenarioOf(seed: number): Scenario {
  const random = new Random(seed ^ 0x5eed)
  const some = <T>(max: number, make: () => T) => Array.from({ length: random.int(0, max) }, make)
  const marginMs = random.pick([500, 1_000, 2_000])
  // Leases long enough for their default heartbeat (a third of the ttl) to fit above the margin.
  const ttl = () => random.pick([3_000, 6_000, 9_000].map((ms) => Math.max(ms, marginMs * 2 + 3_000)))
  const faultsOn = random.chance(0.8)
  const p = (max: number) => (faultsOn ? random.next() * max : 0)
  return {
    seed,
    durationMs: random.int(30_000, 90_000),
    marginMs,
    core: some(3, () => ({ calls: random.pick([1, 1, 2, 3]), heartbeat: random.chance(0.5), ttlMs: ttl() })),
    exclusive: some(2, () => ({ ttlMs: ttl() })),
    functions: some(3, () => ({
      onHeld: random.pick([OnHeld.Skip, OnHeld.Skip, OnHeld.Replace, OnHeld.Fail]),
      ttlMs: random.chance(0.5) ? ttl() : undefined,
      // Some invocations are long jobs (a minute), held to their deadline: what a replacer meets.
      timeoutMs: random.pick([4_000, 8_000, 15_000, 60_000]),
      historySize: random.pick([0, 3, 10]),
    })),
    exec: random.chance(0.3)
      ? some(2, () => ({
          onHeld: random.pick(Object.values(ExecOnHeld)),
          ttlMs: ttl(),
          killAfterMs: random.pick([500, 2_000, 10_000]),
          ticks: random.chance(0.5),
          everyMs: random.pick([3_000, 5_000, 10_000]),
        }))
      : [],
    tickEveryMs: random.pick([2_000, 5_000, 10_000]),
    duplicates: random.next() * 0.5,
    operatorEveryMs: random.chance(0.4) ? random.int(3_000, 20_000) : undefined,
    tamperEveryMs: random.chance(0.15) ? random.int(10_000, 40_000) : undefined,
    crashEveryMs: random.chance(0.5) ? random.int(3_000, 20_000) : undefined,
    freezeEveryMs: random.chance(0.4) ? random.int(3_000, 20_000) : undefined,
    freezeOnAnswer: p(0.2),
    faults: {
      lostRequest: p(0.03),
      lostAnswer: p(0.05),
      unavailable: p(0.05),
      conflict: p(0.05),
      missingDate: p(0.02),
      slow: p(0.05),
      absentAsPreconditionFailed: random.chance(0.5),
      etagIsDigest: random.chance(0.7),
      mapsNeverEqual: random.chance(0.1),
      // From a generator of its own: the worlds drawn before this fault existed stay as they were.
      partition: partitionOf(seed),
    },
  }
}

/** How often a request starts a partition in world `seed`: in a third of the worlds, at most 1 %. */
function partitionOf(seed: number): number {
  const random = new Random(seed ^ 0x9a27)
  return random.chance(1 / 3) ? random.next() * 0.05 : 0
}

/** Runs one scenario to its end, then the liveness check with the faults stopped. */
export async function simulate(scenario: Scenario, options: { keepTrace?: boolean } = {}): Promise<Outcome> {
  const world = new World(scenario.seed)
  const store = new SimStore(world, scenario.faults)
  const key = 'jobs/sim'
  const s3 = new SimS3(world, () => store.faults, scenario.freezeOnAnswer, new Random(scenario.seed ^ 0x401d))
  const oracle = new Oracle(world, store, key, s3)
  const trace: string[] = []
  const endAt = world.now + scenario.durationMs
  const stage: Stage = {
    world,
    store,
    s3,
    oracle,
    key,
    marginMs: scenario.marginMs,
    endAt,
    trace: (line) => {
      if (options.keepTrace) trace.push(`${((world.now - 1_800_000_000_000) / 1000).toFixed(3)}s ${line}`)
    },
  }
  store.onWrite = (write) => stage.trace(`store: ${write.kind} by ${write.by}: ${summary(write.body)}`)
  // The S3 network holds the PUTs of holders a newer lease at the store superseded (read lazily:
  // only fenced writes ask).
  let newestToken = 0
  let read = 0
  s3.superseded = (token) => {
    for (; read < store.log.length; read++) {
      const write = store.log[read]
      if (write?.kind === 'create' || write?.kind === 'replace')
        newestToken = Math.max(newestToken, tokenIn(write.body))
    }
    return token < newestToken
  }
  s3.onFreeze = (process, forMs) => stage.trace(`${process.name} frozen for ${forMs} ms as an S3 answer came`)
  s3.onHold = (process, forMs, superseded) =>
    stage.trace(
      `s3: a PUT by ${process.name}${superseded ? ', whose lease was superseded,' : ''} is held on its way for ${forMs} ms`,
    )
  s3.onWrite = (write) => stage.trace(`s3: ${write.key} written by ${write.by} with token ${write.token}`)
  // The library's own jitter falls back on Math.random where no `random` is passed (the
  // lifecycle's locks): the seed drives it too.
  const mathRandom = Math.random
  Math.random = () => world.random.next()
  try {
    const processes: SimProcess[] = []
    const spawn = (name: string) => {
      const process = world.process(
        name,
        world.random.int(-30_000, 30_000),
        (world.random.next() - 0.5) * 0.002,
      )
      processes.push(process)
      return process
    }
    const running: Promise<unknown>[] = []
    scenario.core.forEach((options, i) => {
      running.push(...coreContender(stage, spawn(`core${i}`), options))
    })
    scenario.exclusive.forEach((options, i) => {
      running.push(exclusiveContender(stage, spawn(`exclusive${i}`), options))
    })
    const functions = scenario.functions.map((options, i) => new LambdaFunction(stage, `fn${i}`, options))
    if (functions.length > 0) running.push(cron(stage, scenario, functions))
    const wrappers: SimProcess[] = []
    scenario.exec.forEach((host, i) => {
      running.push(execHost(stage, `exec${i}`, host, wrappers))
    })
    if (scenario.operatorEveryMs) running.push(operator(stage, scenario.operatorEveryMs))
    if (scenario.tamperEveryMs) running.push(tamperer(stage, scenario.tamperEveryMs))
    const everyone = () => [...processes, ...functions.map((fn) => fn.process)]
    // An exec wrapper can be killed (kill -9, the OOM killer), not frozen alone: a host or a
    // container that stops stops the command with it.
    const crashable = () => [...everyone(), ...wrappers]
    if (scenario.crashEveryMs) running.push(strikes(stage, scenario.crashEveryMs, crashable, crash))
    if (scenario.freezeEveryMs)
      running.push(strikes(stage, scenario.freezeEveryMs, everyone, freezeFor(stage)))
    for (const promise of running) promise.catch((error) => oracle.fail('errors', `an actor threw: ${error}`))

    await world.runUntil(endAt, () => oracle.check())
    store.faults = { ...NO_FAULTS, etagIsDigest: scenario.faults.etagIsDigest }
    // Let what is under way finish (leases run out, releases land), then a newcomer must get in.
    await world.runUntil(endAt + 60_000, () => oracle.check())
    // On an engine that cannot evaluate the conditions (dynalite's maps), nothing can be promised
    // but that it is said: I6 does not apply.
    if (!scenario.faults.mapsNeverEqual) await liveness(stage)
    return { scenario, violations: oracle.violations, trace, steps: world.steps }
  } finally {
    Math.random = mathRandom
  }
}

/** Delivers each tick to one function, sometimes twice (at least once delivery), sometimes late. */
async function cron(stage: Stage, scenario: Scenario, functions: readonly LambdaFunction[]): Promise<void> {
  const { world } = stage
  let due = world.now + scenario.tickEveryMs
  let request = 0
  while (due < stage.endAt) {
    await new Promise<void>((resolve) => world.at(due, undefined, resolve))
    const tick: Tick = { id: new Date(due).toISOString(), due }
    const fn = world.random.pick(functions)
    const requestId = `req-${request++}`
    void fn.invoke(tick, requestId)
    if (world.random.chance(scenario.duplicates)) {
      const again = world.random.chance(0.5) ? fn : world.random.pick(functions)
      const sameId = again === fn && world.random.chance(0.5)
      const delay = world.random.int(0, 3_000)
      world.at(world.now + delay, undefined, () => {
        void again.invoke(tick, sameId ? requestId : `req-${request++}`)
      })
    }
    due += scenario.tickEveryMs
  }
}

/** Every `everyMs` or so, strikes one live process: `strike` crashes or freezes it. */
async function strikes(
  stage: Stage,
  everyMs: number,
  everyone: () => SimProcess[],
  strike: (victim: SimProcess) => string,
): Promise<void> {
  const { world } = stage
  while (world.now < stage.endAt) {
    await new Promise<void>((resolve) =>
      world.at(world.now + world.random.int(everyMs / 2, everyMs), undefined, resolve),
    )
    const victim = world.random.pick(everyone())
    if (victim?.alive) stage.trace(`${victim.name} ${strike(victim)}`)
  }
}

const crash = (victim: SimProcess): string => {
  victim.crash()
  return 'crashed'
}

const freezeFor =
  (stage: Stage) =>
  (victim: SimProcess): string => {
    const forMs = stage.world.random.int(500, 20_000)
    victim.freeze(forMs)
    return `frozen for ${forMs} ms`
  }

/**
 * I6: with the faults stopped and every run over, a newcomer gets the lock (after resuming the
 * job, should an operator have left it paused) within the longest lease plus twice the margin.
 */
async function liveness(stage: Stage): Promise<void> {
  const { world, oracle } = stage
  const process = world.process('newcomer')
  const lock = new Lock({
    store: stage.store.for(process),
    key: stage.key,
    owner: 'newcomer',
    ttlMs: 5_000,
    clockSkewMarginMs: stage.marginMs,
    clock: process.clock,
    random: () => world.random.next(),
  })
  let outcome = 'pending'
  const attempt = (async () => {
    const operator = new LockOperator({
      store: stage.store.for(process),
      key: stage.key,
      operator: 'newcomer',
      clockSkewMarginMs: stage.marginMs,
      clock: process.clock,
      random: () => world.random.next(),
    })
    await operator.resume().catch(() => undefined)
    const acquisition = await lock.tryAcquire({ waitMs: 30_000 })
    outcome = acquisition.status
    if (acquisition.status === AcquireStatus.Acquired) {
      oracle.handOut(holdingOf(acquisition.lease), process, 'newcomer')
      await acquisition.lease.release()
    }
  })().catch((error: unknown) => {
    outcome = `error: ${error instanceof Error ? error.message : String(error)}`
  })
  void attempt
  await world.runUntil(world.now + 40_000, () => oracle.check())
  if (outcome !== AcquireStatus.Acquired) {
    oracle.fail('I6', `with the faults stopped, a newcomer did not get the lock within 30 s: ${outcome}`)
  }
}

/** The token a record body carries, or 0. */
function tokenIn(body: string | undefined): number {
  try {
    const { token } = JSON.parse(body ?? '') as { token?: unknown }
    return typeof token === 'number' && Number.isSafeInteger(token) ? token : 0
  } catch {
    return 0
  }
}

/** The fields of a record body that tell what a write did, for the trace. */
function summary(body: string | undefined): string {
  if (body === undefined) return '(none)'
  try {
    const { token, expires_at, owner, paused, replaced } = JSON.parse(body) as Record<string, unknown>
    const until =
      expires_at === 0
        ? 'released'
        : `expires ${((Number(expires_at) * 1000 - 1_800_000_000_000) / 1000).toFixed(3)}s`
    return `token ${token} ${until} owner ${owner}${paused ? ' paused' : ''}${replaced ? ` replaced ${JSON.stringify(replaced)}` : ''}`
  } catch {
    return body.slice(0, 80)
  }
}
