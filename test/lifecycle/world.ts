import type { InvocationContext } from '../../lib/extend.js'
import {
  type LambdaContext,
  type OutcomeEvent,
  type SingletonContext,
  type SingletonLogger,
  type SingletonOptions,
  withSingleton,
} from '../../lib/index.js'
import { type LambdaContextOptions, lambdaContext } from '../support/lambda-context.js'
import { ScriptedStore } from '../support/scripted-store.js'
import { ManualClock } from '../support/sim-clock.js'

export const KEY = 'locks/nightly-report'

/** One line the logger was given. */
export interface Line {
  readonly level: 'info' | 'warn' | 'error'
  readonly message: string
  readonly fields: Record<string, unknown>
}

/**
 * A world for lifecycle specs: simulated time, a store whose faults can be scripted, handlers
 * behind `withSingleton`, and every outcome and log line they produce.
 */
export function world() {
  const clock = new ManualClock()
  const store = new ScriptedStore({ clock })
  const outcomes: OutcomeEvent[] = []
  const lines: Line[] = []
  const logger: SingletonLogger = {
    info: (message, fields) => lines.push({ level: 'info', message, fields }),
    warn: (message, fields) => lines.push({ level: 'warn', message, fields }),
    error: (message, fields) => lines.push({ level: 'error', message, fields }),
  }
  const options = <TEvent, TContext extends InvocationContext>(
    extra: SingletonOptions<TEvent, TContext> = {},
  ): SingletonOptions<TEvent, TContext> => ({
    store,
    clock,
    logger,
    onOutcome: (event) => outcomes.push(event),
    ...extra,
  })
  const wrap = <TResult>(
    body: (event: unknown, context: SingletonContext) => Promise<TResult>,
    extra: SingletonOptions = {},
  ) => withSingleton(body, options(extra))
  const context = (extra: LambdaContextOptions = {}): LambdaContext => lambdaContext({ ...extra, clock })
  const record = (key = KEY) => JSON.parse(store.memory.peek(key) ?? 'null')
  const kinds = () => outcomes.map((o) => o.outcome)
  return { clock, store, outcomes, lines, options, wrap, context, record, kinds }
}
