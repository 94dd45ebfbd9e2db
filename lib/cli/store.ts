import type { DynamoDBClient } from '@aws-sdk/client-dynamodb'
import type { S3Client } from '@aws-sdk/client-s3'
import type { LockStore } from '../core/store.js'

/** Where the lock lives, as the command line names it. */
export interface StoreTarget {
  readonly bucket?: string | undefined
  readonly table?: string | undefined
  readonly partitionKey?: string | undefined
  /** Another engine's endpoint (path-style for S3). */
  readonly endpoint?: string | undefined
}

/** Clients to use instead of ones built from the options (tests). */
export interface StoreClients {
  readonly s3?: S3Client | undefined
  readonly dynamodb?: DynamoDBClient | undefined
}

export interface OpenStore {
  readonly store: LockStore
  /** Frees the client, when it was built here. */
  close(): void
}

/**
 * The store the options name. Each SDK is imported only when its store is used, so the CLI of
 * an S3-only install runs without the DynamoDB SDK, and the other way round.
 */
export async function openStore(target: StoreTarget, clients: StoreClients): Promise<OpenStore> {
  const { endpoint } = target
  if (target.table) {
    const { DynamoDBClient } = await import('@aws-sdk/client-dynamodb')
    const { DynamoDBLockStore } = await import('../dynamodb/store.js')
    const client = clients.dynamodb ?? new DynamoDBClient({ maxAttempts: 1, ...(endpoint && { endpoint }) })
    const partitionKey = target.partitionKey
    return {
      store: new DynamoDBLockStore({
        client,
        tableName: target.table,
        ...(partitionKey && { partitionKey }),
      }),
      close: () => {
        if (!clients.dynamodb) client.destroy()
      },
    }
  }
  const { S3Client } = await import('@aws-sdk/client-s3')
  const { S3LockStore } = await import('../s3/store.js')
  const s3 = clients.s3 ?? new S3Client(endpoint ? { endpoint, forcePathStyle: true } : {})
  return {
    store: new S3LockStore({ s3, bucket: target.bucket ?? '' }),
    close: () => {
      if (!clients.s3) s3.destroy()
    },
  }
}
