import { nextToken } from './record.js'
import type { ServerTime } from './server-clock.js'

/**
 * A token that far (ms) or further ahead of the store's clock was not made by the clock floor
 * below: `reset` refuses such tokens, so only an outside writer puts one in a record. Waiting
 * for the clock to reach it could take years; such a token is followed by +1, as it says. A
 * token less far ahead (an operator's reset to their own clock's time) is waited for.
 */
export const AHEAD_OF_CLOCK_MS = 10_000

/**
 * Fencing tokens: the store's clock in milliseconds, or one more than the highest token seen,
 * whichever is larger. A counter kept in the lock object alone goes back when someone writes
 * an older record or deletes the object, and a token handed out twice lets a zombie's write
 * pass the fence; nobody outside can turn the store's clock back.
 *
 * Why it holds: a holder is handed token `T` only once the store's clock has surely reached
 * `T` (`tokenWaitMs`). Any later acquisition takes at least the latest time the store's clock
 * may read then, which is past every `T` already handed out, whatever the object says by now.
 * The price is the wait: how far our estimate of the store's clock may be off, about a second
 * on a process's first call (the `Date` header counts whole seconds) and a few tens of ms once
 * answers have narrowed it (see `ServerClock`).
 */
export function tokenAfter(highestSeen: number, server: ServerTime, key: string): number {
  return Math.max(nextToken(highestSeen, key), Math.ceil(server.upper))
}

/**
 * How long to wait before handing out `token`: until the store's clock has surely reached it.
 * Zero for a token far ahead of the clock (an outside writer's), which the clock cannot cover.
 */
export function tokenWaitMs(token: number, server: ServerTime): number {
  if (isAheadOfClock(token, server)) return 0
  return Math.max(0, Math.ceil(token - server.lower))
}

/** Whether `token` is so far ahead of the store's clock that no clock floor can cover it. */
export function isAheadOfClock(token: number, server: ServerTime): boolean {
  return token > server.upper + AHEAD_OF_CLOCK_MS
}
