import {
  LockConflictError,
  LockLostError,
  LockOptionsError,
  LockStoreError,
  LockTimeoutError,
} from '../../lib/core/errors.js'
import { keepAlive } from '../../lib/core/heartbeat.js'
import type { Lease } from '../../lib/core/lease.js'
import { Lock } from '../../lib/core/lock.js'
import { AcquireStatus, type RunRecorder } from '../../lib/core/lock-options.js'
import { withSingleton } from '../../lib/lambda/with-singleton.js'
import { LockHeldError } from '../../lib/lifecycle/errors.js'
import type { SingletonLogger } from '../../lib/lifecycle/logger.js'
import { OnHeld } from '../../lib/lifecycle/options.js'
import { leaseBehind } from '../../lib/lifecycle/run.js'
import { LockOperator } from '../../lib/operator/lock-operator.js'
import { FencedWriteRejectedError } from '../../lib/s3/fenced-put.js'
import { keepHistory } from '../../lib/schedule/history.js'
import { reportingTokens, TokenUse, tokenUse, writeOutput } from './fenced-output.js'
import { holdingOf, type Oracle } from './oracle.js'
import type { SimS3 } from './sim-s3.js'
import type { SimStore } from './sim-store.js'
import type { SimProcess, World } from './world.js'

/** What every actor is given: the world, the store, the oracle, the key, and when to stop. */
export interface Stage {
  readonly world: World
  readonly store: SimStore
  /** Where runs write their output with `fencedPut`. */
  readonly s3: SimS3
  readonly oracle: Oracle
  readonly key: string
  readonly marginMs: number
  /** True time after which actors start nothing new. */
  readonly endAt: number
  readonly trace: (line: string) => void
}

/** A handler's own failure, which the lifecycle hands back after releasing. */
class JobFailed extends Error {
  override name = 'JobFailed'
}

/** Errors a contender meets under faults and contention, and handles: anything else is a bug. */
function expected(error: unknown): boolean {
  return (
    error instanceof LockStoreError ||
    error instanceof LockLostError ||
    error instanceof LockTimeoutError ||
    error instanceof LockConflictError ||
    error instanceof LockHeldError ||
    error instanceof JobFailed ||
    error instanceof FencedWriteRejectedError ||
    (error instanceof Error && error.name === 'AbortError') ||
    (error instanceof Error && error.name === 'LockClockError')
  )
}

/** Fails the oracle for an error no caller can handle (the CLI maps the typed ones to exit codes). */
export function unexpected(stage: Stage, who: string, error: unknown): void {
  if (expected(error)) return
  const text = error instanceof Error ? `${error.name}: ${error.message}` : String(error)
  stage.oracle.fail('errors', `${who} failed with an error no caller can handle: ${text}`)
}

/** The work under a lease: a few steps, each stopping at once when the lease's signal aborts. */
async function work(
  stage: Stage,
  process: SimProcess,
  signal: AbortSignal,
  maxStepMs: number,
): Promise<void> {
  const { random } = stage.world
  const steps = random.int(1, 4)
  for (let step = 0; step < steps; step++) {
    if (signal.aborted) return
    await process.clock.sleep(random.int(50, maxStepMs), signal).catch(() => undefined)
  }
}

/**
 * A job's run recorder that grasps at the lease: it keeps history, and also tries to lower the
 * token, extend the term and take the ownership in the record it hands back. The lock writes the
 * lease's own fields after it (docs/guarantees.md, I1 and I2), so none of that may ever show.
 */
function graspingRecorder(size: number): RunRecorder {
  const keep = keepHistory(size)
  return (record, run) => ({
    ...keep(record, run),
    token: 1,
    expires_at: 9_999_999_999,
    owner: `${run.owner}/grasped`,
    run: 0,
  })
}

/**
 * A release that grasps at the lease through the job's own fields (`RecordPatch.fields`): a
 * lower token, a far term, another owner. Refused before anything is written (docs/guarantees.md,
 * I1 and I2), and the lease stays held for the release that follows.
 */
