import { s3ProgramEnv } from '../support/cli-engines.js'
import { freshBucket, testS3Client } from '../support/s3.js'
import { execReplaceSuite } from './exec-replace-suite.js'
import { execSessionSuite } from './exec-session-suite.js'
import { execSuite } from './exec-suite.js'
import { execTreeSuite } from './exec-tree-suite.js'

const s3 = testS3Client()
const bucket = await freshBucket(s3, 'exec')
s3.destroy()

const engine = { name: 'S3 (Ceph)', store: () => ['--bucket', bucket], env: s3ProgramEnv }
execSuite(engine)
execTreeSuite(engine)
execSessionSuite(engine)
execReplaceSuite({ ...engine, fencedTarget: (key) => ['s3', bucket, key] })
