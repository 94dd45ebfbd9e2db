import type { LambdaContext } from '../../lib/index.js'
import { lambdaContext } from './lambda-context.js'
import type { ManualClock } from './sim-clock.js'

/** A Lambda context whose remaining time runs on a simulated clock. */
export function simContext(
  clock: ManualClock,
  options: { functionName?: string; timeoutMs?: number; requestId?: string } = {},
): LambdaContext {
  return lambdaContext({ timeoutMs: 60_000, ...options, clock })
}