async function graspingRelease(stage: Stage, lease: Lease, who: string): Promise<void> {
  const fields = { token: 1, expires_at: 9_999_999_999, owner: `${who}/grasped` }
  const refused = await lease.release({ fields }).then(
    () => undefined,
    (error: unknown) => error,
  )
  if (refused instanceof LockOptionsError || refused instanceof LockLostError) return
  stage.oracle.fail(
    'I2',
    `${who}: a release given the lease's own fields was not refused (${String(refused)})`,
  )
}

/** No recorder, history kept (`keepHistory`), or a recorder that grasps at the lease. */
function pickRecorder(stage: Stage): RunRecorder | undefined {
  const size = stage.world.random.int(0, 3)
  if (size === 0) return undefined
  return stage.world.random.chance(0.5) ? keepHistory(size) : graspingRecorder(size)
}

function newLock(
  stage: Stage,
  process: SimProcess,
  owner: string,
  ttlMs: number,
  recordRun?: RunRecorder,
): Lock {
  return new Lock({
    store: stage.store.for(process),
    key: stage.key,
    owner,
    ttlMs,
    clockSkewMarginMs: stage.marginMs,
    clock: process.clock,
    random: () => stage.world.random.next(),
    recordRun,
  })
}

/**
 * The core `Lock`, taken with `tryAcquire` and released by hand, with or without a heartbeat;
 * `calls` concurrent loops share the one instance (a module-level lock in a server).
 */
export function coreContender(
  stage: Stage,
  process: SimProcess,
  options: { calls: number; heartbeat: boolean; ttlMs: number },
): Promise<void>[] {
  const lock = newLock(stage, process, `${process.name}/owner`, options.ttlMs, pickRecorder(stage))
  // Read ahead at start, as a Lambda's INIT does: the first acquisition writes over what it read.
  if (stage.world.random.chance(0.5)) void lock.readAhead()
  const loop = async (call: number) => {
    const who = `${process.name}#${call}`
    while (stage.world.now < stage.endAt) {
      await process.clock.sleep(stage.world.random.int(0, 2_000))
      let lease: Lease | undefined
      try {
        const acquisition = await lock.tryAcquire({ waitMs: stage.world.random.int(0, 3_000) })
        if (acquisition.status !== AcquireStatus.Acquired) continue
        lease = acquisition.lease
        stage.oracle.handOut(holdingOf(lease), process, who)
        stage.trace(`${who} acquired, writing token ${lease.record.token}`)
        const use = tokenUse(stage)
        if (use === TokenUse.AtOnce) await reportingTokens(stage, process, lease, who).fencingToken()
        const stop = options.heartbeat
          ? keepAlive(lease, { everyMs: Math.floor(options.ttlMs / 3), clock: process.clock })
          : () => {}
        await work(stage, process, lease.signal, options.heartbeat ? options.ttlMs : options.ttlMs / 4)
        stop()
        if (use !== TokenUse.Never) await writeOutput(stage, process, lease, who, lease.signal)
        if (stage.world.random.chance(0.3)) await lease.saveCheckpoint({ step: call })
        if (stage.world.random.chance(0.2)) await graspingRelease(stage, lease, who)
        await lease.release(stage.world.random.chance(0.5) ? { fields: { last_run: who } } : {})
        stage.trace(`${who} released token ${lease.record.token}`)
      } catch (error) {
        unexpected(stage, who, error)
      }
    }
  }
  return Array.from({ length: options.calls }, (_, call) => loop(call))
}

/** `lock.runExclusive`: acquired, renewed and released for the routine. */
export async function exclusiveContender(
  stage: Stage,
  process: SimProcess,
  options: { ttlMs: number },
): Promise<void> {
  const lock = newLock(stage, process, `${process.name}/owner`, options.ttlMs)
  while (stage.world.now < stage.endAt) {
    await process.clock.sleep(stage.world.random.int(0, 2_000))
    try {
      await lock.runExclusive(
        async (lease) => {
          stage.oracle.handOut(holdingOf(lease), process, process.name)
          stage.trace(`${process.name} acquired, writing token ${lease.record.token}`)
          const use = tokenUse(stage)
          if (use === TokenUse.AtOnce)
            await reportingTokens(stage, process, lease, process.name).fencingToken()
          await work(stage, process, lease.signal, options.ttlMs)
          if (use !== TokenUse.Never) await writeOutput(stage, process, lease, process.name, lease.signal)
        },
        { waitMs: stage.world.random.int(0, 3_000) },
      )
    } catch (error) {
      unexpected(stage, process.name, error)
    }
  }
}

