import type { S3Client } from '@aws-sdk/client-s3'
import { afterAll, beforeAll, describe } from 'vitest'
import { s3CliEngine } from '../support/cli-engines.js'
import { freshBucket, testS3Client } from '../support/s3.js'
import { pauseSuite } from './pause-suite.js'

let s3: S3Client
let bucket: string

beforeAll(async () => {
  s3 = testS3Client()
  bucket = await freshBucket(s3, 'pause')
})

afterAll(() => s3.destroy())

describe('lambda-singleton pause and resume, on a real S3 engine', () => {
  pauseSuite(() => s3CliEngine(s3, bucket))
})
