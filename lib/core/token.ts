import { ConflictReason, LockConflictError } from './errors.js'
import type { ServerTime } from './server-clock.js'

/**
 * A token that far (ms) or further ahead of the store's clock was not made by the clock floor
 * below: `reset` refuses to write one, so only an outside writer puts one in a record. No token
 * follows it: waiting for the clock to reach it could take years, and following it without the
 * wait would let a later token fall below it once the object is deleted. A token less far ahead
 * (an operator's reset to their own clock's time) is followed, and waited for.
 */
export const AHEAD_OF_CLOCK_MS = 10_000

/**
 * Fencing tokens: the store's clock in milliseconds, or one more than the highest token seen,
 * whichever is larger. A counter kept in the lock object alone goes back when someone writes
 * an older record or deletes the object, and a token handed out twice lets a zombie's write
 * pass the fence; nobody outside can turn the store's clock back.
 *
 * Why it holds: a holder is handed token `T` only once the store's clock has surely passed
 * `T` (`tokenWaitMs`). Any later acquisition takes at least the latest time the store's clock
 * may read then, which is above every `T` already handed out, whatever the object says by now.
 * The price is the wait: how far our estimate of the store's clock may be off, about a second
 * on a process's first call (the `Date` header counts whole seconds) and a few tens of ms once
 * answers have narrowed it (see `ServerClock`).
 *
 * Throws `LockConflictError`, nothing being written, when no token can follow `highestSeen`:
 * `tokens-exhausted` at `Number.MAX_SAFE_INTEGER` (a higher one would not survive a JSON round
 * trip exactly), `record-ahead-of-clock` when it is more than `AHEAD_OF_CLOCK_MS` ahead of the
 * store's clock (see there).
 */
export function tokenAfter(highestSeen: number, server: ServerTime, key: string): number {
  if (highestSeen >= Number.MAX_SAFE_INTEGER) {
    throw new LockConflictError(
      `Lock "${key}": the token is ${highestSeen}, the largest that can be stored exactly; no token can ` +
        `follow it. Nothing was written. ${backToClockRepair(key)}`,
      { key, reason: ConflictReason.TokensExhausted },
    )
  }
  if (isAheadOfClock(highestSeen, server)) {
    throw new LockConflictError(
      `Lock "${key}": the token ${highestSeen} is more than ${AHEAD_OF_CLOCK_MS / 1000} s ahead of the ` +
        `store's clock (${Math.ceil(server.upper)} ms at most), which only an outside write makes; ` +
        'following it would let a later token fall below it once the object is deleted. Nothing was ' +
        `written. ${backToClockRepair(key)}`,
      { key, reason: ConflictReason.RecordAheadOfClock },
    )
  }
  return Math.max(highestSeen + 1, Math.ceil(server.upper))
}

/** What an operator does about a token no acquisition can follow, for error messages. */
function backToClockRepair(key: string): string {
  return (
    `To repair: \`lambda-singleton reset (--bucket B | --table T) --key ${key} --back-to-clock\` (\`new LockOperator({ store, key }).reset({ backToClock: true })\`) ` +
    "writes a released record with a token from the store's clock; objects that fencedPut wrote with " +
    "a higher token then refuse every new holder's write until they are removed or rewritten"
  )
}

/**
 * How long to wait before handing out `token`: until the store's clock has surely passed it
 * (its earliest possible reading is above `token`), so that every later acquisition, which
 * takes at least the latest reading rounded up, takes a higher token even if the object is gone.
 */
export function tokenWaitMs(token: number, server: ServerTime): number {
  return server.lower > token ? 0 : Math.ceil(token + 1 - server.lower)
}

/** Whether `token` is so far ahead of the store's clock that no clock floor can cover it. */
export function isAheadOfClock(token: number, server: ServerTime): boolean {
  return token > server.upper + AHEAD_OF_CLOCK_MS
}
