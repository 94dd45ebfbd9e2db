import { inject } from 'vitest'
import { freshBucket, testS3Client } from '../support/s3.js'
import { execSuite } from './exec-suite.js'

const s3 = testS3Client()
const bucket = await freshBucket(s3, 'exec')
s3.destroy()

execSuite({
  name: 'S3 (Ceph)',
  store: () => ['--bucket', bucket],
  env: () => {
    const target = inject('s3')
    return {
      AWS_ENDPOINT_URL_S3: target.endpoint,
      AWS_REGION: target.region,
      AWS_ACCESS_KEY_ID: target.accessKeyId,
      AWS_SECRET_ACCESS_KEY: target.secretAccessKey,
    }
  },
})
