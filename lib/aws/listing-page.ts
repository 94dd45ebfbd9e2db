import { LockStoreError } from '../core/errors.js'
import { classifyError, Failure, type ServiceErrors } from './classify.js'
import { configurationError } from './configuration.js'
import { describe } from './send.js'

/** Time allowed for each page of a listing. */
const PAGE_TIMEOUT_MS = 10_000

/**
 * One page of a key listing (S3 ListObjectsV2, DynamoDB Scan), cut off after 10 s. A failure is
 * classed as the lock's own calls class it (`errors`): a client that cannot work as configured
 * is a `LockConfigurationError`; anything else a `LockStoreError` that says what was asked,
 * retryable when a try later may succeed (throttling, 5xx, a timeout). The caller's own abort is
 * rethrown as its reason.
 */
export async function listingPage<T, A extends string>(
  what: string,
  signal: AbortSignal | undefined,
  call: (signal: AbortSignal) => Promise<T>,
  errors: ServiceErrors<A>,
): Promise<T> {
  const timeout = AbortSignal.timeout(PAGE_TIMEOUT_MS)
  try {
    return await call(signal ? AbortSignal.any([signal, timeout]) : timeout)
  } catch (error) {
    if (signal?.aborted) throw signal.reason
    throw (
      configurationError(error, what) ??
      new LockStoreError(`${what} failed: ${describe(error, timeout.aborted)}`, {
        retryable: timeout.aborted || classifyError(errors, error) === Failure.Transient,
        cause: error,
      })
    )
  }
}
