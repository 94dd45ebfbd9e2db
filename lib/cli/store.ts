import type { DynamoDBClient } from '@aws-sdk/client-dynamodb'
import type { S3Client } from '@aws-sdk/client-s3'
import { describe } from '../aws/send.js'
import { LockStoreError } from '../core/errors.js'
import type { EtagQuoting } from '../s3/etag.js'
import { ConfigurationError, LockNotFoundError, refusedCredentials } from './exit-codes.js'
import { ObservedStore } from './observed-store.js'

/** Where the locks live, as the command line names them. */
export interface StoreTarget {
  readonly bucket?: string | undefined
  readonly table?: string | undefined
  readonly partitionKey?: string | undefined
  /** A table with a sort key: its name and the value every lock item has. */
  readonly sortKey?: { readonly name: string; readonly value: string } | undefined
  /** Another engine's endpoint (path-style for S3). */
  readonly endpoint?: string | undefined
  /** The store's `requestTimeoutMs`; the store's default when absent. */
  readonly requestTimeoutMs?: number | undefined
  /** S3 only: the store's `etagQuoting`. */
  readonly etagQuoting?: EtagQuoting | undefined
}

/** Clients to use instead of ones built from the options (tests). */
export interface StoreClients {
  readonly s3?: S3Client | undefined
  readonly dynamodb?: DynamoDBClient | undefined
}

export interface OpenStore {
  readonly store: ObservedStore
  /** Where a key lives, for messages: `s3://bucket/key`, `key in table T`. */
  where(key: string): string
  /**
   * Throws `LockNotFoundError` for a key the store read as absent, once sure it is: S3 answers
   * 403 for a missing key and for a key these credentials may not read alike, so it is listed.
   */
  notFound(key: string): Promise<never>
  /** Frees the client, when it was built here. */
  close(): void
}

/**
 * The store the options name, its region and credentials checked first so that a missing one is
 * named as such. Each SDK is imported only when its store is used, so the CLI of an S3-only
 * install runs without the DynamoDB SDK, and the other way round.
 */
export async function openStore(
  target: StoreTarget,
  clients: StoreClients,
  env: NodeJS.ProcessEnv = {},
): Promise<OpenStore> {
  const opened = target.table
    ? await openTable(target, target.table, clients)
    : await openBucket(target, clients, env)
  try {
    await checkConfiguration(opened.client)
  } catch (error) {
    opened.close()
    throw error
  }
  return opened
}

async function openBucket(target: StoreTarget, clients: StoreClients, env: NodeJS.ProcessEnv) {
  const { S3Client } = await import('@aws-sdk/client-s3').catch(sdkMissing('--bucket', S3_SDK))
  const { S3LockStore } = await import('../s3/store.js').catch(sdkMissing('--bucket', S3_SDK))
  const bucket = target.bucket ?? ''
  // The SDK's own variable, then the one this repository's scripts set for the local engine.
  const endpoint = target.endpoint ?? env.AWS_ENDPOINT_URL_S3 ?? env.S3_ENDPOINT
  const s3 = clients.s3 ?? new S3Client(endpoint ? { endpoint, forcePathStyle: true } : {})
  const { requestTimeoutMs, etagQuoting } = target
  const store = new ObservedStore(
    new S3LockStore({
      s3,
      bucket,
      ...(requestTimeoutMs !== undefined && { requestTimeoutMs }),
      ...(etagQuoting !== undefined && { etagQuoting }),
    }),
  )
  return {
    client: s3,
    store,
    where: (key: string) => `s3://${bucket}/${key}`,
    notFound: (key: string) => s3NotFound(store, bucket, key),
    close: () => {
      if (!clients.s3) s3.destroy()
    },
  }
}

