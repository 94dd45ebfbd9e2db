// Unit tests of your own handler, without S3: an in-memory store.
import { isSkipResult, type LambdaContext } from 'lambda-singleton'
import { MemoryLockStore } from 'lambda-singleton/memory'
import { describe, expect, it } from 'vitest'
import { makeHandler } from './plain-handler.js'

const context = (requestId: string) =>
  ({
    functionName: 'report',
    awsRequestId: requestId,
    getRemainingTimeInMillis: () => 60_000,
  }) as LambdaContext

describe('the report job', () => {
  it('runs once at a time, and each run gets a higher fencing token', async () => {
    const handler = makeHandler({ store: new MemoryLockStore(), logger: false })
    // Two invocations at once: the second skips while the first holds the lock, or (this job
    // being instant) gets it once the first has released it; never both at once.
    const [a, b] = await Promise.all([
      handler({ day: 'mon' }, context('1')),
      handler({ day: 'mon' }, context('2')),
    ])
    const c = await handler({ day: 'tue' }, context('3'))
    expect(c).toMatchObject({ day: 'tue' })
    const earlier = [a, b].flatMap((result) => (isSkipResult(result) ? [] : [result.token]))
    expect(earlier.length).toBeGreaterThanOrEqual(1)
    expect(new Set(earlier).size).toBe(earlier.length) // no token handed out twice
    const last = isSkipResult(c) ? 0 : c.token
    expect(earlier.every((token) => token < last)).toBe(true)
  })
})
