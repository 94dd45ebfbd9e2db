import type { S3Client } from '@aws-sdk/client-s3'
import { Lock } from '../core/lock.js'
import type { LockOptions } from '../core/lock-options.js'
import type { EtagQuoting } from './etag.js'
import { S3LockStore } from './store.js'

export interface S3LockOptions extends Omit<LockOptions, 'store'> {
  /** The S3 client. @default a shared client configured from the environment */
  readonly s3?: S3Client
  /** The bucket holding lock objects. */
  readonly bucket: string
  /** Timeout of each S3 request, in ms. @default 5000 */
  readonly requestTimeoutMs?: number
  /** How etags are sent in `If-Match`. @default 'auto' */
  readonly etagQuoting?: EtagQuoting
}

/**
 * A lock whose records live in an S3 bucket, one object per key.
 *
 * @example
 * const lock = new S3Lock({ bucket: 'my-locks', key: 'locks/nightly-report' })
 * const lease = await lock.tryAcquire()
 * if (lease) try { await work(lease.token) } finally { await lease.release() }
 */
export class S3Lock extends Lock {
  readonly bucket: string

  constructor(options: S3LockOptions) {
    const store = new S3LockStore({
      ...(options.s3 && { s3: options.s3 }),
      bucket: options.bucket,
      ...(options.requestTimeoutMs !== undefined && { requestTimeoutMs: options.requestTimeoutMs }),
      ...(options.etagQuoting !== undefined && { etagQuoting: options.etagQuoting }),
    })
    super({ ...options, store })
    this.bucket = options.bucket
  }
}
