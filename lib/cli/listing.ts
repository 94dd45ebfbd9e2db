import type { DynamoDBClient } from '@aws-sdk/client-dynamodb'
import type { S3Client } from '@aws-sdk/client-s3'
import { describe } from '../aws/send.js'
import { LockStoreError } from '../core/errors.js'
import { ConfigurationError } from './exit-codes.js'

/**
 * Finding lock keys, which the lock protocol never needs: S3 ListObjectsV2 under a prefix
 * (s3:ListBucket), a DynamoDB Scan filtered by key prefix (dynamodb:Scan). Each SDK is imported
 * only when its listing is asked for.
 */

export interface ListOptions {
  /** Keys per request (S3 MaxKeys, DynamoDB Limit). @default the service's maximum */
  readonly pageSize?: number
  readonly signal?: AbortSignal
}

/** Time allowed for each page. */
const PAGE_TIMEOUT_MS = 10_000

/** Every key in `bucket` that starts with `prefix`, in S3's (lexicographic) order. */
export async function listS3Keys(
  s3: S3Client,
  bucket: string,
  prefix: string,
  options: ListOptions = {},
): Promise<string[]> {
  const { ListObjectsV2Command } = await import('@aws-sdk/client-s3')
  const keys: string[] = []
  let continuation: string | undefined
  do {
    const page = await send(`S3 ListObjectsV2 of s3://${bucket}/${prefix}*`, options.signal, (abortSignal) =>
      s3.send(
        new ListObjectsV2Command({
          Bucket: bucket,
          Prefix: prefix || undefined,
          ContinuationToken: continuation,
          MaxKeys: options.pageSize,
        }),
        { abortSignal },
      ),
    )
    for (const object of page.Contents ?? []) if (object.Key !== undefined) keys.push(object.Key)
    continuation = page.IsTruncated ? page.NextContinuationToken : undefined
  } while (continuation)
  return keys
}

/**
 * Every lock key in `table` that starts with `prefix`, sorted: on a table with a sort key, of
 * the items whose sort key holds `sortKey.value`. A Scan reads the whole table (its cost grows
 * with the table, not with the matches): the filter only trims the answer. Every item has the
 * table's key attributes, so an item without one named as such says the name is wrong (a table
 * keyed `lock_id` listed as keyed `pk`): that is a `ConfigurationError`, not an empty list. The
 * filter lets such items through to tell; this needs no other permission (DescribeTable would).
 */
export async function listDynamoDBKeys(
  client: DynamoDBClient,
  table: string,
  partitionKey: string,
  prefix: string,
  options: ListOptions & { readonly sortKey?: { readonly name: string; readonly value: string } } = {},
): Promise<string[]> {
  const { ScanCommand } = await import('@aws-sdk/client-dynamodb')
  const { sortKey } = options
  const filters = [
    ...(prefix ? ['(begins_with(#key, :prefix) OR attribute_not_exists(#key))'] : []),
    ...(sortKey ? ['(#sort = :sort OR attribute_not_exists(#sort))'] : []),
  ]
  const values = {
    ...(prefix && { ':prefix': { S: prefix } }),
    ...(sortKey && { ':sort': { S: sortKey.value } }),
  }
  const keys = new Set<string>()
  let start: Record<string, import('@aws-sdk/client-dynamodb').AttributeValue> | undefined
  do {
    const page = await send(`DynamoDB Scan of ${table} for "${prefix}*"`, options.signal, (abortSignal) =>
      client.send(
        new ScanCommand({
          TableName: table,
          ProjectionExpression: sortKey ? '#key, #sort' : '#key',
          ExpressionAttributeNames: { '#key': partitionKey, ...(sortKey && { '#sort': sortKey.name }) },
          ...(filters.length > 0 && {
            FilterExpression: filters.join(' AND '),
            ExpressionAttributeValues: values,
          }),
          ExclusiveStartKey: start,
          Limit: options.pageSize,
          ConsistentRead: true,
        }),
        { abortSignal },
      ),
    )
    for (const item of page.Items ?? []) {
      if (!(partitionKey in item)) throw notTheKey(table, partitionKey, 'partition')
      if (sortKey && !(sortKey.name in item)) throw notTheKey(table, sortKey.name, 'sort')
      const key = item[partitionKey]?.S
      if (key?.startsWith(prefix)) keys.add(key)
    }
    start = page.LastEvaluatedKey
  } while (start)
  return [...keys].sort()
}

function notTheKey(table: string, name: string, which: 'partition' | 'sort'): ConfigurationError {
  const option = which === 'partition' ? '--partition-key NAME' : '--sort-key NAME=VALUE'
  return new ConfigurationError(
    `the items of table ${table} have no "${name}" attribute: it is not the table's ${which} key; ` +
      `give the key's name with ${option}`,
  )
}

/**
 * Says whether an S3 key that read as absent through a 403 is really absent, by listing it: the
 * answer to the listing names the refusal (refused credentials, no s3:ListBucket) when there is one.
 */
export async function s3KeyExists(s3: S3Client, bucket: string, key: string): Promise<boolean> {
  const found = await listS3Keys(s3, bucket, key, { pageSize: 1 })
  return found[0] === key
}

async function send<T>(
  what: string,
  signal: AbortSignal | undefined,
  call: (signal: AbortSignal) => Promise<T>,
) {
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
