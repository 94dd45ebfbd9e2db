// `lambda-singleton/s3`: the lock store on S3 conditional writes, and fenced writes to S3 objects.

export type { FencingTokenOptions, FencingTokenSource } from '../core/lease.js'
export { EtagQuoting } from './etag.js'
export {
  FENCING_TOKEN_METADATA,
  type FencedPutOptions,
  type FencedPutResult,
  type FencedPutTarget,
  FencedWriteRejectedError,
  fencedPut,
} from './fenced-put.js'
export { S3Lock, type S3LockOptions } from './s3-lock.js'
export { S3LockStore, type S3LockStoreOptions } from './store.js'
