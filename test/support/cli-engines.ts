import type { DynamoDBClient } from '@aws-sdk/client-dynamodb'
import type { S3Client } from '@aws-sdk/client-s3'
import { inject } from 'vitest'
import { DynamoDBLockStore } from '../../lib/dynamodb/index.js'
import type { LockRecord, LockStore } from '../../lib/extend.js'
import { S3LockStore } from '../../lib/s3/index.js'
import { cliIn, type ProgramResult, runCliProgram } from './cli.js'

/** The environment a CLI program needs to reach the test's S3 engine. */
export function s3ProgramEnv(): Record<string, string> {
  const target = inject('s3')
  return {
    AWS_ENDPOINT_URL_S3: target.endpoint,
    AWS_REGION: target.region,
    AWS_ACCESS_KEY_ID: target.accessKeyId,
    AWS_SECRET_ACCESS_KEY: target.secretAccessKey,
  }
}

/** The environment a CLI program needs to reach the test's DynamoDB Local. */
export function dynamodbProgramEnv(): Record<string, string> {
  const target = inject('dynamodb')
  return {
    AWS_ENDPOINT_URL_DYNAMODB: target.endpoint,
    AWS_REGION: target.region,
    AWS_ACCESS_KEY_ID: target.accessKeyId,
    AWS_SECRET_ACCESS_KEY: target.secretAccessKey,
  }
}

/** One engine as the CLI's engine suites (pause, history) drive it. */
export interface CliEngine {
  /** The store the lock objects live in. */
  readonly store: () => LockStore
  /** Runs the CLI in this process with the engine's store options appended. */
  readonly cli: (...argv: string[]) => Promise<{ code: number; out: string; err: string }>
  /** Runs the CLI as a program, the engine's store options and environment given. */
  readonly program: (...argv: string[]) => Promise<ProgramResult>
  /** The record as stored. */
  readonly stored: (key: string) => Promise<LockRecord | undefined>
  /** Where the CLI says the key is. */
  readonly where: (key: string) => string
}

/** The record in `store` at `key`, parsed as the CLI would find it. */
async function storedIn(store: LockStore, key: string): Promise<LockRecord | undefined> {
  const found = await store.read(key)
  return found.status === 'found' ? JSON.parse(found.body) : undefined
}

export function s3CliEngine(s3: S3Client, bucket: string): CliEngine {
  const store = () => new S3LockStore({ s3, bucket })
  return {
    store,
    cli: (...argv) => cliIn([...argv, '--bucket', bucket], { s3 }),
    program: (...argv) => runCliProgram([...argv, '--bucket', bucket], s3ProgramEnv()),
    stored: (key) => storedIn(store(), key),
    where: (key) => `s3://${bucket}/${key}`,
  }
}

export function dynamodbCliEngine(client: DynamoDBClient, tableName: string): CliEngine {
  const store = () => new DynamoDBLockStore({ client, tableName })
  return {
    store,
    cli: (...argv) => cliIn([...argv, '--table', tableName], { dynamodb: client }),
    program: (...argv) => runCliProgram([...argv, '--table', tableName], dynamodbProgramEnv()),
    stored: (key) => storedIn(store(), key),
    where: (key) => `"${key}" in table ${tableName}`,
  }
}
