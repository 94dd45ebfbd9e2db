import type { Clock } from '../core/clock.js'
import { LockOptionsError } from '../core/errors.js'

/**
 * How long a fenced write may trust the HEAD it read. Why the fence needs a time bound at all:
 *
 * `fencedPut` conditions its PUT on the etag it read, and a single-part etag is the MD5 of the
 * body alone. A newer holder that writes the bytes the object already holds leaves the etag as it
 * was, so a stale holder that read before that write and sends its PUT after it passes `If-Match`
 * and turns the token back. No write can prevent this on every engine while the bytes stay the
 * user's: a PutObject always gets the MD5 as its etag; the only other form, a multipart upload's
 * (MD5 of the parts' MD5s, `-N`), is written by CompleteMultipartUpload, whose `If-Match` AWS
 * honours but Ceph 16 ignores (it completes unconditionally); and even where both forms can be
 * written conditionally, a small body has exactly these two etags, so a third write of the same
 * bytes brings one back (A, B, A). Versioning, or a condition on anything but the etag, is not
 * offered on PutObject. What is left is time: a stale holder is dangerous only while it sits
 * between its HEAD and its PUT, so that gap is bounded here, and the newer holder waits it out
 * (see `fenced-put.ts`, settle).
 *
 * The bound, measured from the moment the HEAD is sent: the PUT is handed to the network only
 * while the read is valid (checked at the last step of the SDK's stack, after signing and
 * credentials), and the PUT is abandoned (its connection closed) when the validity runs out.
 * Elapsed time is the larger of the monotonic clock and the wall clock: a frozen Lambda's
 * monotonic clock may not count the freeze, and its wall clock is set right on thaw.
 */

/** Default of `FencedPutOptions.readValidityMs`. */
export const DEFAULT_READ_VALIDITY_MS = 2_000

/**
 * How long a newer holder waits after a write that left the etag unchanged, for `validityMs`:
 * the stale holders' clocks may run a little slower than ours, and their last PUT may still be
 * on its way to S3 when their validity ends.
 */
export function settleDelayMs(validityMs: number): number {
  return Math.ceil(validityMs * 1.1) + 50
}

/**
 * Whether an object, as a HEAD found it, has held its bytes so long that no stale write is still
 * on its way to it: then the only etag a stale holder can have read is the one it has now.
 *
 * A stale holder's PUT lands, if ever, within `settleDelayMs` of its HEAD. One that read before
 * the object's last write may carry an older etag, which a write of those older bytes would
 * bring back (X, Y, X: a holder rewriting its output, or two holders' outputs taking turns), and
 * `If-Match` would then let it through. The last write landed at most `settleDelayMs` after the
 * moment `Last-Modified` names (S3 may date a PUT by its start, and a fenced PUT is sent within
 * the read validity of its HEAD), and both headers count whole seconds: so the object is quiet
 * once its `Date` is a second and two settle delays past its `Last-Modified`. Without either
 * header nothing can be told: not quiet.
 */
export function isQuiet(
  lastModified: Date | undefined,
  serverDate: number | undefined,
  validityMs: number,
): boolean {
  if (lastModified === undefined || serverDate === undefined) return false
  const modifiedAt = lastModified.getTime()
  if (!Number.isFinite(modifiedAt)) return false
  return serverDate >= modifiedAt + 1_000 + 2 * settleDelayMs(validityMs)
}

/** The HEAD a write was conditioned on is too old to vouch for it: read again. */
export class StaleReadError extends Error {
  override name = 'StaleReadError'
}

export interface ReadValidity {
  readonly validityMs: number
  /** Ms the read may still vouch for a write; 0 or less once it may not. */
  left(): number
}

/**
 * A validity that starts now: call it just before sending the HEAD. On a given clock (a simulated
 * one), elapsed time is that clock's alone.
 */
export function startReadValidity(validityMs: number, clock?: Clock): ReadValidity {
  if (clock) {
    const started = clock.now()
    return { validityMs, left: () => validityMs - (clock.now() - started) }
  }
  const startedWall = Date.now()
  const startedMono = performance.now()
  return {
    validityMs,
    left: () => validityMs - Math.max(Date.now() - startedWall, performance.now() - startedMono),
  }
}

export function checkReadValidityMs(value: number, key: string): number {
  if (!Number.isFinite(value) || value <= 0) {
    throw new LockOptionsError(`fencedPut: readValidityMs must be a positive number, got ${value}`, { key })
  }
  return value
}

/** The slice of Smithy's middleware stack used here, typed to avoid a dependency on @smithy/types. */
interface FinalStack {
  add(
    middleware: (next: (args: unknown) => Promise<unknown>) => (args: unknown) => Promise<unknown>,
    options: { step: 'deserialize'; priority: 'low'; name: string },
  ): void
}

/**
 * Refuses to let `command` reach the network once `validity` is spent: the last check before the
 * request handler, so that nothing the SDK awaits (credentials, signing, a retry's backoff) can
 * stretch the gap between the HEAD and the PUT past the bound. Each SDK attempt is checked.
 */
export function guardWithReadValidity(
  command: { readonly middlewareStack: unknown },
  validity: ReadValidity,
): void {
  ;(command.middlewareStack as FinalStack).add(
    (next) => async (args) => {
      if (validity.left() <= 0) {
        throw new StaleReadError(`the HEAD is older than ${validity.validityMs} ms; not sent`)
      }
      return next(args)
    },
    { step: 'deserialize', priority: 'low', name: 'lambdaSingletonReadValidity' },
  )
}
