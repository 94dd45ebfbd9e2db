import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { DynamoDBClient } from '@aws-sdk/client-dynamodb'
import { S3Client } from '@aws-sdk/client-s3'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { DynamoDBLockStore } from '../../lib/dynamodb/index.js'
import type { LockStore } from '../../lib/extend.js'
import { LockConfigurationError, LockStoreError } from '../../lib/index.js'
import { S3LockStore } from '../../lib/s3/index.js'

/**
 * What a store makes of a request that outlived its `requestTimeoutMs`. Our timeout aborts the
 * request: a timed-out request is worth another try. But the SDK resolves credentials outside the
 * abort signal, so what a slow credential chain finally throws is still the SDK's own word on the
 * client, and both stores must take it as such.
 */

const KEY = 'locks/nightly-report'
const TIMEOUT_MS = 50
const KEYS = { accessKeyId: 'AKIDEXAMPLE', secretAccessKey: 'secret' }

/** A server that takes every request and never answers it. */
let silent: Server
let endpoint: string
beforeAll(async () => {
  silent = createServer((request) => request.resume())
  await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve))
  endpoint = `http://127.0.0.1:${(silent.address() as AddressInfo).port}`
})
afterAll(async () => {
  silent.closeAllConnections()
  await new Promise((resolve) => silent.close(resolve))
})

type Credentials = () => Promise<typeof KEYS>

/** A credential chain that takes longer than the request's timeout, then gives `outcome`. */
const slowly =
  (outcome: () => typeof KEYS): Credentials =>
  () =>
    new Promise((resolve, reject) =>
      setTimeout(() => {
        try {
          resolve(outcome())
        } catch (error) {
          reject(error)
        }
      }, TIMEOUT_MS * 3),
    )

const noCredentials = () => {
  throw Object.assign(new Error('Could not load credentials from any providers'), {
    name: 'CredentialsProviderError',
  })
}

const STORES: ReadonlyArray<readonly [string, (credentials: Credentials | typeof KEYS) => LockStore]> = [
  [
    'S3LockStore',
    (credentials) =>
      new S3LockStore({
        s3: new S3Client({
          endpoint,
          region: 'eu-west-1',
          forcePathStyle: true,
          maxAttempts: 1,
          credentials,
        }),
        bucket: 'locks',
        requestTimeoutMs: TIMEOUT_MS,
      }),
  ],
  [
    'DynamoDBLockStore',
    (credentials) =>
      new DynamoDBLockStore({
        client: new DynamoDBClient({ endpoint, region: 'eu-west-1', maxAttempts: 1, credentials }),
        tableName: 'locks',
        requestTimeoutMs: TIMEOUT_MS,
      }),
  ],
]

async function failure(call: Promise<unknown>): Promise<LockStoreError> {
  const error = await call.then(
    () => expect.unreachable('the call succeeded'),
    (e: unknown) => e,
  )
  expect(error).toBeInstanceOf(LockStoreError)
  return error as LockStoreError
}

describe.each(STORES)('%s, when a request outlives requestTimeoutMs', (_, store) => {
  it('treats a request the service never answers as retryable, never as a configuration error', async () => {
    for (const call of [store(KEYS).read(KEY), store(KEYS).create(KEY, '{}')]) {
      const error = await failure(call)
      expect(error).not.toBeInstanceOf(LockConfigurationError)
      expect(error.retryable).toBe(true)
      expect(error.message).toMatch(/ failed: request timed out$/)
    }
  })

  it('treats a request aborted while slow credentials were still loading as retryable', async () => {
    const error = await failure(store(slowly(() => KEYS)).read(KEY))
    expect(error).not.toBeInstanceOf(LockConfigurationError)
    expect(error).toMatchObject({ retryable: true, key: KEY })
  })

  it('takes a credential chain that found nothing, however late, for a configuration error', async () => {
    const error = await failure(store(slowly(noCredentials)).read(KEY))
    expect(error).toBeInstanceOf(LockConfigurationError)
    expect(error).toMatchObject({ reason: 'no-credentials', retryable: false, key: KEY })
    expect(error.message).toMatch(/^no AWS credentials \(Could not load credentials from any providers\): /)
  })
})
