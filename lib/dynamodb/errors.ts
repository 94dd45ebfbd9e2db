import { configurationReason } from '../aws/configuration.js'
import { NETWORK_ERROR_CODES } from '../aws/errors.js'

/** What a DynamoDB error means for the protocol. */
export const DynamoDBErrorKind = {
  /** ConditionalCheckFailedException: the item is not as the write expected. */
  ConditionFailed: 'condition-failed',
  /** TransactionConflictException: a transaction holds the item; re-read and retry. */
  Conflict: 'conflict',
  /** Worth another try: throttling, 5xx, timeouts, dropped connections. */
  Transient: 'transient',
  /**
   * Retrying will not help: no such table, access denied, a request DynamoDB refuses, and a
   * client configured wrong (no region, no credentials, refused credentials: `configurationReason`).
   */
  Fatal: 'fatal',
} as const
export type DynamoDBErrorKind = (typeof DynamoDBErrorKind)[keyof typeof DynamoDBErrorKind]

const TRANSIENT_CODES = new Set([
  'ThrottlingException',
  'Throttling',
  'ProvisionedThroughputExceededException',
  'RequestLimitExceeded',
  'InternalServerError',
  'InternalFailure',
  'ServiceUnavailable',
  'ServiceUnavailableException',
  'RequestTimeout',
  'RequestTimeoutException',
  ...NETWORK_ERROR_CODES,
])

const FATAL_CODES = new Set([
  'ResourceNotFoundException',
  'AccessDeniedException',
  'ValidationException',
  'ItemCollectionSizeLimitExceededException',
])

interface ErrorShape {
  name?: string
  code?: string
  $metadata?: { httpStatusCode?: number }
  $retryable?: unknown
}

/**
 * Classifies by error name before status: DynamoDB answers nearly everything with 400,
 * throttling included, so the status alone says little. A misconfigured client comes first: a
 * missing region or missing credentials raise errors with no status, like a dropped connection.
 */
export function classifyDynamoDBError(error: unknown): DynamoDBErrorKind {
  if (configurationReason(error) !== undefined) return DynamoDBErrorKind.Fatal
  const shape = (typeof error === 'object' && error !== null ? error : {}) as ErrorShape
  const name = shape.name ?? ''
  const status = shape.$metadata?.httpStatusCode
  if (name === 'ConditionalCheckFailedException') return DynamoDBErrorKind.ConditionFailed
  if (name === 'TransactionConflictException') return DynamoDBErrorKind.Conflict
  if (TRANSIENT_CODES.has(name) || (shape.code !== undefined && TRANSIENT_CODES.has(shape.code))) {
    return DynamoDBErrorKind.Transient
  }
  if (FATAL_CODES.has(name)) return DynamoDBErrorKind.Fatal
  if (status !== undefined && (status >= 500 || status === 429)) return DynamoDBErrorKind.Transient
  if (shape.$retryable) return DynamoDBErrorKind.Transient
  // No HTTP answer at all (socket errors surface without a status): treat as network.
  if (status === undefined && error instanceof Error && !(error instanceof TypeError)) {
    return DynamoDBErrorKind.Transient
  }
  return DynamoDBErrorKind.Fatal
}
