import { type AttributeValue, type DynamoDBClient, ScanCommand } from '@aws-sdk/client-dynamodb'
import { listingPage } from '../aws/listing-page.js'
import { ConfigurationReason, LockConfigurationError } from '../core/errors.js'
import type { ListKeysOptions } from '../core/store.js'
import { DYNAMODB_ERRORS } from './errors.js'

/** The table a listing scans, as its store knows it. */
export interface ScannedTable {
  readonly client: DynamoDBClient
  readonly tableName: string
  readonly partitionKey: string
  readonly sortKey?: { readonly name: string; readonly value: string } | undefined
}

/**
 * Every lock key in the table that starts with `prefix`, sorted: on a table with a sort key, of
 * the items whose sort key holds `sortKey.value`. A Scan (dynamodb:Scan, which the lock protocol
 * never needs) reads the whole table, its cost growing with the table, not with the matches: the
 * filter only trims the answer. Every item has the table's key attributes, so an item without
 * one named as such says the name is wrong (a table keyed `lock_id` listed as keyed `pk`): a
 * `LockConfigurationError` (`key-schema`), not an empty list. The filter lets such items through
 * to tell; this needs no other permission (DescribeTable would).
 */
export async function listDynamoDBKeys(
  table: ScannedTable,
  prefix: string,
  options: ListKeysOptions = {},
): Promise<string[]> {
  const { client, tableName, partitionKey, sortKey } = table
  const filters = [
    ...(prefix ? ['(begins_with(#key, :prefix) OR attribute_not_exists(#key))'] : []),
    ...(sortKey ? ['(#sort = :sort OR attribute_not_exists(#sort))'] : []),
  ]
  const values = {
    ...(prefix && { ':prefix': { S: prefix } }),
    ...(sortKey && { ':sort': { S: sortKey.value } }),
  }
  const keys = new Set<string>()
  let start: Record<string, AttributeValue> | undefined
  do {
    const page = await listingPage(
      `DynamoDB Scan of ${tableName} for "${prefix}*"`,
      options.signal,
      (abortSignal) =>
        client.send(
          new ScanCommand({
            TableName: tableName,
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
      DYNAMODB_ERRORS,
    )
    for (const item of page.Items ?? []) {
      if (!(partitionKey in item)) throw notTheKey(tableName, partitionKey, 'partition')
      if (sortKey && !(sortKey.name in item)) throw notTheKey(tableName, sortKey.name, 'sort')
      const key = item[partitionKey]?.S
      if (key?.startsWith(prefix)) keys.add(key)
    }
    start = page.LastEvaluatedKey
  } while (start)
  return [...keys].sort()
}

function notTheKey(table: string, name: string, which: 'partition' | 'sort'): LockConfigurationError {
  const option =
    which === 'partition' ? '`partitionKey` (--partition-key NAME)' : '`sortKey` (--sort-key NAME=VALUE)'
  return new LockConfigurationError(
    `the items of table ${table} have no "${name}" attribute: it is not the table's ${which} key; ` +
      `give the key's name with ${option}`,
    { reason: ConfigurationReason.KeySchema },
  )
}
