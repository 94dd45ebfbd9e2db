import { randomUUID } from 'node:crypto'
import type { LambdaContext } from '../../lib/index.js'
import type { ManualClock } from './sim-clock.js'

/** A Lambda context whose remaining time runs on a simulated clock. */
export function simContext(
  clock: ManualClock,
  options: { functionName?: string; timeoutMs?: number; requestId?: string } = {},
): LambdaContext {
  const deadline = clock.now() + (options.timeoutMs ?? 60_000)
  const functionName = options.functionName ?? 'nightly-report'
  return {
    callbackWaitsForEmptyEventLoop: false,
    functionName,
    functionVersion: '$LATEST',
    invokedFunctionArn: `arn:aws:lambda:us-east-1:123456789012:function:${functionName}`,
    memoryLimitInMB: '256',
    awsRequestId: options.requestId ?? randomUUID(),
    logGroupName: `/aws/lambda/${functionName}`,
    logStreamName: 'test',
    getRemainingTimeInMillis: () => Math.max(0, deadline - clock.now()),
    done: () => undefined,
    fail: () => undefined,
    succeed: () => undefined,
  }
}
