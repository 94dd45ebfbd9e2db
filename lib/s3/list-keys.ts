import { ListObjectsV2Command, type S3Client } from '@aws-sdk/client-s3'
import { listingPage } from '../aws/listing-page.js'
import type { ListKeysOptions } from '../core/store.js'
import { S3_ERRORS } from './errors.js'

/**
 * Every key in `bucket` that starts with `prefix`, in S3's (lexicographic) order: ListObjectsV2
 * (s3:ListBucket), which the lock protocol never needs. Loaded only when a listing is asked for.
 */
export async function listS3Keys(
  s3: S3Client,
  bucket: string,
  prefix: string,
  options: ListKeysOptions = {},
): Promise<string[]> {
  const keys: string[] = []
  let continuation: string | undefined
  do {
    const page = await listingPage(
      `S3 ListObjectsV2 of s3://${bucket}/${prefix}*`,
      options.signal,
      (abortSignal) =>
        s3.send(
          new ListObjectsV2Command({
            Bucket: bucket,
            Prefix: prefix || undefined,
            ContinuationToken: continuation,
            MaxKeys: options.pageSize,
          }),
          { abortSignal },
        ),
      S3_ERRORS,
    )
    for (const object of page.Contents ?? []) if (object.Key !== undefined) keys.push(object.Key)
    continuation = page.IsTruncated ? page.NextContinuationToken : undefined
  } while (continuation)
  return keys
}
