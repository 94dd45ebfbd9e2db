/**
 * One soak worker process: takes locks on a few keys over and over (through the fault proxy),
 * and in each critical section writes the key's shared objects with `fencedPut`. Its local clock
 * is skewed by `offsetMs`. It writes on without checking its lease, as a holder frozen between
 * its check and its write would: only the fence may stop a zombie.
 *
 * Every event goes to its own log file with a synchronous append before the worker moves on, so
 * that a SIGKILL loses nothing that happened. Its stdout tells the orchestrator what it holds.
 */

import { closeSync, openSync, writeSync } from 'node:fs'
import { S3Client } from '@aws-sdk/client-s3'
import type { Clock } from '../../lib/extend.js'
import { systemClock } from '../../lib/extend.js'
import type { Lease } from '../../lib/index.js'
import { FencedWriteRejectedError, fencedPut, S3Lock } from '../../lib/s3/index.js'
import { leaseOf } from '../../test/support/lease-of.js'
import { lockKeyOf, objectsOf, type WorkerConfig } from './config.js'
import { describeError, type EventBody, trueNow } from './events.js'
import { between, pick, type Random, seededRandom } from './random.js'

class Worker {
  readonly #fd: number
  readonly #random: Random
  readonly #s3: S3Client
  readonly #locks = new Map<string, S3Lock>()
  readonly #clock: Clock
  #calls = 0
  stopping = false

  constructor(private readonly config: WorkerConfig) {
    this.#fd = openSync(config.log, 'a')
    this.#random = seededRandom(config.seed)
    this.#s3 = new S3Client({ endpoint: config.endpoint, forcePathStyle: true, maxAttempts: 1 })
    // Skewed by a constant: leases must still be judged on the store's clock.
    const clock: Clock = { ...systemClock, now: () => systemClock.now() + config.offsetMs }
    this.#clock = clock
    for (const key of config.keys) {
      const lock = new S3Lock({
        s3: this.#s3,
        bucket: config.bucket,
        key: lockKeyOf(key),
        ttlMs: config.ttlMs,
        clockSkewMarginMs: config.marginMs,
        requestTimeoutMs: config.requestTimeoutMs,
        clock,
      })
      this.#locks.set(key, lock)
    }
  }

