import { LockError } from '../core/errors.js'
import type { LockRecord } from '../core/record.js'

/**
 * Thrown by `singleton()` and `withSingleton()` with `onHeld: 'fail'` when another run holds the lock, so that the
 * invoker (Lambda's async retries, a queue) tries again later.
 */
export class LockHeldError extends LockError {
  override name = 'LockHeldError'
  /** The holder's record as last read. */
  readonly holder: LockRecord

  constructor(message: string, options: { key: string; holder: LockRecord; cause?: unknown }) {
    super(message, options)
    this.holder = options.holder
  }
}
