import { classifyError, Failure, type ServiceErrors } from '../aws/classify.js'
import { errorFields } from '../aws/errors.js'
import { ConfigurationReason, LockConfigurationError } from '../core/errors.js'

/** What an S3 error means for the protocol. */
export const S3ErrorKind = {
  PreconditionFailed: 'precondition-failed',
  Conflict: 'conflict',
  NotFound: 'not-found',
  /**
   * 403: not allowed, or (for a GET without s3:ListBucket) no such key. Not a 403 that refuses
   * the credentials themselves (`InvalidAccessKeyId`, `SignatureDoesNotMatch`): that is `Fatal`.
   */
  Denied: 'denied',
  /**
   * `Transient`: 5xx, throttling, timeouts, dropped connections. `Fatal`: no such bucket, bad
   * request, and a client configured wrong (no region, no credentials, refused credentials).
   */
  ...Failure,
} as const
export type S3ErrorKind = (typeof S3ErrorKind)[keyof typeof S3ErrorKind]

/** The S3 answers a store acts on. */
export type S3Answer = Exclude<S3ErrorKind, Failure>

/** S3's error codes and statuses, by what they mean to the protocol. */
export const S3_ERRORS: ServiceErrors<S3Answer> = {
  answers: {
    PreconditionFailed: S3ErrorKind.PreconditionFailed,
    ConditionalRequestConflict: S3ErrorKind.Conflict,
    NoSuchKey: S3ErrorKind.NotFound,
    // A HEAD's 404, which has no body to name a code.
    NotFound: S3ErrorKind.NotFound,
    AccessDenied: S3ErrorKind.Denied,
  },
  answerStatuses: {
    412: S3ErrorKind.PreconditionFailed,
    404: S3ErrorKind.NotFound,
    409: S3ErrorKind.Conflict,
    403: S3ErrorKind.Denied,
  },
  transient: new Set([
    'SlowDown',
    'Throttling',
    'ThrottlingException',
    'TooManyRequestsException',
    'RequestTimeout',
    // The SDK corrects its clock from this answer (a 403), so the next try is signed right.
    'RequestTimeTooSkewed',
    'RequestTimeoutException',
    'InternalError',
    'ServiceUnavailable',
    'OperationAborted',
  ]),
  // A 404 that no retry turns into an object; 501: the engine has no conditional writes.
  fatal: new Set(['NoSuchBucket', 'NotImplemented']),
  fatalStatuses: new Set([501]),
}

/** What `error` means for the protocol, by `S3_ERRORS`. */
export function classifyS3Error(error: unknown): S3ErrorKind {
  return classifyError(S3_ERRORS, error)
}

/** AWS's own S3 host names: every bucket's name resolves there, so a miss is DNS failing for now. */
const AWS_HOST = /\.amazonaws\.com(\.cn)?$/

/**
 * A `LockConfigurationError` when `error` says that the bucket's own host name does not resolve:
 * the client addresses the bucket virtual-hosted style (`<bucket>.<endpoint host>`, the SDK's
 * default), which a custom endpoint such as LocalStack, MinIO or a local engine rarely serves.
 * No retry helps: the fix is a path-style client. Undefined for any other error.
 */
export function bucketHostError(
  error: unknown,
  bucket: string,
  what: string,
  key: string,
  caller?: string,
): LockConfigurationError | undefined {
  const { code, hostname } = errorFields<{ code: unknown; hostname: unknown }>(error)
  if (code !== 'ENOTFOUND' || typeof hostname !== 'string') return undefined
  if (!hostname.startsWith(`${bucket}.`) || AWS_HOST.test(hostname)) return undefined
  // The client to fix is the one the caller was given: fencedPut's own, or the store's.
  const fix = caller?.startsWith('fencedPut')
    ? 'pass fencedPut a path-style client: fencedPut({ s3: new S3Client({ forcePathStyle: true }), … })'
    : 'give the store a path-style client: new S3LockStore({ bucket, s3: new S3Client({ forcePathStyle: true }) })'
  return new LockConfigurationError(
    `the bucket's host name ${hostname} does not resolve (getaddrinfo ENOTFOUND): ${what} addressed ` +
      'the bucket virtual-hosted style, which a custom endpoint (LocalStack, MinIO, a local engine) ' +
      `rarely serves; ${fix}`,
    { key, reason: ConfigurationReason.BucketHostUnresolved, cause: error },
  )
}