/** Longer than a release takes through a lost answer, its settle read and a retry. */
const RELEASE_STALL_MS = 8_000

/** A scheduled tick: its id (the scheduled time) and when it is due, by true time. */
export interface Tick {
  readonly id: string
  readonly due: number
}

/**
 * A Lambda function behind `withSingleton`: invocations arrive on ticks (sometimes twice, sometimes
 * with the same request id in one process, as Lambda Managed Instances run them), each with an
 * invocation deadline after which Lambda ends the process.
 */
export class LambdaFunction {
  #process: SimProcess
  #handler: (event: unknown, context: object) => Promise<unknown>
  #instance = 0
  /** Warnings and errors the lifecycle logged, by invocation: what an operator would see. */
  readonly #heard = new Map<number, string[]>()
  /** The lease each invocation's run was handed (two may share a request id). */
  readonly #leases = new Map<number, Lease>()
  #calls = 0
  /** When each invocation's handler returned (the lifecycle is releasing), by true time. */
  readonly #returned = new Map<number, number>()

  constructor(
    readonly stage: Stage,
    readonly name: string,
    readonly options: { onHeld: OnHeld; ttlMs: number | undefined; timeoutMs: number; historySize: number },
  ) {
    this.#process = this.#newProcess()
    this.#handler = this.#wrap()
  }

  get process(): SimProcess {
    return this.#process
  }

  /** Invokes the function for `tick` (request id `requestId`), in its current process. */
  async invoke(tick: Tick, requestId: string): Promise<void> {
    const { stage } = this
    if (!this.#process.alive) this.#restart()
    const process = this.#process
    const deadline = process.clock.now() + this.options.timeoutMs
    const context = {
      functionName: this.name,
      awsRequestId: requestId,
      getRemainingTimeInMillis: () => Math.max(0, deadline - process.clock.now()),
    }
    // Lambda ends an invocation that outlives its timeout by ending its process.
    const call = this.#calls++
    const kill = process.clock.schedule(this.options.timeoutMs, () => {
      stage.trace(`${process.name} timed out on ${tick.id}: Lambda ends the process`)
      // The handler was done long before, and the library kept the invocation going to its
      // timeout: it must have said why (a release it could not make), or nobody ever hears. A
      // release caught by the timeout within a lost answer and its retry is no news.
      const returnedAt = this.#returned.get(call)
      // A process frozen meanwhile stalled for the freeze, not for the library (W3).
      const frozenMeanwhile = returnedAt !== undefined && process.frozenUntil > returnedAt
      const stalledMs = returnedAt === undefined || frozenMeanwhile ? 0 : stage.world.now - returnedAt
      if (stalledMs > RELEASE_STALL_MS && (this.#heard.get(call) ?? []).length === 0) {
        stage.oracle.fail(
          'I5',
          `${process.name}/${requestId}: its handler had returned, its release was still under way when Lambda ended the invocation, and nothing was logged`,
        )
      }
      process.crash()
    })
    try {
      await this.#handler({ time: tick.id, call }, context)
    } catch (error) {
      unexpected(stage, process.name, error)
    } finally {
      kill()
    }
    this.#returned.delete(call)
    this.#checkHeard(call, requestId)
  }

  /**
   * I5: a run whose release did not land, and whose lease nobody else took, said so in a warning
   * or an error: a release failure is never silent. (A record of the run that an outside writer
   * put back after its release is W2's, not a release that failed.)
   */
  #checkHeard(call: number, requestId: string): void {
    const lease = this.#leases.get(call)
    this.#leases.delete(call)
    const heard = this.#heard.get(call) ?? []
    this.#heard.delete(call)
    if (!lease || !this.#process.alive) return
    const object = this.stage.store.peek(this.stage.key)
    const stored = object ? (JSON.parse(object.body) as { token?: number; expires_at?: number }) : undefined
    const stillHeld = stored?.token === lease.record.token && stored.expires_at !== 0
    // Held again by an outside writer that put an older record of this run back (W2), not by the run.
    const writtenBack = this.stage.store.log.at(-1)?.kind === 'write-back'
    if (stillHeld && !writtenBack && heard.length === 0) {
      this.stage.oracle.fail(
        'I5',
        `${this.#process.name}/${requestId} ended with its lease (token ${lease.record.token}) still held at the store, and logged nothing`,
      )
    }
  }

  #logger(): SingletonLogger {
    const note = (fields: Record<string, unknown> | undefined, message: string) => {
      const token = typeof fields?.token === 'number' ? fields.token : undefined
      for (const [call, lease] of this.#leases) {
        if (token === undefined || token === lease.record.token) {
          this.#heard.set(call, [...(this.#heard.get(call) ?? []), message])
        }
      }
    }
    const say = (level: string, message: string, fields: Record<string, unknown> | undefined) =>
      this.stage.trace(`${this.#process.name} ${level} ${message} ${JSON.stringify(fields ?? {})}`)
    return {
      info: (message, fields) => say('INFO', message, fields),
      warn: (message, fields) => {
        say('WARN', message, fields)
        note(fields, message)
      },
      error: (message, fields) => {
        say('ERROR', message, fields)
        note(fields, message)
      },
    }
  }

  #newProcess(): SimProcess {
    const { random } = this.stage.world
    return this.stage.world.process(
      `${this.name}.${this.#instance++}`,
      random.int(-30_000, 30_000),
      (random.next() - 0.5) * 0.002,
    )
  }

