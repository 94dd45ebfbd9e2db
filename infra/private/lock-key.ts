import { Token } from 'aws-cdk-lib'
import type * as lambda from 'aws-cdk-lib/aws-lambda'
import type { Construct } from 'constructs'
import { LOCK_ENV } from '../../lib/config.js'
import { SingletonValidationError } from '../errors.js'

/** How a store's `bind()` names the function's lock. */
export interface BindOptions {
  /**
   * The function's lock key below the store's key prefix. Functions (in any stack or region)
   * that bind the same store with the same key share one lock.
   *
   * @default the function's construct path, e.g. `Jobs/NightlyReport/Function`
   */
  readonly lockKey?: string
}

/** The longest lock key accepted: S3 keys are at most 1024 bytes, and the prefix may take 512. */
const MAX_LOCK_KEY_BYTES = 512

/**
 * Gives `fn` its lock key through the environment (`LAMBDA_SINGLETON_KEY`): `lockKey`, or the
 * function's construct path. Unlike the function's name, which CloudFormation generates and a
 * replacement changes, the path stays as long as the construct stays where it is.
 */
export function bindLockKey(scope: Construct, fn: lambda.Function, lockKey: string | undefined): string {
  const key = lockKey ?? fn.node.path
  validateLockKey(scope, key)
  fn.addEnvironment(LOCK_ENV.key, key)
  return key
}

/** Refuses at synth time a lock key that the middleware could not use. */
export function validateLockKey(scope: Construct, key: string): void {
  if (Token.isUnresolved(key)) return
  const fail = (why: string): never => {
    throw new SingletonValidationError(`lockKey ${JSON.stringify(key)} ${why}`, scope)
  }
  if (key.trim().length === 0) fail('is empty')
  if (key.startsWith('/')) fail('starts with "/"; it goes below the key prefix')
  if (Buffer.byteLength(key, 'utf8') > MAX_LOCK_KEY_BYTES) fail(`is longer than ${MAX_LOCK_KEY_BYTES} bytes`)
}
