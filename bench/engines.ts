/**
 * The two engines the benchmark runs on (`npm run bench` starts the local Ceph engine and
 * DynamoDB Local; S3_ENDPOINT and DYNAMODB_ENDPOINT point it elsewhere), and clients for them.
 * Every client is made with retries off, so each counted request is one the engine answered.
 */
import { randomUUID } from 'node:crypto'
import {
  type AttributeDefinition,
  CreateTableCommand,
  DynamoDBClient,
  type KeySchemaElement,
} from '@aws-sdk/client-dynamodb'
import { CreateBucketCommand, S3Client } from '@aws-sdk/client-s3'
import { traced } from './trace/marks.js'

export const region = process.env.AWS_REGION ?? 'us-east-1'
/** BENCH_TRACE=1 (cold-trace.ts sets it for its processes): every client's calls are marked. */
const trace = process.env.BENCH_TRACE === '1' ? traced : <C>(client: C) => client

export interface S3Engine {
  readonly endpoint: string
  /** A bucket made for this run of the benchmark. */
  readonly bucket: string
  client(): S3Client
}

export interface DynamoDBEngine {
  readonly endpoint: string
  client(): DynamoDBClient
  /** Creates an on-demand table with a string partition key `key`; returns its name. */
  createTable(purpose: string, key: string): Promise<string>
}

export async function s3Engine(endpoint: string): Promise<S3Engine> {
  const engine = s3EngineOn(endpoint, `lambda-singleton-bench-${randomUUID().slice(0, 8)}`)
  const admin = engine.client()
  await admin.send(new CreateBucketCommand({ Bucket: engine.bucket }))
  admin.destroy()
  return engine
}

/** The engine with a bucket made already (by `s3Engine`, in another process). */
export function s3EngineOn(endpoint: string, bucket: string): S3Engine {
  const client = () => trace(new S3Client({ endpoint, region, forcePathStyle: true, maxAttempts: 1 }))
  return { endpoint, bucket, client }
}

export function dynamodbEngine(endpoint: string): DynamoDBEngine {
  const client = () => trace(new DynamoDBClient({ endpoint, region, maxAttempts: 1 }))
  return {
    endpoint,
    client,
    async createTable(purpose, key) {
      const tableName = `bench-${purpose}-${randomUUID().slice(0, 8)}`
      const attributes: AttributeDefinition[] = [{ AttributeName: key, AttributeType: 'S' }]
      const schema: KeySchemaElement[] = [{ AttributeName: key, KeyType: 'HASH' }]
      const admin = client()
      await admin.send(
        new CreateTableCommand({
          TableName: tableName,
          BillingMode: 'PAY_PER_REQUEST',
          AttributeDefinitions: attributes,
          KeySchema: schema,
        }),
      )
      admin.destroy()
      return tableName
    },
  }
}
