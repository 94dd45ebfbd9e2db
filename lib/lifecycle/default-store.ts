import { LOCK_ENV, type LockStoreKind } from '../config.js'
import { LockOptionsError } from '../core/errors.js'
import type { LockStore } from '../core/store.js'

/**
 * The store named by the environment the constructs set: S3 when `LAMBDA_SINGLETON_BUCKET` is
 * set, DynamoDB when `LAMBDA_SINGLETON_TABLE` is. Loaded on first use, so that importing a
 * handler (in a unit test, say) needs no environment, and each SDK is loaded only by the users
 * of its store.
 *
 * `process.env.LAMBDA_SINGLETON_STORE` is read literally, not through `LOCK_ENV`, so that a
 * bundler can replace it with a constant (the constructs `define` it for esbuild): the branch
 * of the other store is then dead, and neither its code nor its SDK goes into the bundle.
 */
export async function storeFromEnvironment(where: string): Promise<LockStore> {
  const bucket = process.env[LOCK_ENV.bucket]
  const table = process.env[LOCK_ENV.table]
  const kind = chosenKind(where, bucket, table)
  // Each `import()` stays inside its own branch: esbuild does not resolve an import in a branch
  // that the define made dead, so a bundle for one store builds without the other's SDK installed.
  if (process.env.LAMBDA_SINGLETON_STORE !== 'dynamodb' && kind === 's3' && bucket) {
    const { S3LockStore } = await import('../s3/store.js').catch(sdkMissing(where, S3_SDK, LOCK_ENV.bucket))
    return new S3LockStore({ bucket })
  }
  if (process.env.LAMBDA_SINGLETON_STORE !== 's3' && kind === 'dynamodb' && table) {
    const { DynamoDBLockStore } = await import('../dynamodb/store.js').catch(
      sdkMissing(where, DYNAMODB_SDK, LOCK_ENV.table),
    )
    const partitionKey = process.env[LOCK_ENV.partitionKey] || undefined
    return new DynamoDBLockStore({ tableName: table, ...(partitionKey && { partitionKey }) })
  }
  const named = kind === 's3' ? LOCK_ENV.bucket : LOCK_ENV.table
  throw new LockOptionsError(`${where}: ${LOCK_ENV.store} is "${kind}" but ${named} is not set`)
}

/**
 * The store the environment names, without judging it: undefined when it names none, names an
 * unknown kind, or sets both the bucket and the table without saying which (`chosenKind` says why).
 */
export function environmentStoreKind(): LockStoreKind | undefined {
  const kind = process.env.LAMBDA_SINGLETON_STORE
  if (kind === 's3' || kind === 'dynamodb') return kind
  if (kind) return undefined
  const bucket = process.env[LOCK_ENV.bucket]
  const table = process.env[LOCK_ENV.table]
  if (bucket && table) return undefined
  return bucket ? 's3' : table ? 'dynamodb' : undefined
}

function chosenKind(where: string, bucket?: string, table?: string): LockStoreKind {
  const named = environmentStoreKind()
  if (named) return named
  const kind = process.env.LAMBDA_SINGLETON_STORE
  if (kind) {
    throw new LockOptionsError(`${where}: ${LOCK_ENV.store} must be "s3" or "dynamodb", not "${kind}"`)
  }
  if (bucket && table) {
    throw new LockOptionsError(
      `${where}: both ${LOCK_ENV.bucket} and ${LOCK_ENV.table} are set: unset one, set ${LOCK_ENV.store}, or pass { store }`,
    )
  }
  throw new LockOptionsError(
    `${where}: no lock store: pass { store } (e.g. new S3LockStore({ bucket }) from 'lambda-singleton/s3'), or set ${LOCK_ENV.bucket} or ${LOCK_ENV.table} (the constructs set them)`,
  )
}

const S3_SDK = '@aws-sdk/client-s3'
const DYNAMODB_SDK = '@aws-sdk/client-dynamodb'

/**
 * The SDK clients are peer dependencies, which a user may not have installed: name the missing
 * one. Any other failure to load a store is rethrown as it is.
 */
function sdkMissing(where: string, sdk: string, variable: string): (error: unknown) => never {
  return (error) => {
    const code = (error as NodeJS.ErrnoException).code
    if (code !== 'ERR_MODULE_NOT_FOUND' || !String(error).includes(sdk)) throw error
    throw new LockOptionsError(
      `${where}: ${variable} is set but ${sdk} is not installed: add it to your dependencies`,
      { cause: error },
    )
  }
}
