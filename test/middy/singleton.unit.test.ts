import middy from '@middy/core'
import { describe, expect, expectTypeOf, it } from 'vitest'
import { LockOptionsError } from '../../lib/index.js'
import {
  isTickDone,
  type SingletonContext,
  type SingletonState,
  singleton,
  tickIdOf,
} from '../../lib/middy/index.js'

describe('singleton() options', () => {
  it('needs a bucket, from options or the environment the construct sets', () => {
    const saved = process.env.LAMBDA_SINGLETON_BUCKET
    delete process.env.LAMBDA_SINGLETON_BUCKET
    try {
      expect(() => singleton()).toThrow(/LAMBDA_SINGLETON_BUCKET/)
      process.env.LAMBDA_SINGLETON_BUCKET = 'from-env'
      expect(() => singleton()).not.toThrow()
    } finally {
      if (saved === undefined) delete process.env.LAMBDA_SINGLETON_BUCKET
      else process.env.LAMBDA_SINGLETON_BUCKET = saved
    }
  })

  it.each([
    ['an empty key', { key: '' }],
    ['an unknown onHeld', { onHeld: 'queue' as 'skip' }],
    ['a negative wait', { waitMs: -1 }],
    ['a ttl not above the margin', { ttlMs: 1_000, clockSkewMarginMs: 1_000 }],
    ['a heartbeat slower than the lease', { ttlMs: 3_000, heartbeatMs: 5_000 }],
    ['a heartbeat without a ttl', { heartbeatMs: 1_000 }],
  ])('refuses %s when called, before any invocation', (_, options) => {
    expect(() => singleton({ bucket: 'b', ...options })).toThrow(LockOptionsError)
  })

  it('types context.singleton for the handler, without casts', () => {
    const handler = middy()
      .use(singleton({ bucket: 'b' }))
      .handler(async (_event, context) => {
        expectTypeOf(context.singleton).toEqualTypeOf<SingletonState>()
        expectTypeOf(context.singleton.token).toBeNumber()
        expectTypeOf(context.singleton.signal).toEqualTypeOf<AbortSignal>()
        return context.singleton.token
      })
    expectTypeOf(handler).toBeFunction()
    expectTypeOf<SingletonContext['singleton']['checkpoint']>().parameter(0).not.toBeAny()
  })
})

describe('tickIdOf', () => {
  it("reads the construct's Scheduler payload", () => {
    expect(
      tickIdOf({
        source: 'lambda-singleton.scheduler',
        schedule: 's',
        scheduledTime: '2026-11-21T03:00:00Z',
      }),
    ).toBe('2026-11-21T03:00:00Z')
  })
  it("reads an EventBridge rule's Scheduled Event", () => {
    expect(
      tickIdOf({ source: 'aws.events', 'detail-type': 'Scheduled Event', time: '2026-11-21T03:00:00Z' }),
    ).toBe('2026-11-21T03:00:00Z')
  })
  it('finds none in other events', () => {
    expect(tickIdOf({ time: 'x' })).toBeUndefined()
    expect(tickIdOf('text')).toBeUndefined()
    expect(tickIdOf(null)).toBeUndefined()
  })
})

describe('isTickDone', () => {
  it('counts the same tick and, for times, an earlier tick as done', () => {
    expect(isTickDone('2026-11-21T03:00:00Z', '2026-11-21T03:00:00Z')).toBe(true)
    expect(isTickDone('2026-11-20T03:00:00Z', '2026-11-21T03:00:00Z')).toBe(true)
    expect(isTickDone('2026-11-22T03:00:00Z', '2026-11-21T03:00:00Z')).toBe(false)
  })
  it('compares other tick ids for equality only', () => {
    expect(isTickDone('batch-7', 'batch-7')).toBe(true)
    expect(isTickDone('batch-6', 'batch-7')).toBe(false)
    expect(isTickDone('batch-7', undefined)).toBe(false)
  })
})
