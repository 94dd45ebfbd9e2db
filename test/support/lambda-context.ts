import { randomUUID } from 'node:crypto'
import type { Context } from 'aws-lambda'
import type { SingletonContext } from '../../lib/middy/index.js'

/**
 * A Lambda-like context: a function name, a fresh request id, and a real remaining-time clock.
 * Typed as the handler sees it: the middleware fills `singleton` before the handler runs.
 */
export function lambdaContext(
  options: { functionName?: string; timeoutMs?: number; requestId?: string; clock?: { now(): number } } = {},
): SingletonContext {
  const now = () => options.clock?.now() ?? Date.now()
  const deadline = now() + (options.timeoutMs ?? 30_000)
  const functionName = options.functionName ?? 'nightly-report'
  const context: Context = {
    callbackWaitsForEmptyEventLoop: false,
    functionName,
    functionVersion: '$LATEST',
    invokedFunctionArn: `arn:aws:lambda:us-east-1:123456789012:function:${functionName}`,
    memoryLimitInMB: '256',
    awsRequestId: options.requestId ?? randomUUID(),
    logGroupName: `/aws/lambda/${functionName}`,
    logStreamName: 'test',
    getRemainingTimeInMillis: () => Math.max(0, deadline - now()),
    done: () => undefined,
    fail: () => undefined,
    succeed: () => undefined,
  }
  return context as SingletonContext
}

/** An EventBridge Scheduler payload as the construct sends it. */
export function schedulerEvent(scheduledTime: string, schedule = 'nightly') {
  return { source: 'lambda-singleton.scheduler', schedule, scheduledTime }
}
