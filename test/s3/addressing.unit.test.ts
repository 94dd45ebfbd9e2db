import { S3Client } from '@aws-sdk/client-s3'
import { afterAll, describe, expect, it } from 'vitest'
import { ConfigurationReason, Lock, LockConfigurationError } from '../../lib/index.js'
import { fencedPut, S3LockStore } from '../../lib/s3/index.js'
import { leaseOf } from '../support/lease-of.js'

// `.invalid` never resolves (RFC 6761), wherever the test runs: like `my-locks.localhost` on a
// machine whose resolver does not map *.localhost, which is what a user of a local engine hits.
const ENDPOINT = 'http://s3.invalid:7610'

const client = (forcePathStyle: boolean) =>
  new S3Client({
    endpoint: ENDPOINT,
    region: 'us-east-1',
    credentials: { accessKeyId: 'test', secretAccessKey: 'test' },
    maxAttempts: 1,
    forcePathStyle,
  })
const virtualHosted = client(false)
const pathStyle = client(true)

afterAll(() => {
  virtualHosted.destroy()
  pathStyle.destroy()
})

describe('an S3 client on a custom endpoint that puts the bucket in the host name', () => {
  it('fails at once with a LockConfigurationError that names virtual-hosted addressing and forcePathStyle', async () => {
    const lock = new Lock({
      store: new S3LockStore({ s3: virtualHosted, bucket: 'my-locks' }),
      key: 'locks/job',
    })
    const failed = await leaseOf(lock.tryAcquire()).then(
      () => new Error('acquired'),
      (error: unknown) => error,
    )
    expect(failed).toBeInstanceOf(LockConfigurationError)
    expect(failed).toMatchObject({
      reason: ConfigurationReason.BucketHostUnresolved,
      retryable: false,
      key: 'locks/job',
      cause: expect.objectContaining({ code: 'ENOTFOUND', hostname: 'my-locks.s3.invalid' }),
    })
    const { message } = failed as Error
    expect(message).toMatch(/^the bucket's host name my-locks\.s3\.invalid does not resolve/)
    expect(message).toContain('S3 GetObject on s3://my-locks/locks/job')
    expect(message).toContain('virtual-hosted')
    expect(message).toContain('new S3Client({ forcePathStyle: true })')
  })

  it('tells a fencedPut caller to fix the client it passed to fencedPut, not the lock store', async () => {
    const failed = await fencedPut({
      s3: virtualHosted,
      bucket: 'my-outputs',
      key: 'reports/today.json',
      body: '{}',
      token: 7,
    }).then(
      () => new Error('written'),
      (error: unknown) => error,
    )
    expect(failed).toBeInstanceOf(LockConfigurationError)
    const { message } = failed as Error
    expect(message).toContain('fencedPut: HeadObject on s3://my-outputs/reports/today.json')
    expect(message).toContain(
      'pass fencedPut a path-style client: fencedPut({ s3: new S3Client({ forcePathStyle: true })',
    )
    expect(message).not.toContain('S3LockStore')
  })

  it('leaves a host that does not resolve without the bucket in it a network error, worth another try', async () => {
    const failed = await new S3LockStore({ s3: pathStyle, bucket: 'my-locks' }).read('locks/job').then(
      () => new Error('read'),
      (error: unknown) => error,
    )
    expect(failed).not.toBeInstanceOf(LockConfigurationError)
    expect(failed).toMatchObject({ name: 'LockStoreError', retryable: true })
  })
})
