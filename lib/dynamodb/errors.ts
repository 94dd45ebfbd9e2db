import { classifyError, Failure, type ServiceErrors } from '../aws/classify.js'
import { errorFields } from '../aws/errors.js'
import { ConfigurationReason, LockConfigurationError } from '../core/errors.js'
import type { ItemLayout } from './item.js'

/** What a DynamoDB error means for the protocol. */
export const DynamoDBErrorKind = {
  /** ConditionalCheckFailedException: the item is not as the write expected. */
  ConditionFailed: 'condition-failed',
  /** TransactionConflictException: a transaction holds the item; re-read and retry. */
  Conflict: 'conflict',
  /**
   * `Transient`: throttling, 5xx, timeouts, dropped connections. `Fatal`: no such table, access
   * denied, a request DynamoDB refuses, and a client configured wrong (no region, no
   * credentials, refused credentials).
   */
  ...Failure,
} as const
export type DynamoDBErrorKind = (typeof DynamoDBErrorKind)[keyof typeof DynamoDBErrorKind]

/** The DynamoDB answers a store acts on. */
export type DynamoDBAnswer = Exclude<DynamoDBErrorKind, Failure>

/**
 * DynamoDB's error names, by what they mean to the protocol. Names only: DynamoDB answers nearly
 * everything with 400, throttling included.
 */
export const DYNAMODB_ERRORS: ServiceErrors<DynamoDBAnswer> = {
  answers: {
    ConditionalCheckFailedException: DynamoDBErrorKind.ConditionFailed,
    TransactionConflictException: DynamoDBErrorKind.Conflict,
  },
  transient: new Set([
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
  ]),
  fatal: new Set([
    'ResourceNotFoundException',
    'AccessDeniedException',
    'ValidationException',
    'ItemCollectionSizeLimitExceededException',
  ]),
}

/** What `error` means for the protocol, by `DYNAMODB_ERRORS`. */
export function classifyDynamoDBError(error: unknown): DynamoDBErrorKind {
  return classifyError(DYNAMODB_ERRORS, error)
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
      'and a sort key with sortKey (new DynamoDBLockStore) or --sort-key NAME=VALUE (the CLI)',
    { key, reason: ConfigurationReason.KeySchema, cause: error },
  )
}
