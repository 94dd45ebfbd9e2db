import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { runningTick } from '../../lib/core/holder-record.js'
import { type Lease, Lock, LockConflictError } from '../../lib/index.js'
import { leaseOf } from '../support/lease-of.js'
import { operatorFor } from '../support/operator-for.js'
import type { ContractTarget } from './contract.js'

let keys = 0
const freshKey = (label: string): string => `tokens/${label}-${process.pid}-${++keys}-${Date.now()}`

/**
 * The fencing token's promise, attacked the way an operator or a script would break it: each
 * token is above every token handed out before for that lock, also after an outside write of
 * a lower token, a restore of an older version, or a deletion, and in a process that has never
 * seen the lock. Each `Lock` here is a fresh process: it knows nothing but what the store says.
 */
export function describeTokenAttacks(
  name: string,
  setup: () => Promise<ContractTarget> | ContractTarget,
): void {
  describe(`fencing tokens under outside writes: ${name}`, () => {
    let target: ContractTarget
    beforeAll(async () => {
      target = await setup()
    })
    afterAll(async () => {
      await target?.close?.()
    })

    const freshProcess = (key: string, owner: string): Lock =>
      new Lock({ store: target.store(), key, owner, ttlMs: 30_000, clockSkewMarginMs: 1_000 })
    const acquire = async (key: string, owner: string): Promise<Lease> => {
      const lease = await leaseOf(freshProcess(key, owner).tryAcquire())
      if (!lease) throw new Error(`${owner} could not acquire ${key}`)
      return lease
    }

    it('hands out a higher token after an outside write of a lower one, released, over a live lease', async () => {
      const key = freshKey('lowered')
      const first = await acquire(key, 'first')
      await first.release()
      const zombie = await acquire(key, 'zombie')
      const zombieToken = await zombie.fencingToken()
      // A script puts back a record it made up, as if token 1 had been the last and released.
      await target.putRaw(key, JSON.stringify({ v: 1, token: 1, expires_at: 0, owner: 'script' }))
      const next = await acquire(key, 'next')
      expect(await next.fencingToken()).toBeGreaterThan(zombieToken)
      expect(zombieToken).toBeGreaterThan(first.record.token)
    })

    it('replaces a live lease only with a higher token, and the replaced one can neither renew nor release', async () => {
      const key = freshKey('replaced')
      const old = await leaseOf(freshProcess(key, 'old').tryAcquire({ tick: '2026-11-25T03:00:00Z' }))
      if (!old) throw new Error('old could not acquire')
      const attempt = await freshProcess(key, 'new').tryAcquire({
        tick: '2026-11-25T03:05:00Z',
        replaceIf: (holder) => runningTick(holder) === '2026-11-25T03:00:00Z',
      })
      if (attempt.status !== 'acquired') throw new Error(`new: ${attempt.status}`)
      expect(attempt.lease.record.token).toBeGreaterThan(old.record.token)
      await expect(old.renew()).rejects.toMatchObject({ reason: 'replaced' })
      await expect(old.release()).rejects.toMatchObject({ reason: 'replaced' })
      const stored = await operatorFor(freshProcess(key, 'reader')).inspect()
      expect(stored?.record).toMatchObject({ token: attempt.lease.record.token, owner: 'new' })
    })

    it('ignores a running tick left by a writer that does not know the field (its token is not the record’s)', async () => {
      const key = freshKey('stale-running')
      const live = await acquire(key, 'older-release')
      // A 1.0 writer kept the last holder's running as it was, under its own, newer token.
      const record = {
        ...live.record,
        running: { token: live.record.token - 1, tick: '2026-11-25T02:00:00Z' },
      }
      await target.putRaw(key, JSON.stringify(record))
      const asked: (string | undefined)[] = []
      const attempt = await freshProcess(key, 'new').tryAcquire({
        tick: '2026-11-25T03:05:00Z',
        replaceIf: (holder) => {
          asked.push(runningTick(holder))
          return runningTick(holder) !== undefined
        },
      })
      expect(attempt.status).toBe('held')
      expect(asked).toEqual([undefined])
    })

    it('hands out a higher token after an older version of the record is restored', async () => {
      const key = freshKey('restored')
      const first = await acquire(key, 'first')
      await first.release()
      const old = await operatorFor(freshProcess(key, 'reader')).inspect()
      const zombie = await acquire(key, 'zombie')
      const zombieToken = await zombie.fencingToken()
      await target.putRaw(key, JSON.stringify(old?.record))
      const next = await acquire(key, 'next')
      expect(await next.fencingToken()).toBeGreaterThan(zombieToken)
    })

    it('hands out a higher token after the object is deleted under a live lease', async () => {
      const key = freshKey('deleted')
      const zombie = await acquire(key, 'zombie')
      const zombieToken = await zombie.fencingToken()
      await target.deleteRaw(key)
      const next = await acquire(key, 'next')
      expect(await next.fencingToken()).toBeGreaterThan(zombieToken)
    })

    it('keeps tokens rising over deletions between every run, each run in a new process', async () => {
      const key = freshKey('deleted-each-time')
      const tokens: number[] = []
      for (let run = 0; run < 4; run++) {
        const lease = await acquire(key, `run-${run}`)
        tokens.push(await lease.fencingToken())
        await lease.release()
        await target.deleteRaw(key)
      }
      expect(tokens).toEqual([...tokens].sort((a, b) => a - b))
      expect(new Set(tokens).size).toBe(tokens.length)
    })

    it('refuses to follow a token an outside writer put 60 s ahead of the store clock, so a deletion cannot undercut it', async () => {
      const key = freshKey('ahead')
      const first = await acquire(key, 'first')
      const handedOut = [await first.fencingToken()]
      await first.release()
      const outside = { v: 1, token: first.record.token + 60_000, expires_at: 0, owner: 'script' }
      await target.putRaw(key, JSON.stringify(outside))
      // Before: the zombie was handed outside.token + 1 at once, and after the deletion the next
      // process a clock token a minute below it, so the zombie's fenced writes beat the next's.
      const zombie = await leaseOf(freshProcess(key, 'zombie').tryAcquire()).then(
        async (lease) => {
          if (lease) handedOut.push(await lease.fencingToken())
          return lease
        },
        (error: unknown) => error,
      )
      const left = await target.store().read(key)
      await target.deleteRaw(key)
      const next = await acquire(key, 'next')
      const nextToken = await next.fencingToken()
      for (const token of handedOut) expect(nextToken).toBeGreaterThan(token)
      expect(zombie).toBeInstanceOf(LockConflictError)
      expect(zombie).toMatchObject({ reason: 'record-ahead-of-clock', key })
      expect((zombie as Error).message).toMatch(/lambda-singleton reset .*--back-to-clock/)
      // Nothing was written: the outside record was there as put until the deletion.
      expect(left.status === 'found' && JSON.parse(left.body)).toEqual(outside)
    })

    it('is repaired by a reset back to the clock, which a plain reset refuses to do', async () => {
      const key = freshKey('back-to-clock')
      const first = await acquire(key, 'first')
      await first.release()
      const ahead = first.record.token + 3_600_000
      await target.putRaw(key, JSON.stringify({ v: 1, token: ahead, expires_at: 0, owner: 'script' }))
      const operator = operatorFor(freshProcess(key, 'operator'))
      expect(await operator.inspect()).toMatchObject({
        token: ahead,
        blocked: 'record-ahead-of-clock',
      })
      await expect(operator.reset({ token: first.record.token + 1 })).rejects.toMatchObject({
        reason: 'token-too-low',
      })
      const reset = await operator.reset({ backToClock: true })
      expect(reset.token).toBeGreaterThan(first.record.token)
      expect(reset.token).toBeLessThan(ahead)
      const next = await acquire(key, 'next')
      expect(next.record.token).toBeGreaterThan(reset.token)
      expect(next.record.token).toBeLessThan(ahead)
    })

    it('counts runs in the record, one more per acquisition, while tokens rise by more', async () => {
      const key = freshKey('runs')
      const lock = freshProcess(key, 'counter')
      const runs: unknown[] = []
      for (let run = 0; run < 3; run++) {
        const lease = await leaseOf(lock.tryAcquire())
        runs.push(lease?.record.run)
        await lease?.release()
      }
      expect(runs).toEqual([1, 2, 3])
    })
  })
}
