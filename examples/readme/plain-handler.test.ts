// Unit tests of your own handler, without S3: an in-memory store.
import { isSkipResult, type LambdaContext, silentLogger } from 'lambda-singleton'
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
    const handler = makeHandler({ store: new MemoryLockStore(), logger: silentLogger })
    const [a, b] = await Promise.all([
      handler({ day: 'mon' }, context('1')),
      handler({ day: 'mon' }, context('2')),
    ])
    expect([a, b].filter(isSkipResult)).toHaveLength(1)
    const c = await handler({ day: 'tue' }, context('3'))
    expect(c).toMatchObject({ day: 'tue' })
    const tokens = [a, b, c].flatMap((result) => (isSkipResult(result) ? [] : [result.token]))
    expect(tokens).toHaveLength(2) // the one of a and b that ran, then c
    expect(tokens[1]).toBeGreaterThan(tokens[0] ?? Number.POSITIVE_INFINITY)
  })
})
