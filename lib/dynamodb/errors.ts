import { configurationReason } from '../aws/configuration.js'
import { errorFields, NETWORK_ERROR_CODES } from '../aws/errors.js'
import { ConfigurationReason, LockConfigurationError } from '../core/errors.js'
import type { ItemLayout } from './item.js'

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
  const shape = errorFields<ErrorShape>(error)
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

/**
 * What DynamoDB says to a key that is not the table's: AWS's words first (GetItem, PutItem, a
 * key of the wrong type), then DynamoDB Local's for the same two requests.
 */
const KEY_SCHEMA_MESSAGES = [
  /provided key element does not match the schema/i,
  /Missing the key \S+ in the item/i,
  /Type mismatch for key/i,
  /number of conditions on the keys is invalid/i,
  /required keys was not given a value/i,
]

/**
 * A `LockConfigurationError` when `error` is DynamoDB refusing the key the store sent, i.e. the
 * table is keyed otherwise than `layout` says (a table keyed `lock_id` and a store left on `pk`):
 * it names the option, the variable and the CLI flag that set the key. Undefined otherwise.
 */
export function keySchemaError(
  error: unknown,
  layout: ItemLayout,
  what: string,
  key: string,
): LockConfigurationError | undefined {
  const { name, message } = errorFields<{ name: unknown; message: unknown }>(error)
  if (name !== 'ValidationException' || typeof message !== 'string') return undefined
  if (!KEY_SCHEMA_MESSAGES.some((pattern) => pattern.test(message))) return undefined
  const given = layout.sortKey
    ? `a string partition key, sort key "${layout.sortKey.name}"`
    : 'a string partition key, no sort key'
  return new LockConfigurationError(
    `the table's key is not "${layout.partitionKey}" (${given}): ${what} was refused (${name}: ${message}); ` +
      "name the table's partition key with partitionKey (new DynamoDBLockStore), " +
      'LAMBDA_SINGLETON_PARTITION_KEY (the store from the environment) or --partition-key (the CLI), ' +
      'and a sort key with sortKey',
    { key, reason: ConfigurationReason.KeySchema, cause: error },
  )
}