  #restart(): void {
    this.#process = this.#newProcess()
    this.#handler = this.#wrap()
  }

  /**
   * The handler, made as a module-scope one is during INIT. Most processes run "inside Lambda"
   * (AWS_LAMBDA_FUNCTION_NAME set while it is made): INIT then reads the lock ahead and probes the
   * store's clock, and the first invocation, whenever it comes, writes over what INIT read.
   */
  #wrap(): (event: unknown, context: object) => Promise<unknown> {
    const env = globalThis.process.env
    const inLambda = this.stage.world.random.chance(0.7)
    const saved = env.AWS_LAMBDA_FUNCTION_NAME
    if (inLambda) env.AWS_LAMBDA_FUNCTION_NAME = this.name
    else delete env.AWS_LAMBDA_FUNCTION_NAME
    try {
      return this.#handlerAtInit()
    } finally {
      if (saved === undefined) delete env.AWS_LAMBDA_FUNCTION_NAME
      else env.AWS_LAMBDA_FUNCTION_NAME = saved
    }
  }

  #handlerAtInit(): (event: unknown, context: object) => Promise<unknown> {
    const { stage } = this
    const process = this.#process
    const replaceable = this.options.onHeld === OnHeld.Replace
    return withSingleton<
      { time: string; call: number },
      string,
      { functionName: string; awsRequestId: string }
    >(
      async (event, context) => {
        const handle = context.singleton
        const lease = leaseBehind(handle) as Lease
        this.#leases.set(event.call, lease)
        const label = `${process.name}/${context.awsRequestId}`
        stage.oracle.handOut(holdingOf(lease), process, label)
        stage.trace(`${process.name} runs ${handle.tick}, writing token ${lease.record.token}`)
        const use = tokenUse(stage)
        if (use === TokenUse.AtOnce) await reportingTokens(stage, process, handle, label).fencingToken()
        await work(stage, process, handle.signal, this.options.ttlMs ?? this.options.timeoutMs / 4)
        if (use !== TokenUse.Never) await writeOutput(stage, process, handle, label, handle.signal)
        if (stage.world.random.chance(0.3)) await handle.saveCheckpoint({ at: handle.tick ?? null })
        this.#returned.set(event.call, stage.world.now)
        if (stage.world.random.chance(0.2)) throw new JobFailed()
        return 'done'
      },
      {
        store: stage.store.for(process),
        key: stage.key,
        keyPrefix: '',
        onHeld: this.options.onHeld,
        ...(this.options.ttlMs !== undefined && { ttlMs: this.options.ttlMs }),
        ...(replaceable && { ttlMs: this.options.ttlMs ?? 9_000 }),
        clockSkewMarginMs: stage.marginMs,
        historySize: this.options.historySize,
        clock: process.clock,
        logger: this.#logger(),
        metrics: false,
        tickId: (event: { time: string }) => event.time,
      },
    ) as (event: unknown, context: object) => Promise<unknown>
  }
}

