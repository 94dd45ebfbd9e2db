import { describe, expect, it } from 'vitest'
import { listingPage } from '../../lib/aws/listing-page.js'
import { LockConfigurationError, LockStoreError } from '../../lib/core/errors.js'
import { DYNAMODB_ERRORS } from '../../lib/dynamodb/errors.js'
import { S3_ERRORS } from '../../lib/s3/errors.js'

/** An SDK error as the service answered it. */
const answered = (name: string, status: number) =>
  Object.assign(new Error(`${name}: the service said no`), { name, $metadata: { httpStatusCode: status } })

describe('a page of a key listing that fails', () => {
  it.each([
    ['S3', S3_ERRORS, answered('SlowDown', 503)],
    ['DynamoDB', DYNAMODB_ERRORS, answered('ProvisionedThroughputExceededException', 400)],
  ])('is worth another try when %s throttles it, as the lock calls class it', async (_, errors, error) => {
    const failure = await listingPage('a listing', undefined, () => Promise.reject(error), errors).catch(
      (e: unknown) => e,
    )
    expect(failure).toBeInstanceOf(LockStoreError)
    expect(failure).toMatchObject({ retryable: true })
  })

  it.each([
    ['S3', S3_ERRORS, answered('SignatureDoesNotMatch', 403)],
    ['DynamoDB', DYNAMODB_ERRORS, answered('UnrecognizedClientException', 400)],
  ])('says the credentials were refused on %s, as the lock calls do', async (_, errors, error) => {
    const failure = await listingPage('a listing', undefined, () => Promise.reject(error), errors).catch(
      (e: unknown) => e,
    )
    expect(failure).toBeInstanceOf(LockConfigurationError)
    expect(failure).toMatchObject({ reason: 'credentials-refused' })
  })

  it('is not worth another try when the service refuses it for good', async () => {
    const failure = await listingPage(
      'a listing',
      undefined,
      () => Promise.reject(answered('NoSuchBucket', 404)),
      S3_ERRORS,
    ).catch((e: unknown) => e)
    expect(failure).toMatchObject({ name: 'LockStoreError', retryable: false })
  })
})
