import { S3LockStore } from '../../lib/s3/index.js'
import { countRequests, freshBucket, testS3Client } from '../support/s3.js'
import { describeSingletonOnEngine } from './engine-suite.js'

describeSingletonOnEngine('a real S3 engine', async () => {
  const s3 = testS3Client()
  const bucket = await freshBucket(s3, 'middy')
  return {
    store: () => new S3LockStore({ s3, bucket }),
    counted: () => {
      const counting = testS3Client()
      return {
        store: new S3LockStore({ s3: counting, bucket }),
        requests: countRequests(counting),
        close: () => counting.destroy(),
      }
    },
    close: () => s3.destroy(),
  }
})
