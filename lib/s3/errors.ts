import { configurationReason } from '../aws/configuration.js'
import { errorFields, NETWORK_ERROR_CODES } from '../aws/errors.js'
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
  /** Worth another try: 5xx, throttling, timeouts, dropped connections. */
  Transient: 'transient',
  /**
   * Retrying will not help: access denied, no such bucket, bad request, and a client configured
   * wrong (no region, no credentials, refused credentials: `configurationReason` tells).
   */
  Fatal: 'fatal',
} as const
export type S3ErrorKind = (typeof S3ErrorKind)[keyof typeof S3ErrorKind]

const TRANSIENT_CODES = new Set([
  'SlowDown',
  'Throttling',
  'ThrottlingException',
  'TooManyRequestsException',
  'RequestTimeout',
  // The SDK corrects its clock from this answer, so the next try is signed right.
  'RequestTimeTooSkewed',
  'RequestTimeoutException',
  'InternalError',
  'ServiceUnavailable',
  'OperationAborted',
  ...NETWORK_ERROR_CODES,
])

interface ErrorShape {
  name?: string
  code?: string
  Code?: string
  $metadata?: { httpStatusCode?: number }
  $retryable?: unknown
}

/**
 * Classifies by error code before status: some proxies and S3-compatible engines send
 * `PreconditionFailed` with another status, and 404 covers both a missing key and a missing bucket.
 * A misconfigured client comes first: its errors look like a dropped connection (no status) or
 * like a key hidden behind 403.
 */
export function classifyS3Error(error: unknown): S3ErrorKind {
  if (configurationReason(error) !== undefined) return S3ErrorKind.Fatal
  const shape = errorFields<ErrorShape>(error)
  const code = shape.Code ?? shape.name ?? ''
  const status = shape.$metadata?.httpStatusCode
  if (code === 'PreconditionFailed' || status === 412) return S3ErrorKind.PreconditionFailed
  if (code === 'ConditionalRequestConflict') return S3ErrorKind.Conflict
  if (code === 'NoSuchBucket') return S3ErrorKind.Fatal
  if (code === 'NoSuchKey' || code === 'NotFound' || status === 404) return S3ErrorKind.NotFound
  if (status === 409) return S3ErrorKind.Conflict
  if (code === 'AccessDenied' || (status === 403 && !TRANSIENT_CODES.has(code))) return S3ErrorKind.Denied
  if (TRANSIENT_CODES.has(code) || (shape.code !== undefined && TRANSIENT_CODES.has(shape.code))) {
    return S3ErrorKind.Transient
  }
  // 501: the engine does not implement conditional writes; no retry will change that.
  if (code === 'NotImplemented' || status === 501) return S3ErrorKind.Fatal
  if (status !== undefined && (status >= 500 || status === 429)) return S3ErrorKind.Transient
  if (shape.$retryable) return S3ErrorKind.Transient
  // No HTTP answer at all (socket errors surface without $metadata status): treat as network.
  if (status === undefined && error instanceof Error && !(error instanceof TypeError))
    return S3ErrorKind.Transient
  return S3ErrorKind.Fatal
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
): LockConfigurationError | undefined {
  const { code, hostname } = errorFields<{ code: unknown; hostname: unknown }>(error)
  if (code !== 'ENOTFOUND' || typeof hostname !== 'string') return undefined
  if (!hostname.startsWith(`${bucket}.`) || AWS_HOST.test(hostname)) return undefined
  return new LockConfigurationError(
    `the bucket's host name ${hostname} does not resolve (getaddrinfo ENOTFOUND): ${what} addressed ` +
      'the bucket virtual-hosted style, which a custom endpoint (LocalStack, MinIO, a local engine) ' +
      'rarely serves; give the store a path-style client: ' +
      'new S3LockStore({ bucket, s3: new S3Client({ forcePathStyle: true }) })',
    { key, reason: ConfigurationReason.BucketHostUnresolved, cause: error },
  )
}
