import type { S3Client } from '@aws-sdk/client-s3'
import { afterAll, beforeAll, describe, inject } from 'vitest'
import { S3LockStore } from '../../lib/s3/index.js'
import { cliIn, runCliProgram } from '../support/cli.js'
import { freshBucket, testS3Client } from '../support/s3.js'
import { historySuite } from './history-suite.js'

let s3: S3Client
let bucket: string

beforeAll(async () => {
  s3 = testS3Client()
  bucket = await freshBucket(s3, 'history')
})

afterAll(() => s3.destroy())

describe('lambda-singleton history, on a real S3 engine', () => {
  historySuite(() => ({
    store: () => new S3LockStore({ s3, bucket }),
    cli: (...argv) => cliIn([...argv, '--bucket', bucket], { s3 }),
    program: (...argv) => {
      const target = inject('s3')
      return runCliProgram([...argv, '--bucket', bucket], {
        AWS_ENDPOINT_URL_S3: target.endpoint,
        AWS_REGION: target.region,
        AWS_ACCESS_KEY_ID: target.accessKeyId,
        AWS_SECRET_ACCESS_KEY: target.secretAccessKey,
      })
    },
    stored: async (key) => {
      const found = await new S3LockStore({ s3, bucket }).read(key)
      return found.status === 'found' ? JSON.parse(found.body) : undefined
    },
    where: (key) => `s3://${bucket}/${key}`,
  }))
})
