import { afterEach, describe, expect, it, vi } from 'vitest'
import { LockOptionsError } from '../../lib/core/errors.js'
import { DynamoDBLockStore } from '../../lib/dynamodb/index.js'
import { storeFromEnvironment } from '../../lib/lifecycle/default-store.js'
import { S3LockStore } from '../../lib/s3/index.js'

const environment = (values: Record<string, string>) => {
  for (const name of [
    'LAMBDA_SINGLETON_BUCKET',
    'LAMBDA_SINGLETON_TABLE',
    'LAMBDA_SINGLETON_PARTITION_KEY',
    'LAMBDA_SINGLETON_STORE',
  ]) {
    vi.stubEnv(name, values[name] ?? '')
  }
}

afterEach(() => vi.unstubAllEnvs())

describe('the store a handler gets from the environment the constructs set', () => {
  it('is an S3 store on LAMBDA_SINGLETON_BUCKET', async () => {
    environment({ LAMBDA_SINGLETON_BUCKET: 'locks-bucket' })
    const store = await storeFromEnvironment('singleton()')
    expect(store).toBeInstanceOf(S3LockStore)
    expect((store as S3LockStore).bucket).toBe('locks-bucket')
  })

  it('is a DynamoDB store on LAMBDA_SINGLETON_TABLE, keyed by pk unless told otherwise', async () => {
    environment({ LAMBDA_SINGLETON_TABLE: 'locks-table' })
    const store = await storeFromEnvironment('singleton()')
    expect(store).toBeInstanceOf(DynamoDBLockStore)
    expect((store as DynamoDBLockStore).tableName).toBe('locks-table')
    expect((store as DynamoDBLockStore).partitionKey).toBe('pk')

    environment({ LAMBDA_SINGLETON_TABLE: 'locks-table', LAMBDA_SINGLETON_PARTITION_KEY: 'id' })
    expect(((await storeFromEnvironment('singleton()')) as DynamoDBLockStore).partitionKey).toBe('id')
  })

  it('refuses to guess when both a bucket and a table are set, unless LAMBDA_SINGLETON_STORE says which', async () => {
    environment({ LAMBDA_SINGLETON_BUCKET: 'b', LAMBDA_SINGLETON_TABLE: 't' })
    await expect(storeFromEnvironment('singleton()')).rejects.toThrow(
      expect.objectContaining({ name: 'LockOptionsError', message: expect.stringMatching(/both/) }),
    )
    environment({
      LAMBDA_SINGLETON_BUCKET: 'b',
      LAMBDA_SINGLETON_TABLE: 't',
      LAMBDA_SINGLETON_STORE: 'dynamodb',
    })
    expect(await storeFromEnvironment('singleton()')).toBeInstanceOf(DynamoDBLockStore)
    environment({ LAMBDA_SINGLETON_BUCKET: 'b', LAMBDA_SINGLETON_TABLE: 't', LAMBDA_SINGLETON_STORE: 's3' })
    expect(await storeFromEnvironment('singleton()')).toBeInstanceOf(S3LockStore)
  })

  it('names what is missing: no store at all, an unknown store kind, or a kind without its variable', async () => {
    environment({})
    await expect(storeFromEnvironment('withSingleton()')).rejects.toThrow(
      /withSingleton\(\): no lock store: pass \{ store \}.*LAMBDA_SINGLETON_BUCKET or LAMBDA_SINGLETON_TABLE/,
    )
    environment({ LAMBDA_SINGLETON_BUCKET: 'b', LAMBDA_SINGLETON_STORE: 'redis' })
    await expect(storeFromEnvironment('singleton()')).rejects.toThrow(
      /must be "s3" or "dynamodb", not "redis"/,
    )
    environment({ LAMBDA_SINGLETON_BUCKET: 'b', LAMBDA_SINGLETON_STORE: 'dynamodb' })
    const error = await storeFromEnvironment('singleton()').catch((e: unknown) => e)
    expect(error).toBeInstanceOf(LockOptionsError)
    expect((error as Error).message).toMatch(/is "dynamodb" but LAMBDA_SINGLETON_TABLE is not set/)
  })
})
