import type { MiddlewareObj, Request } from '@middy/core'
import type { LambdaContext, SingletonContext } from '../lifecycle/handler-context.js'
import { SingletonLifecycle } from '../lifecycle/lifecycle.js'
import type { SingletonOptions } from '../lifecycle/options.js'
import type { SingletonRun } from '../lifecycle/run.js'
import type { SkipResult } from '../lifecycle/skip.js'

/**
 * Middy middleware: runs the handler only while holding the lock for its key, at most one run
 * at a time across all concurrent invocations, retries and regions that share the store. Use it
 * last, so that it wraps the handler most tightly. The behaviour is the run lifecycle's, shared
 * with `withSingleton()`.
 */
export function singleton<TEvent = unknown, TResult = unknown>(
  options: SingletonOptions<TEvent, LambdaContext> = {},
): MiddlewareObj<TEvent, TResult | SkipResult, Error, SingletonContext> {
  const lifecycle = new SingletonLifecycle(options, 'singleton()')
  // Per-request state lives beside the request, not on it: nothing else can clobber it.
  const runs = new WeakMap<object, SingletonRun>()
  type SingletonRequest = Request<TEvent, TResult | SkipResult, Error, SingletonContext>

  const before = async (request: SingletonRequest): Promise<SkipResult | undefined> => {
    const start = await lifecycle.begin(request.event, request.context)
    if (start.status === 'skipped') {
      await cleanupPowertools(request)
      return start.result // Middy answers with it, skipping the handler
    }
    runs.set(request, start.run)
    request.context.singleton = start.run.handle
    return undefined
  }
  const finish = async (request: SingletonRequest, succeeded: boolean): Promise<void> => {
    const run = runs.get(request)
    if (!run) return
    runs.delete(request)
    await lifecycle.end(run, succeeded, succeeded ? undefined : request.error)
  }

  return {
    name: 'lambda-singleton',
    before,
    after: (request) => finish(request, true),
    onError: (request) => finish(request, false),
  }
}

/**
 * Where Powertools' middlewares (`logMetrics`, `injectLambdaContext`, `captureLambdaHandler`,
 * idempotency) leave their cleanup for a middleware that ends a request early, since Middy then
 * skips their `after`: without it, metrics stored for a skipped invocation would not be flushed.
 * The keys and order are those of `cleanupMiddlewares` in `@aws-lambda-powertools/commons`.
 */
const POWERTOOLS_CLEANUPS = ['tracer', 'metrics', 'logger', 'idempotency'].map(
  (name) => `powertools-for-aws.${name}`,
)

async function cleanupPowertools(request: { internal: Record<string, unknown> }): Promise<void> {
  for (const key of POWERTOOLS_CLEANUPS) {
    const cleanup = Object.hasOwn(request.internal, key) ? request.internal[key] : undefined
    if (typeof cleanup === 'function') await cleanup(request)
  }
}
