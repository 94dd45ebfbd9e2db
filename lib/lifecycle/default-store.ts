import { LOCK_ENV } from '../config.js'
import { LockOptionsError } from '../core/errors.js'
import type { LockStore } from '../core/store.js'

/**
 * The store named by the environment the constructs set. Loaded on first use, so that importing
 * a handler (in a unit test, say) needs no environment, and a user who passes `store` never
 * loads the S3 SDK.
 */
export async function storeFromEnvironment(where: string): Promise<LockStore> {
  const bucket = process.env[LOCK_ENV.bucket]
  if (bucket) {
    const { S3LockStore } = await import('../s3/store.js')
    return new S3LockStore({ bucket })
  }
  throw new LockOptionsError(
    `${where}: no lock store: pass { store } (e.g. new S3LockStore({ bucket }) from 'lambda-singleton/s3') or set ${LOCK_ENV.bucket} (the construct sets it)`,
  )
}