async function openTable(target: StoreTarget, table: string, clients: StoreClients) {
  const { DynamoDBClient } = await import('@aws-sdk/client-dynamodb').catch(
    sdkMissing('--table', DYNAMODB_SDK),
  )
  const { DynamoDBLockStore } = await import('../dynamodb/store.js').catch(
    sdkMissing('--table', DYNAMODB_SDK),
  )
  const { endpoint } = target
  const partitionKey = target.partitionKey ?? 'pk'
  const client = clients.dynamodb ?? new DynamoDBClient({ maxAttempts: 1, ...(endpoint && { endpoint }) })
  const { sortKey, requestTimeoutMs } = target
  const store = new ObservedStore(
    new DynamoDBLockStore({
      client,
      tableName: table,
      partitionKey,
      ...(sortKey && { sortKey }),
      ...(requestTimeoutMs !== undefined && { requestTimeoutMs }),
    }),
  )
  const where = (key: string) => `"${key}" in table ${table}`
  return {
    client,
    store,
    where,
    notFound: async (key: string): Promise<never> => {
      throw new LockNotFoundError(`no lock ${where(key)} (partition key ${partitionKey})`, key)
    },
    close: () => {
      if (!clients.dynamodb) client.destroy()
    },
  }
}

const S3_SDK = '@aws-sdk/client-s3'
const DYNAMODB_SDK = '@aws-sdk/client-dynamodb'

/**
 * The SDK clients are peer dependencies (DynamoDB's optional), which the project may not have
 * installed: say which one to install, in a line, rather than print Node's resolution stack.
 * Any other failure to load is rethrown as it is.
 */
function sdkMissing(option: string, sdk: string): (error: unknown) => never {
  return (error) => {
    const code = (error as NodeJS.ErrnoException).code
    if (code !== 'ERR_MODULE_NOT_FOUND' || !String(error).includes(`'${sdk}'`)) throw error
    throw new ConfigurationError(`${option} needs ${sdk}, which is not installed: npm install ${sdk}`, {
      cause: error,
    })
  }
}

/**
 * A key S3 read as absent. A 403 stands for a missing key and for one these credentials may not
 * read alike; listing the key tells them apart, and names refused credentials when they are.
 */
async function s3NotFound(store: ObservedStore, bucket: string, key: string): Promise<never> {
  const where = `s3://${bucket}/${key}`
  if (!store.absenceUnconfirmed(key)) throw new LockNotFoundError(`no lock at ${where}`, key)
  let exists: boolean
  try {
    exists = (await store.listKeys(key, { pageSize: 1 }))[0] === key
  } catch (error) {
    if (refusedCredentials(error)) throw error
    throw new LockStoreError(
      `S3 answered 403 to reading ${where}: no lock is there or these credentials may not read it, ` +
        `and listing the key to tell failed too (${describe(error)}); s3:ListBucket would let S3 tell`,
      { key, retryable: false, cause: error },
    )
  }
  if (!exists) throw new LockNotFoundError(`no lock at ${where}`, key)
  throw new LockStoreError(`${where} exists, but these credentials may not read it (S3 answered 403)`, {
    key,
    retryable: false,
  })
}

interface ConfiguredClient {
  readonly config: { readonly region: unknown; readonly credentials: unknown }
}

/**
 * Resolves the client's region and credentials as its first request would, so that a missing
 * one is reported as what it is rather than as a store that "kept failing".
 */
async function checkConfiguration(client: ConfiguredClient): Promise<void> {
  const { region, credentials } = client.config
  try {
    if (typeof region === 'function') await region()
  } catch (error) {
    throw new ConfigurationError(
      'no AWS region: set AWS_REGION, or a region for your AWS_PROFILE in ~/.aws/config',
      { cause: error },
    )
  }
  try {
    if (typeof credentials === 'function') await credentials()
  } catch (error) {
    throw new ConfigurationError(
      `no AWS credentials (${(error as Error).message}): set AWS_PROFILE, or AWS_ACCESS_KEY_ID and ` +
        'AWS_SECRET_ACCESS_KEY, or run where a role provides them',
      { cause: error },
    )
  }
}
