import { LockStoreError } from '../core/errors.js'
import { describe } from './send.js'

/** Time allowed for each page of a listing. */
const PAGE_TIMEOUT_MS = 10_000

/**
 * One page of a key listing (S3 ListObjectsV2, DynamoDB Scan), cut off after 10 s. A failure is
 * a `LockStoreError` that says what was asked; the caller's own abort is rethrown as its reason.
 */
export async function listingPage<T>(
  what: string,
  signal: AbortSignal | undefined,
  call: (signal: AbortSignal) => Promise<T>,
): Promise<T> {
  const timeout = AbortSignal.timeout(PAGE_TIMEOUT_MS)
  try {
    return await call(signal ? AbortSignal.any([signal, timeout]) : timeout)
  } catch (error) {
    if (signal?.aborted) throw signal.reason
    throw new LockStoreError(`${what} failed: ${describe(error, timeout.aborted)}`, {
      retryable: false,
      cause: error,
    })
  }
}
