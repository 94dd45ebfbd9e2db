import { DeleteObjectCommand } from '@aws-sdk/client-s3'
import { WriteStatus } from '../../lib/core/store.js'
import { S3LockStore } from '../../lib/s3/store.js'
import { freshBucket, putRaw, testS3Client } from '../support/s3.js'
import { type ContractTarget, describeLockStoreContract } from './contract.js'
import { describeTokenAttacks } from './token-attacks.js'

async function target(): Promise<ContractTarget> {
  const s3 = testS3Client()
  const bucket = await freshBucket(s3, 'contract')
  const clients = [s3]
  return {
    store: () => new S3LockStore({ s3, bucket }),
    putRaw: (key, body) => putRaw(s3, bucket, key, body),
    deleteRaw: async (key) => void (await s3.send(new DeleteObjectCommand({ Bucket: bucket, Key: key }))),
    storeAt: (endpoint, requestTimeoutMs) => {
      const elsewhere = testS3Client({ endpoint })
      clients.push(elsewhere)
      return new S3LockStore({ s3: elsewhere, bucket, requestTimeoutMs })
    },
    // Ceph 16 answers an If-Match on a missing key with 412 (AWS S3: 404); the core reads to tell.
    replaceOfMissing: [WriteStatus.Absent, WriteStatus.PreconditionFailed],
    // Ceph 16 answers some losers of simultaneous If-Match writes with a 500.
    raceLosersMayError: true,
    close: () => {
      for (const each of clients) each.destroy()
    },
  }
}

describeLockStoreContract('S3', target)
describeTokenAttacks('S3', target)