/** An operator at a terminal: pause, resume, force-release, pause --now, reset --back-to-clock. */
export async function operator(stage: Stage, everyMs: number): Promise<void> {
  const { world, oracle } = stage
  let call = 0
  while (world.now < stage.endAt) {
    const process = world.process(`operator.${call++}`, world.random.int(-30_000, 30_000))
    oracle.operator(process.name)
    await new Promise<void>((resolve) =>
      world.at(world.now + world.random.int(everyMs / 2, everyMs), undefined, resolve),
    )
    const operator = new LockOperator({
      store: stage.store.for(process),
      key: stage.key,
      operator: `operator@host/${call}`,
      ttlMs: 10_000,
      clockSkewMarginMs: stage.marginMs,
      clock: process.clock,
      random: () => stage.world.random.next(),
    })
    const action = world.random.pick([
      'pause',
      'resume',
      'resume',
      'force-release',
      'force-release-judged',
      'pause-now',
    ] as const)
    const before = stage.store.log.length
    try {
      let wrote: boolean
      if (action === 'pause') wrote = (await operator.pause({ note: 'sim' })) !== null
      else if (action === 'pause-now') wrote = (await operator.pause({ now: true })) !== null
      else if (action === 'resume') wrote = (await operator.resume()) !== null
      else if (action === 'force-release-judged')
        wrote = await forceReleaseJudged(stage, operator, process.name)
      else wrote = (await operator.forceRelease()) !== null
      stage.trace(`${process.name} ${action}: ${wrote ? 'written' : 'nothing to do'}`)
    } catch (error) {
      unexpected(stage, process.name, error)
      // I5: an operator told that nothing was written must not have written anything.
      if (error instanceof LockStoreError || error instanceof LockConflictError) {
        const since = stage.store.log.slice(before)
        const landed = since.findIndex((write) => write.by === process.name)
        // An outside writer that wiped the record before the settle read hides the landing (W2).
        const wiped = since
          .slice(landed + 1)
          .some((write) => write.kind === 'delete' || write.kind === 'write-back')
        if (landed >= 0 && !wiped && /nothing was written|try again/i.test(error.message)) {
          oracle.fail('I5', `${process.name} ${action} was told "${error.message}", but its write landed`)
        }
      }
    }
  }
}

/**
 * The CLI's force-release: `inspect`, a while at the terminal, then the end of the lease seen,
 * though its holder may have renewed, released or lost it since. I5: the version its write went
 * over held that lease, not released.
 */
async function forceReleaseJudged(stage: Stage, operator: LockOperator, name: string): Promise<boolean> {
  const { world, store, oracle } = stage
  const info = await operator.inspect()
  if (!info?.held) return false
  await new Promise<void>((resolve) => world.at(world.now + world.random.int(0, 3_000), undefined, resolve))
  const from = store.log.length
  const written = await operator.forceRelease({ lease: info })
  const ours = store.log.findIndex((write, index) => index >= from && write.by === name)
  const over = ours > 0 ? store.log[ours - 1]?.body : undefined
  const was =
    over === undefined
      ? undefined
      : (JSON.parse(over) as { token?: number; owner?: string; expires_at?: number })
  if (written && (was?.token !== info.token || was.owner !== info.owner || was.expires_at === 0)) {
    oracle.fail(
      'I5',
      `${name} force-released the lease it judged (token ${info.token} of ${info.owner}), but its write went over ${over}`,
    )
  }
  return written !== null
}

/** An outside writer: deletes the object, or writes an old record back. */
export async function tamperer(stage: Stage, everyMs: number): Promise<void> {
  const { world, store } = stage
  while (world.now < stage.endAt) {
    await new Promise<void>((resolve) =>
      world.at(world.now + world.random.int(everyMs / 2, everyMs), undefined, resolve),
    )
    if (world.now >= stage.endAt) return
    const old = store.log.filter((write) => write.body !== undefined)
    if (world.random.chance(0.5) || old.length === 0) {
      store.delete(stage.key)
      stage.trace('outside: deleted the lock object')
    } else {
      const write = world.random.pick(old)
      store.writeBack(stage.key, write.body as string)
      stage.trace(`outside: wrote back the record of ${write.by} at ${write.at}`)
    }
  }
}
