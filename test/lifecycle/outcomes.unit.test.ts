import { describe, expect, it } from 'vitest'
import { MemoryLockStore } from '../../lib/memory/index.js'
import { LockOperator } from '../../lib/operator/lock-operator.js'
import { schedulerEvent } from '../support/lambda-context.js'
import { KEY, world } from './world.js'

/** One outcome per step of an invocation, with the fields an operator needs, at the right level. */
describe('outcomes and log lines', () => {
  it('acquired and released name the key, the token, the owner, the tick and the times, at info', async () => {
    const { clock, store, wrap, context, outcomes, lines } = world()
    store.script('read', () => clock.sleep(40).then(() => 'ok')) // the first read takes 40 ms
    let ranAt = Number.NaN
    const handler = wrap(async () => {
      ranAt = clock.now()
      return clock.sleep(2_500).then(() => 'ok')
    })
    const invokedAt = clock.now()
    await clock.run(handler(schedulerEvent('2026-11-21T03:00:00Z'), context({ requestId: 'r1' })))
    // The read's 40 ms (the write answers at once here), and no wait for the token: that is paid
    // only by a handler that reads it.
    expect(ranAt - invokedAt).toBe(40)
    expect(outcomes).toEqual([
      {
        outcome: 'acquired',
        key: KEY,
        token: expect.any(Number),
        owner: 'nightly-report/r1',
        tick: '2026-11-21T03:00:00Z',
        waitMs: ranAt - invokedAt,
      },
      {
        outcome: 'released',
        key: KEY,
        token: expect.any(Number),
        tick: '2026-11-21T03:00:00Z',
        heldMs: 2_500,
        completed: true,
      },
    ])
    expect(lines.map((l) => l.level)).toEqual(['info', 'info'])
    expect(lines[0]?.fields).toEqual({ ...outcomes[0], component: 'lambda-singleton' })
  })

  it('on a store that takes, names no token at "acquired" before its raise, and the token handed out at "released"', async () => {
    const { clock, wrap, context, outcomes } = world()
    // Its writes take 20 ms, as a real store's do: the raise lands after the run has started.
    const store = new (class extends MemoryLockStore {
      override async replace(...args: Parameters<MemoryLockStore['replace']>) {
        await clock.sleep(20)
        return super.replace(...args)
      }
    })({ clock, clockResolutionMs: 1_000, takes: true })
    // Released long ago with an old token: the take writes it plus one, which the raise replaces.
    store.putRaw(KEY, JSON.stringify({ v: 1, token: 1_000, expires_at: 0, owner: 'an-earlier-run' }))
    let handedOut = Number.NaN
    const handler = wrap(
      async (_event, { singleton }) => {
        handedOut = await singleton.fencingToken()
      },
      { store },
    )
    await clock.run(handler({}, context()))
    expect(handedOut).toBeGreaterThan(1_001)
    expect(outcomes.map(({ outcome, token }) => ({ outcome, token }))).toEqual([
      { outcome: 'acquired', token: undefined },
      { outcome: 'released', token: handedOut },
    ])
  })

  it('gives durations in whole milliseconds, as the clock counts fractions of one', async () => {
    const { clock, store, wrap, context, outcomes, lines } = world()
    store.script('read', () => clock.sleep(40.374_19).then(() => 'ok'))
    const handler = wrap(async () => clock.sleep(2_500.618_2).then(() => 'ok'))
    await clock.run(handler(schedulerEvent('2026-11-21T03:00:00Z'), context()))
    expect(outcomes.map(({ waitMs, heldMs }) => ({ waitMs, heldMs }))).toEqual([
      { waitMs: 40, heldMs: undefined },
      { waitMs: undefined, heldMs: 2_501 },
    ])
    expect(lines[1]?.fields).toMatchObject({ heldMs: 2_501 })
  })

  it('a late tick is a warning naming the tick and how late it came', async () => {
    const { clock, wrap, context, lines } = world()
    const tick = new Date(clock.now() - 7_200_000).toISOString()
    await clock.run(wrap(async () => 'ok', { maxTickAgeMs: 3_600_000 })(schedulerEvent(tick), context()))
    expect(lines).toEqual([
      {
        level: 'warn',
        message: 'skipped: tick delivered late',
        fields: { outcome: 'late', key: KEY, tick, tickAgeMs: 7_200_000, component: 'lambda-singleton' },
      },
    ])
  })

  it('carry no tick when the event is not a scheduled tick', async () => {
    const { clock, wrap, context, outcomes } = world()
    await clock.run(wrap(async () => 'ok')({}, context()))
    expect(outcomes.every((o) => !('tick' in o))).toBe(true)
  })

  it('a skip names the holder, its token and the tick, at info', async () => {
    const { clock, wrap, context, outcomes, lines } = world()
    const slow = wrap(async () => clock.sleep(5_000))
    const first = slow({}, context({ requestId: 'r1' }))
    await clock.advance(1_100) // past the wait for its token: it holds the lock
    await clock.run(slow(schedulerEvent('2026-11-21T03:00:00Z'), context()))
    // The holder logs "acquired" once its token's wait is over: the skip may come first.
    const skip = outcomes.findIndex((o) => o.outcome === 'held')
    expect(outcomes[skip]).toEqual({
      outcome: 'held',
      key: KEY,
      token: expect.any(Number),
      owner: 'nightly-report/r1',
      tick: '2026-11-21T03:00:00Z',
      waitMs: 0,
    })
    expect(lines[skip]?.level).toBe('info')
    await clock.run(first)
  })

  it("a run's history spans its handler's time: a token it never read adds no wait to it", async () => {
    const { clock, wrap, context, record } = world()
    const handler = wrap(async () => clock.sleep(2_500).then(() => 'ok'))
    await clock.run(handler(schedulerEvent('2026-11-21T03:00:00Z'), context()))
    const [run] = record().history
    expect(run.outcome).toBe('completed')
    // In store seconds, as the lease's writes were stamped: the 2.5 s the handler ran, no more.
    expect(run.ended - run.started).toBeCloseTo(2.5, 3)
  })

  it('a skip after a lost race names the winner and its token', async () => {
    const { clock, wrap, context, outcomes } = world()
    const handler = wrap(async () => clock.sleep(1_000))
    await clock.run(Promise.all([handler({}, context()), handler({}, context())]))
    const acquired = outcomes.find((o) => o.outcome === 'acquired')
    expect(outcomes.find((o) => o.outcome === 'held')).toEqual({
      outcome: 'held',
      key: KEY,
      token: acquired?.token,
      owner: acquired?.owner,
      // The loser waited for its own token before its write lost the race (no more than a second).
      waitMs: expect.any(Number),
    })
  })

  it('a duplicate tick names the token that ran it and the tick, at info', async () => {
    const { clock, wrap, context, outcomes, lines } = world()
    const handler = wrap(async () => 'ok')
    await clock.run(handler(schedulerEvent('2026-11-21T03:00:00Z'), context()))
    await clock.run(handler(schedulerEvent('2026-11-21T03:00:00Z'), context()))
    expect(outcomes[2]).toEqual({
      outcome: 'duplicate',
      key: KEY,
      token: expect.any(Number),
      tick: '2026-11-21T03:00:00Z',
      waitMs: 0,
    })
    expect(lines[2]?.level).toBe('info')
  })

  it('a lock that cannot be acquired is an error, with the failure (made an Error if it was not one)', async () => {
    const { clock, store, wrap, context, outcomes, lines } = world()
    store.script('read', () => {
      throw 'socket hang up' // a non-Error throw, as some SDK middlewares do
    })
    await expect(
      clock.run(wrap(async () => 'ok')(schedulerEvent('2026-11-21T03:00:00Z'), context())),
    ).rejects.toBe('socket hang up')
    expect(outcomes).toEqual([
      { outcome: 'error', key: KEY, tick: '2026-11-21T03:00:00Z', error: new Error('socket hang up') },
    ])
    expect(lines[0]).toMatchObject({ level: 'error', fields: { error: new Error('socket hang up') } })
  })

  it('a lock whose token ran ahead of the store clock is an error, with the typed refusal, at error level', async () => {
    const { clock, store, wrap, context, outcomes, lines } = world()
    store.memory.putRaw(
      KEY,
      JSON.stringify({ v: 1, token: clock.now() + 60_000, expires_at: 0, owner: 'script' }),
    )
    const refusal = expect.objectContaining({ name: 'LockConflictError', reason: 'record-ahead-of-clock' })
    await expect(clock.run(wrap(async () => 'ok')({}, context()))).rejects.toEqual(refusal)
    expect(outcomes).toEqual([{ outcome: 'error', key: KEY, error: refusal }])
    expect(lines).toEqual([
      {
        level: 'error',
        message: 'lock could not be acquired',
        fields: expect.objectContaining({ error: refusal }),
      },
    ])
  })

  it('a failed heartbeat is a warning and an error outcome with the failure; the run goes on', async () => {
    const { clock, store, wrap, context, outcomes, lines } = world()
    store.script('replace', 'fatal')
    const handler = wrap(async (_e, ctx) => clock.sleep(3_000).then(() => ctx.singleton.signal.aborted), {
      ttlMs: 6_000,
      clockSkewMarginMs: 1_000,
    })
    expect(await clock.run(handler({}, context()))).toBe(false)
    expect(outcomes[1]).toEqual({
      outcome: 'error',
      key: KEY,
      token: expect.any(Number),
      error: expect.objectContaining({ name: 'LockStoreError' }),
    })
    expect(lines[1]?.level).toBe('warn')
    expect(outcomes.at(-1)?.outcome).toBe('released')
  })

  it('a release that fails is its own outcome, logged as an error, the handler’s result still returned', async () => {
    const { clock, store, wrap, context, outcomes, lines } = world()
    store.script('replace', 'fatal')
    expect(await clock.run(wrap(async () => 'done')({}, context()))).toBe('done')
    expect(outcomes[1]).toEqual({
      outcome: 'release-failed',
      key: KEY,
      token: expect.any(Number),
      error: expect.objectContaining({ name: 'LockStoreError' }),
    })
    expect(lines[1]?.level).toBe('error')
  })

  it('a lease lost to a takeover is an error naming the new holder and the tick', async () => {
    const { clock, store, wrap, context, outcomes, lines, record } = world()
    const handler = wrap(
      async (_e, ctx) => {
        store.memory.putRaw(KEY, JSON.stringify({ ...record(), token: record().token + 1, owner: 'thief' }))
        await new Promise((resolve) => ctx.singleton.signal.addEventListener('abort', resolve))
      },
      { ttlMs: 6_000, clockSkewMarginMs: 1_000 },
    )
    await clock.run(handler(schedulerEvent('2026-11-21T03:00:00Z'), context()))
    expect(outcomes[1]).toEqual({
      outcome: 'lost',
      key: KEY,
      token: expect.any(Number),
      owner: 'thief',
      tick: '2026-11-21T03:00:00Z',
      error: expect.objectContaining({ name: 'LockLostError', reason: 'taken-over' }),
    })
    expect(lines[1]?.level).toBe('error')
  })

  it.each([
    [
      'force-released',
      (operator: LockOperator) => operator.forceRelease(),
      'force-released by alice@ops',
      /alice@ops ended it \(force-release\)/,
    ],
    [
      'paused with now',
      (operator: LockOperator) => operator.pause({ now: true }),
      'paused by alice@ops',
      /alice@ops paused the job with --now/,
    ],
  ])(
    'a lease an operator %s is a warning naming the operator, its own outcome, not a lost lease',
    async (_, end, owner, how) => {
      const { clock, store, wrap, context, outcomes, lines } = world()
      const operator = new LockOperator({ store: store.memory, key: KEY, operator: 'alice@ops', clock })
      const handler = wrap(
        async (_e, ctx) => {
          await end(operator)
          await new Promise((resolve) => ctx.singleton.signal.addEventListener('abort', resolve))
        },
        { ttlMs: 6_000, clockSkewMarginMs: 1_000 },
      )
      await clock.run(handler(schedulerEvent('2026-11-21T03:00:00Z'), context()))
      expect(outcomes[1]).toEqual({
        outcome: 'released-by-operator',
        key: KEY,
        token: expect.any(Number),
        owner,
        operator: 'alice@ops',
        tick: '2026-11-21T03:00:00Z',
        error: expect.objectContaining({ name: 'LockLostError', reason: 'released-by-operator' }),
      })
      expect(lines[1]?.level).toBe('warn')
      expect(lines[1]?.message).toMatch(/^released by operator alice@ops/)
      expect(lines[1]?.message).not.toMatch(/LEASE LOST/)
      expect(lines[1]?.fields.error).toMatchObject({ message: expect.stringMatching(how) })
      expect(outcomes.some((o) => o.outcome === 'lost')).toBe(false)
    },
  )

  it('a lease that ran out names no new holder', async () => {
    const { clock, store, wrap, context, outcomes } = world()
    store.script('replace', ...Array.from({ length: 50 }, () => 'transient' as const))
    const handler = wrap(async () => clock.sleep(20_000), { ttlMs: 6_000, clockSkewMarginMs: 1_000 })
    await clock.run(handler({}, context()))
    const lost = outcomes.find((o) => o.outcome === 'lost')
    expect(lost).toMatchObject({ error: { reason: 'expired' } })
    expect(lost && 'owner' in lost).toBe(false)
  })

  it('a lease whose release failed and that runs out afterwards is no news for the ended run', async () => {
    const { clock, store, wrap, context, kinds } = world()
    store.script('replace', 'fatal')
    await clock.run(wrap(async () => 'done', { ttlMs: 6_000, clockSkewMarginMs: 1_000 })({}, context()))
    await clock.advance(60_000) // the unreleased lease's own end passes
    expect(kinds()).toEqual(['acquired', 'release-failed'])
  })

  it('gives the handler no way to release the run early: the lifecycle releases it, recording the run', async () => {
    const { clock, wrap, context, kinds, record } = world()
    let handle: object = {}
    await clock.run(
      wrap(async (_e, ctx) => {
        handle = ctx.singleton
      })(schedulerEvent('2026-11-21T03:00:00Z'), context()),
    )
    expect(
      Object.values(handle).some((value) => typeof value === 'object' && value && 'release' in value),
    ).toBe(false)
    expect('lease' in handle).toBe(false)
    expect(record()).toMatchObject({ expires_at: 0, last_run: '2026-11-21T03:00:00Z' })
    expect(kinds()).toEqual(['acquired', 'released'])
  })
})
