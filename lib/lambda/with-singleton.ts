import type { InvocationContext, LambdaContext, SingletonContext } from '../lifecycle/handler-context.js'
import { SingletonLifecycle } from '../lifecycle/lifecycle.js'
import type { SingletonOptions } from '../lifecycle/options.js'
import type { SkipResult } from '../lifecycle/skip.js'

/**
 * Wraps a plain Lambda handler (or any `async (event, context)` function) so that it runs only
 * while holding its lock: at most one run at a time, with the fencing token and the lease's
 * signal on `context.singleton`. The same lifecycle and options as the Middy middleware.
 *
 * @example
 * export const handler = withSingleton(async (event, context) => {
 *   await fencedPut({ ..., token: context.singleton.token })
 * })
 */
export function withSingleton<
  TEvent = unknown,
  TResult = unknown,
  TContext extends InvocationContext = LambdaContext,
>(
  handler: (event: TEvent, context: SingletonContext<TContext>) => Promise<TResult>,
  options: SingletonOptions<TEvent, TContext> = {},
): (event: TEvent, context: TContext) => Promise<TResult | SkipResult> {
  const lifecycle = new SingletonLifecycle(options, 'withSingleton()')
  return async (event, context) => {
    const start = await lifecycle.begin(event, context)
    if (start.status === 'skipped') return start.result
    const { run } = start
    let result: TResult
    try {
      result = await handler(event, Object.assign(context, { singleton: run.handle }))
    } catch (error) {
      await lifecycle.end(run, false, error)
      throw error
    }
    await lifecycle.end(run, true)
    return result
  }
}
