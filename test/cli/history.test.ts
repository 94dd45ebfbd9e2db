import type { S3Client } from '@aws-sdk/client-s3'
import { afterAll, beforeAll, describe } from 'vitest'
import { s3CliEngine } from '../support/cli-engines.js'
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
  historySuite(() => s3CliEngine(s3, bucket))
})
