import { S3Client } from '@aws-sdk/client-s3'
import middy from '@middy/core'
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest'
import type { LockStore } from '../../lib/extend.js'
import { LockConfigurationError, withSingleton } from '../../lib/index.js'
import { singleton } from '../../lib/middy/index.js'
import { S3Lock, S3LockStore } from '../../lib/s3/index.js'
import { lambdaContext } from '../support/lambda-context.js'
import { leaseOf } from '../support/lease-of.js'
import { operatorFor } from '../support/operator-for.js'
import { countRequests, freshBucket, testS3Client } from '../support/s3.js'

let s3: S3Client
let bucket: string
const EXISTING = 'locks/existing'

beforeAll(async () => {
  s3 = testS3Client()
  bucket = await freshBucket(s3, 'config')
  await (await leaseOf(new S3Lock({ s3, bucket, key: EXISTING }).tryAcquire()))?.release()
})

afterAll(() => s3.destroy())

/** A client of the test engine whose credentials the engine refuses, its requests counted. */
function refusedClient(credentials: { accessKeyId: string; secretAccessKey: string }) {
  const target = inject('s3')
  const client = new S3Client({
    endpoint: target.endpoint,
    region: target.region,
    forcePathStyle: true,
    maxAttempts: 1,
    credentials,
  })
  return { client, requests: countRequests(client) }
}

const REFUSALS = [
  [
    'an access key the engine does not know',
    'InvalidAccessKeyId',
    () => ({ accessKeyId: 'nobody', secretAccessKey: 'wrong' }),
  ],
  [
    'a wrong secret for a known access key',
    'SignatureDoesNotMatch',
    () => ({ accessKeyId: inject('s3').accessKeyId, secretAccessKey: 'wrong' }),
  ],
] as const

/** What `call` rejected with, checked to be a refusal of the credentials named `code`. */
async function refusal(call: Promise<unknown>, code: string): Promise<LockConfigurationError> {
  const error = await call.then(
    () => expect.unreachable('the call succeeded'),
    (e: unknown) => e,
  )
  expect(error).toBeInstanceOf(LockConfigurationError)
  expect(error).toMatchObject({ reason: 'credentials-refused', retryable: false, cause: { name: code } })
  expect((error as Error).message).not.toMatch(/kept failing/)
  return error as LockConfigurationError
}

describe.each(REFUSALS)('S3 with %s (%s), on a real engine', (_, code, credentials) => {
  it('fails the first tryAcquire at once with LockConfigurationError, after one request', async () => {
    const { client, requests } = refusedClient(credentials())
    const lock = new S3Lock({ s3: client, bucket, key: `locks/acquire-${code}` })
    const error = await refusal(leaseOf(lock.tryAcquire()), code)
    expect(error.message).toMatch(new RegExp(`^the AWS credentials were refused \\(${code}\\)`))
    expect(requests.total()).toBe(1)
    client.destroy()
  })

  it('fails a read of an existing lock, rather than reading it as absent behind 403', async () => {
    const { client, requests } = refusedClient(credentials())
    await refusal(operatorFor(new S3Lock({ s3: client, bucket, key: EXISTING })).inspect(), code)
    expect(requests.byOperation.get('GetObject')).toBe(1)
    expect(requests.total()).toBe(1)
    client.destroy()
  })

  it('fails a withSingleton invocation at once, without running the handler', async () => {
    const { client, requests } = refusedClient(credentials())
    const outcomes: string[] = []
    const handler = withSingleton(async () => expect.unreachable('the handler ran'), {
      store: new S3LockStore({ s3: client, bucket }),
      logger: false,
      onOutcome: (event) => outcomes.push(event.outcome),
    })
    await refusal(handler({}, lambdaContext({ functionName: `with-singleton-${code}` })), code)
    expect(requests.total()).toBe(1)
    expect(outcomes).toEqual(['error'])
    client.destroy()
  })

  it('fails an invocation behind the middleware at once, without running the handler', async () => {
    const { client, requests } = refusedClient(credentials())
    const store: LockStore = new S3LockStore({ s3: client, bucket })
    const handler = middy()
      .use(singleton({ store, logger: false }))
      .handler(async () => expect.unreachable('the handler ran'))
    await refusal(handler({}, lambdaContext({ functionName: `middleware-${code}` })), code)
    expect(requests.total()).toBe(1)
    client.destroy()
  })
})

describe('a bucket that does not exist', () => {
  it('is named as such on the first request, not as an UnknownError, and no retry is spent on it', async () => {
    const missing = `${bucket}-missing`
    const client = testS3Client()
    const requests = countRequests(client)
    const error = await new S3Lock({ s3: client, bucket: missing, key: 'locks/nightly' }).tryAcquire().then(
      () => expect.unreachable('acquired'),
      (e: unknown) => e as Error,
    )
    expect(error).toMatchObject({ name: 'LockStoreError', retryable: false })
    expect(error.message).toContain(`S3 GetObject on s3://${missing}/locks/nightly failed: NoSuchBucket`)
    expect(error.message).toContain('the bucket does not exist')
    expect(error.message).not.toContain('UnknownError')
    expect(requests.total()).toBe(1)
    client.destroy()
  })
})
