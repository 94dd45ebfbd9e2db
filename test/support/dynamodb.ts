import { randomUUID } from 'node:crypto'
import {
  type AttributeValue,
  CreateTableCommand,
  DeleteItemCommand,
  DynamoDBClient,
  GetItemCommand,
  PutItemCommand,
} from '@aws-sdk/client-dynamodb'
import { inject } from 'vitest'

/** A client for the test endpoint. One attempt per call, like the library's default client. */
export function testDynamoDBClient(
  options: { endpoint?: string; maxAttempts?: number } = {},
): DynamoDBClient {
  const target = inject('dynamodb')
  return new DynamoDBClient({
    endpoint: options.endpoint ?? target.endpoint,
    region: target.region,
    credentials: { accessKeyId: target.accessKeyId, secretAccessKey: target.secretAccessKey },
    maxAttempts: options.maxAttempts ?? 1,
  })
}

/** A new, empty table for one test file, so tests never see each other's locks. */
export async function freshTable(
  client: DynamoDBClient,
  label: string,
  keys: { partitionKey?: string; sortKey?: string } = {},
): Promise<string> {
  const tableName = `ls-${label}-${randomUUID().slice(0, 8)}`
  const partitionKey = keys.partitionKey ?? 'pk'
  await client.send(
    new CreateTableCommand({
      TableName: tableName,
      BillingMode: 'PAY_PER_REQUEST',
      AttributeDefinitions: [
        { AttributeName: partitionKey, AttributeType: 'S' },
        ...(keys.sortKey ? [{ AttributeName: keys.sortKey, AttributeType: 'S' as const }] : []),
      ],
      KeySchema: [
        { AttributeName: partitionKey, KeyType: 'HASH' },
        ...(keys.sortKey ? [{ AttributeName: keys.sortKey, KeyType: 'RANGE' as const }] : []),
      ],
    }),
  )
  return tableName
}

/** JSON as DynamoDB attributes, the way a script with the plain SDK would write it. */
export function marshal(value: unknown): AttributeValue {
  if (value === null) return { NULL: true }
  if (typeof value === 'boolean') return { BOOL: value }
  if (typeof value === 'number') return { N: String(value) }
  if (typeof value === 'string') return { S: value }
  if (Array.isArray(value)) return { L: value.map(marshal) }
  return {
    M: Object.fromEntries(Object.entries(value as Record<string, unknown>).map(([k, v]) => [k, marshal(v)])),
  }
}

/** Writes a JSON object as an item, unconditionally and without the library's own attributes. */
export async function putRawItem(
  client: DynamoDBClient,
  tableName: string,
  key: Record<string, AttributeValue>,
  body: string,
): Promise<void> {
  const fields = (marshal(JSON.parse(body)) as { M: Record<string, AttributeValue> }).M
  await client.send(new PutItemCommand({ TableName: tableName, Item: { ...fields, ...key } }))
}

export async function putItem(
  client: DynamoDBClient,
  tableName: string,
  item: Record<string, AttributeValue>,
): Promise<void> {
  await client.send(new PutItemCommand({ TableName: tableName, Item: item }))
}

export async function getItem(
  client: DynamoDBClient,
  tableName: string,
  key: Record<string, AttributeValue>,
): Promise<Record<string, AttributeValue> | undefined> {
  return (await client.send(new GetItemCommand({ TableName: tableName, Key: key, ConsistentRead: true })))
    .Item
}

export async function deleteItem(
  client: DynamoDBClient,
  tableName: string,
  key: Record<string, AttributeValue>,
): Promise<void> {
  await client.send(new DeleteItemCommand({ TableName: tableName, Key: key }))
}
