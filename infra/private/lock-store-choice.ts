import type { Construct } from 'constructs'
import { SingletonValidationError } from '../errors.js'
import { LockBucket } from '../lock-bucket.js'
import type { ILockStore } from '../lock-store.js'
import type { LockTable } from '../lock-table.js'
import type { ScheduledJobOptions } from '../scheduled-job.js'

/** A scheduled job's lock store, and which of the two props it came from (or made). */
export interface ChosenLockStore {
  readonly store: ILockStore
  readonly bucket: LockBucket | undefined
  readonly table: LockTable | undefined
}

/** The store a scheduled job's lock lives in: `lockTable`, `lockBucket`, or a new `LockBucket`. */
export function chooseLockStore(scope: Construct, options: ScheduledJobOptions): ChosenLockStore {
  if (options.lockBucket && options.lockTable) {
    throw new SingletonValidationError(
      'pass either `lockBucket` (S3) or `lockTable` (DynamoDB) for the lock, not both',
      scope,
    )
  }
  if (options.lockTable) return { store: options.lockTable, bucket: undefined, table: options.lockTable }
  const bucket = options.lockBucket ?? new LockBucket(scope, 'LockBucket')
  return { store: bucket, bucket, table: undefined }
}
