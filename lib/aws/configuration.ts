import { ConfigurationReason, LockConfigurationError } from '../core/errors.js'

/**
 * Tells a client that cannot work as configured from a store that failed: the SDK's errors for a
 * missing region or missing credentials carry no HTTP status, like a dropped connection, and
 * refused credentials come back as an ordinary 4xx (a 403 on S3, like a key hidden from a reader
 * without s3:ListBucket). Both are named by the SDK or the service, never by status alone.
 */

/**
 * Error codes with which a service refuses the credentials themselves (not what they may do):
 * S3's first, then those of the JSON services (DynamoDB, STS).
 */
const REFUSED_CREDENTIALS_CODES: ReadonlySet<string> = new Set([
  'InvalidAccessKeyId',
  'SignatureDoesNotMatch',
  'ExpiredToken',
  'InvalidToken',
  'TokenRefreshRequired',
  'UnrecognizedClientException',
  'InvalidSignatureException',
  'IncompleteSignatureException',
  'MissingAuthenticationTokenException',
  'ExpiredTokenException',
  'InvalidClientTokenId',
])

/** What the SDK's credential chain throws when no link gave credentials (or an SSO token). */
const NO_CREDENTIALS_NAMES: ReadonlySet<string> = new Set(['CredentialsProviderError', 'TokenProviderError'])

/** The start of the messages of the plain `Error`s the SDK's region resolution throws. */
const NO_REGION_MESSAGES = ['Region is missing', 'Region not accepted']

const PROBLEMS = {
  [ConfigurationReason.NoRegion]: {
    what: 'no AWS region',
    fix: 'set AWS_REGION (or a region for your AWS_PROFILE), or give the client a region',
  },
  [ConfigurationReason.NoCredentials]: {
    what: 'no AWS credentials',
    fix: 'set AWS_PROFILE, or AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or run where a role provides them',
  },
  [ConfigurationReason.CredentialsRefused]: {
    what: 'the AWS credentials were refused',
    fix: 'check the access key, its secret and, for temporary credentials, the session token',
  },
} as const satisfies Record<SdkConfigurationReason, { what: string; fix: string }>

/** The reasons any AWS service's errors tell; the others are a store's own to recognise. */
type SdkConfigurationReason =
  | typeof ConfigurationReason.NoRegion
  | typeof ConfigurationReason.NoCredentials
  | typeof ConfigurationReason.CredentialsRefused

interface ErrorShape {
  name?: unknown
  Code?: unknown
  message?: unknown
  $metadata?: unknown
}

/** Why `error` says the client is misconfigured, or undefined when it says something else. */
export function configurationReason(error: unknown): SdkConfigurationReason | undefined {
  if (typeof error !== 'object' || error === null) return undefined
  const { name, message, $metadata } = error as ErrorShape
  const given = code(error) ?? name
  if (typeof given === 'string' && REFUSED_CREDENTIALS_CODES.has(given)) {
    return ConfigurationReason.CredentialsRefused
  }
  // Both below are raised before any request is sent; a service's answer is never one of them.
  if (($metadata as { httpStatusCode?: unknown } | undefined)?.httpStatusCode !== undefined) return undefined
  if (typeof name === 'string' && NO_CREDENTIALS_NAMES.has(name)) return ConfigurationReason.NoCredentials
  if (typeof message === 'string' && NO_REGION_MESSAGES.some((start) => message.startsWith(start))) {
    return ConfigurationReason.NoRegion
  }
  return undefined
}

/**
 * A `LockConfigurationError` for `error` when it says the client is misconfigured, else
 * undefined. `what` names the request (`S3 GetObject on s3://b/k`). The message starts with the
 * problem, so that it reads first wherever the message is cut.
 */
export function configurationError(
  error: unknown,
  what: string,
  key?: string,
): LockConfigurationError | undefined {
  const reason = configurationReason(error)
  if (reason === undefined) return undefined
  // Only objects have a reason.
  const shape = error as Error
  const problem = PROBLEMS[reason]
  const { message } = shape
  const detail =
    reason === ConfigurationReason.CredentialsRefused
      ? `(${code(shape) ?? shape.name}): ${what} answered "${message}"`
      : `(${message}): ${what} was not sent`
  return new LockConfigurationError(`${problem.what} ${detail}; ${problem.fix}`, {
    ...(key !== undefined && { key }),
    reason,
    cause: error,
  })
}

function code(error: object): string | undefined {
  const { Code } = error as ErrorShape
  return typeof Code === 'string' ? Code : undefined
}
