import { randomUUID } from 'node:crypto'
import type { Context } from 'aws-lambda'
import type { SingletonScheduleEvent } from '../../lib/config.js'
import type { SingletonContext } from '../../lib/middy/index.js'

/** What a fake Lambda context is made of; every field has a default. */
export interface LambdaContextOptions {
  /** @default 'nightly-report' */
  readonly functionName?: string
  /** The invocation's time limit, from now. @default 60_000 */
  readonly timeoutMs?: number
  /** @default a fresh UUID */
  readonly requestId?: string
  /** The clock its remaining time runs on: a `ManualClock` in specs on simulated time. @default real time */
  readonly clock?: { now(): number }
}

/**
 * The one fake Lambda context of the tests: a function name, a fresh request id, and a
 * remaining-time clock (real time, or the simulated clock it is given). Typed as the handler
 * sees it: the middleware fills `singleton` before the handler runs.
 */
export function lambdaContext(options: LambdaContextOptions = {}): SingletonContext {
  const now = () => options.clock?.now() ?? Date.now()
  const deadline = now() + (options.timeoutMs ?? 60_000)
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

/**
 * The one EventBridge Scheduler payload of the tests, as the construct sends it. The source is
 * spelled out, not imported: it is what deployed schedules send, and must not change unnoticed.
 */
export function schedulerEvent(scheduledTime: string, schedule = 'nightly'): SingletonScheduleEvent {
  return { source: 'lambda-singleton.scheduler', schedule, scheduledTime }
}