  emit(event: EventBody): void {
    writeSync(this.#fd, `${JSON.stringify({ t: trueNow(), w: this.config.id, ...event })}\n`)
  }

  async run(): Promise<void> {
    this.emit({ type: 'worker', phase: 'start', pid: process.pid, offsetMs: this.config.offsetMs })
    await this.#warmUp()
    while (!this.stopping) {
      const key = pick(this.#random, this.config.keys)
      const lease = await this.#acquire(key)
      if (lease) await this.#criticalSection(key, lease.id, lease.lease)
      else await sleep(between(this.#random, 20, 150))
    }
    this.emit({ type: 'worker', phase: 'end', pid: process.pid })
    closeSync(this.#fd)
    this.#s3.destroy()
  }

  /**
   * The first use of each SDK command and of the lock's code paths costs a starved CPU seconds,
   * during which no timer fires. One unmeasured round on a key of its own (read, create, fenced
   * write, release) pays for it, so that it does not count against the first call's bound.
   */
  async #warmUp(): Promise<void> {
    const key = `soak/warmup/${this.config.id}`
    const lock = new S3Lock({
      s3: this.#s3,
      bucket: this.config.bucket,
      key,
      ttlMs: 10_000,
      clock: this.#clock,
    })
    for (let attempt = 0; attempt < 10 && !this.stopping; attempt++) {
      try {
        const lease = await leaseOf(lock.tryAcquire())
        if (!lease) continue
        const body = 'warm-up'
        await fencedPut({
          s3: this.#s3,
          bucket: this.config.bucket,
          key: `${key}/data`,
          body,
          lease,
        })
        await lease.release()
        return
      } catch {
        await sleep(200)
      }
    }
  }

  async #acquire(key: string): Promise<{ id: string; lease: Lease } | undefined> {
    const lock = this.#locks.get(key) as S3Lock
    const id = `${this.config.id}/${this.#calls++}`
    const waitMs = Math.round(between(this.#random, 300, 3_000))
    this.emit({ type: 'acquire', phase: 'start', id, key, waitMs })
    try {
      const result = await lock.tryAcquire({ waitMs })
      if (result.status !== 'acquired') {
        this.emit({ type: 'acquire', phase: 'end', id, key, waitMs, status: result.status })
        return undefined
      }
      const { lease } = result
      // Read together: the lease's end, by the skewed clock, as a true time.
      const validUntil = trueNow() + lease.remainingMs
      this.emit({
        type: 'acquire',
        phase: 'end',
        id,
        key,
        waitMs,
        status: 'acquired',
        token: lease.record.token, // as written; handed out by fencingToken() once the store's clock passed it
        validUntil,
      })
      process.stdout.write(`${JSON.stringify({ holding: key, lease: id })}\n`)
      return { id, lease }
    } catch (error) {
      this.emit({
        type: 'acquire',
        phase: 'end',
        id,
        key,
        waitMs,
        status: 'error',
        error: describeError(error),
      })
      await sleep(between(this.#random, 50, 300))
      return undefined
    }
  }

  async #criticalSection(key: string, id: string, lease: Lease): Promise<void> {
    const objects = objectsOf(key, this.config.objectsPerKey)
    // Mostly one write (every request costs CPU this machine may not have), sometimes more.
    const steps = this.#random() < 0.8 ? 1 : 2 + Math.floor(this.#random() * 2)
    for (let step = 0; step < steps; step++) {
      // The first write goes to the first object at once: from then on it fences older holders.
      await this.#write(key, id, lease, step === 0 ? (objects[0] as string) : pick(this.#random, objects))
      if (this.#random() < 0.1) await this.#renew(id, lease)
      // Now and then a step outlasts the lease, unnoticed: the next writes are a zombie's.
      const slow = this.#random() < 0.01
      await sleep(slow ? this.config.ttlMs + between(this.#random, 0, 1_000) : between(this.#random, 0, 40))
    }
    this.emit({ type: 'release', phase: 'start', lease: id })
    process.stdout.write(`${JSON.stringify({ holding: null })}\n`)
    try {
      await lease.release()
      this.emit({ type: 'release', phase: 'end', lease: id, ok: true })
    } catch (error) {
      this.emit({ type: 'release', phase: 'end', lease: id, ok: false, error: describeError(error) })
    }
  }

  async #renew(id: string, lease: Lease): Promise<void> {
    this.emit({ type: 'renew', phase: 'start', lease: id })
    try {
      await lease.renew()
      this.emit({
        type: 'renew',
        phase: 'end',
        lease: id,
        ok: true,
        validUntil: trueNow() + lease.remainingMs,
      })
    } catch (error) {
      this.emit({ type: 'renew', phase: 'end', lease: id, ok: false, error: describeError(error) })
    }
  }

  async #write(key: string, leaseId: string, lease: Lease, object: string): Promise<void> {
    const id = `${leaseId}/${this.#calls++}`
    const { token } = lease.record // what fencedPut below awaits, and writes with
    const timeoutMs = this.config.writeTimeoutMs
    const base = { type: 'write', id, lease: leaseId, key, object, token, timeoutMs } as const
    this.emit({ ...base, phase: 'start' })
    try {
      const result = await fencedPut({
        s3: this.#s3,
        bucket: this.config.bucket,
        key: object,
        body: JSON.stringify({ write: id, token, worker: this.config.id }),
        contentType: 'application/json',
        lease,
        timeoutMs,
        requestTimeoutMs: this.config.requestTimeoutMs,
      })
      this.emit({ ...base, phase: 'end', outcome: 'ok', ...defined('previousToken', result.previousToken) })
    } catch (error) {
      if (error instanceof FencedWriteRejectedError) {
        this.emit({ ...base, phase: 'end', outcome: 'rejected', currentToken: error.currentToken })
      } else {
        this.emit({ ...base, phase: 'end', outcome: 'error', error: describeError(error) })
      }
    }
  }
}

function defined<K extends string>(name: K, value: number | undefined): Partial<Record<K, number>> {
  return value === undefined ? {} : ({ [name]: value } as Record<K, number>)
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms))
}

const worker = new Worker(JSON.parse(process.env.SOAK_WORKER ?? '') as WorkerConfig)
// The orchestrator ends a run with SIGTERM: finish the critical section, release, leave.
process.on('SIGTERM', () => {
  worker.stopping = true
})
await worker.run()
