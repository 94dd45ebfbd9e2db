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

  /**
   * The keys the function's role may use, below the store's key prefix, for a handler that
   * chooses its key at run time (a `key` function: per tenant, per entity). Patterns take IAM's
   * wildcards: `*` any run of characters, `?` one. What is listed is all the role may write: list
   * the default key too if the handler also locks it (the role may always read it, as the runtime
   * reads the store's clock from it at INIT). `['*']` is the whole prefix, as `grant()`: every
   * job's lock, which brings back the risk this default removes (one job's role can write, and
   * park, another job's lock).
   *
   * @default only `lockKey` (the one key the function is told)
   */
  readonly lockKeys?: readonly string[]
}

/** The longest lock key accepted: S3 keys are at most 1024 bytes, and the prefix may take 512. */
const MAX_LOCK_KEY_BYTES = 512

/**
 * The runtime's limit on a whole lock key, prefix included (`validateLockOptions` refuses a
 * longer one before every lock operation), whichever the store.
 */
export const MAX_FULL_KEY_BYTES = 1024

/**
 * Gives `fn` its lock key through the environment (`LAMBDA_SINGLETON_KEY`): `lockKey`, or the
 * function's construct path. Unlike the function's name, which CloudFormation generates and a
 * replacement changes, the path stays as long as the construct stays where it is.
 */
export function bindLockKey(
  scope: Construct,
  fn: lambda.Function,
  lockKey: string | undefined,
  keyPrefix: string,
): string {
  const key = lockKey ?? fn.node.path
  validateLockKey(scope, key, keyPrefix)
  fn.addEnvironment(LOCK_ENV.key, key)
  return key
}

/**
 * Refuses at synth time a lock key that the middleware could not use, or that a policy would read
 * as a pattern: `*` and `?` are wildcards in an S3 ARN and in `StringLike`, so one job's grant
 * would also cover other jobs' keys.
 */
export function validateLockKey(scope: Construct, key: string, keyPrefix: string): void {
  checkKey(scope, `lockKey ${JSON.stringify(key)}`, key)
  const bytes = fullKeyBytes(keyPrefix, key)
  if (bytes !== undefined && bytes > MAX_FULL_KEY_BYTES) {
    throw new SingletonValidationError(
      `keyPrefix and lockKey ${JSON.stringify(key)} are ${bytes} bytes together; a whole lock key is ` +
        `at most ${MAX_FULL_KEY_BYTES} bytes, and the runtime would refuse this one at every run: shorten either`,
      scope,
    )
  }
  if (!Token.isUnresolved(key) && /[*?]/.test(key)) {
    throw new SingletonValidationError(
      `lockKey ${JSON.stringify(key)} contains a policy wildcard (* or ?), so its grant would cover ` +
        'other keys too; for keys chosen at run time, give their patterns in lockKeys',
      scope,
    )
  }
}

/** Refuses at synth time a `lockKeys` list that grants nothing, or a pattern no key could match. */
export function validateLockKeys(scope: Construct, patterns: readonly string[], keyPrefix: string): void {
  if (patterns.length === 0) {
    throw new SingletonValidationError(
      "lockKeys is empty: it would grant no key; leave it out for the function's own key",
      scope,
    )
  }
  for (const pattern of patterns) {
    const what = `lockKeys entry ${JSON.stringify(pattern)}`
    checkKey(scope, what, pattern)
    // `*` may match nothing, `?` at least one byte: the shortest key the pattern matches.
    const bytes = fullKeyBytes(keyPrefix, pattern.replace(/\*/g, ''))
    if (bytes !== undefined && bytes > MAX_FULL_KEY_BYTES) {
      throw new SingletonValidationError(
        `${what} matches no key the runtime takes: below keyPrefix, the shortest key it matches is ` +
          `${bytes} bytes, over ${MAX_FULL_KEY_BYTES} bytes`,
        scope,
      )
    }
  }
}

/** The keys a bound function's role is granted: `lockKeys` when given, else its one key. */
export function grantedKeys(
  scope: Construct,
  lockKey: string,
  lockKeys: readonly string[] | undefined,
  keyPrefix: string,
) {
  if (lockKeys === undefined) return [lockKey]
  validateLockKeys(scope, lockKeys, keyPrefix)
  return lockKeys
}

/** The bytes of `keyPrefix + key`, or undefined while either is a token. */
function fullKeyBytes(keyPrefix: string, key: string): number | undefined {
  if (Token.isUnresolved(keyPrefix) || Token.isUnresolved(key)) return undefined
  return Buffer.byteLength(`${keyPrefix}${key}`, 'utf8')
}

/** Whether a granted key is a pattern (an IAM wildcard in it), not one key. */
export const isPattern = (key: string): boolean => /[*?]/.test(key)

/**
 * The key a bound function is granted to read only, besides `lockKeys`: its own, unless a pattern
 * already covers it. At INIT the runtime reads the store's clock with a read of the function's own
 * key (`LAMBDA_SINGLETON_KEY`), before any event says which key a run locks; refused, every probe
 * fails, and with them the clock estimate. Reading a key never changes its lock: no write.
 */
export function readOnlyKey(lockKey: string, lockKeys: readonly string[] | undefined): string | undefined {
  if (lockKeys === undefined) return undefined
  if (Token.isUnresolved(lockKey)) return lockKey
  return lockKeys.some((pattern) => !Token.isUnresolved(pattern) && iamMatches(pattern, lockKey))
    ? undefined
    : lockKey
}

/** IAM's matching of a pattern against a key: `*` any run of characters, `?` one. */
function iamMatches(pattern: string, key: string): boolean {
  const source = [...pattern]
    .map((c) => (c === '*' ? '.*' : c === '?' ? '.' : c.replace(/[\\^$.|+()[\]{}]/g, '\\$&')))
    .join('')
  return new RegExp(`^${source}$`, 'su').test(key)
}

function checkKey(scope: Construct, what: string, key: string): void {
  if (Token.isUnresolved(key)) return
  const fail = (why: string): never => {
    throw new SingletonValidationError(`${what} ${why}`, scope)
  }
  if (key.trim().length === 0) fail('is empty')
  if (key.startsWith('/')) fail('starts with "/"; it goes below the key prefix')
  if (Buffer.byteLength(key, 'utf8') > MAX_LOCK_KEY_BYTES) fail(`is longer than ${MAX_LOCK_KEY_BYTES} bytes`)
}
