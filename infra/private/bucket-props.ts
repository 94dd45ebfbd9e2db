import { RemovalPolicy, Token } from 'aws-cdk-lib'
import * as s3 from 'aws-cdk-lib/aws-s3'
import type { Construct } from 'constructs'
import { DEFAULT_KEY_PREFIX } from '../../lib/config.js'
import { SingletonValidationError } from '../errors.js'
import type { LockBucketProps } from '../lock-bucket.js'

/**
 * The props of a bucket `LockBucket` creates: the given ones, refused when they would weaken the
 * lock (public access, no TLS, no encryption, lock objects deleted automatically), with public
 * access blocked, TLS enforced, S3-managed encryption and a retained bucket by default.
 */
export function secureBucketProps(scope: Construct, props: LockBucketProps): s3.BucketProps {
  const given = props.bucketProps ?? {}
  const fail = (why: string): never => {
    throw new SingletonValidationError(`LockBucket: bucketProps.${why}`, scope)
  }
  if (given.blockPublicAccess && !isBlockAll(given.blockPublicAccess)) {
    fail('blockPublicAccess must block all public access: lock objects are never public')
  }
  if (given.publicReadAccess) fail('publicReadAccess cannot be true: lock objects are never public')
  if (given.enforceSSL === false) fail('enforceSSL cannot be false: lock traffic must use TLS')
  if (given.encryption === s3.BucketEncryption.UNENCRYPTED) {
    fail('encryption cannot be UNENCRYPTED; leave it unset for S3-managed keys')
  }
  const keyPrefix = props.keyPrefix ?? DEFAULT_KEY_PREFIX
  if (given.autoDeleteObjects && props.denyDeletes !== false) {
    fail(
      'autoDeleteObjects cannot empty a bucket whose policy refuses deletes of lock objects; ' +
        'pass denyDeletes: false as well, for a throwaway stack only (a deleted lock object restarts its token)',
    )
  }
  const expiring = given.lifecycleRules?.find((rule) => expiresLockObjects(rule, keyPrefix))
  if (expiring) {
    fail(
      `lifecycleRules${expiring.id ? ` (${expiring.id})` : ''} would expire lock objects under ` +
        `'${keyPrefix}', restarting their fencing tokens; give the rule a prefix outside it`,
    )
  }
  return {
    encryption: given.encryptionKey ? undefined : s3.BucketEncryption.S3_MANAGED,
    ...given,
    blockPublicAccess: s3.BlockPublicAccess.BLOCK_ALL,
    enforceSSL: true,
    removalPolicy: props.removalPolicy ?? given.removalPolicy ?? RemovalPolicy.RETAIN,
  }
}

/**
 * Whether an enabled rule deletes current objects (`expiration`, `expirationDate`) under a
 * prefix overlapping the lock prefix. A rule filtered by tags never matches a lock object (the
 * library writes none); one filtered by size is judged as if it matched.
 */
function expiresLockObjects(rule: s3.LifecycleRule, keyPrefix: string): boolean {
  if (rule.enabled === false) return false
  if (rule.expiration === undefined && rule.expirationDate === undefined) return false
  if (rule.tagFilters && Object.keys(rule.tagFilters).length > 0) return false
  const prefix = rule.prefix ?? ''
  if (Token.isUnresolved(prefix)) return true
  return prefix.startsWith(keyPrefix) || keyPrefix.startsWith(prefix)
}

function isBlockAll(setting: s3.BlockPublicAccess): boolean {
  return (
    setting.blockPublicAcls === true &&
    setting.blockPublicPolicy === true &&
    setting.ignorePublicAcls === true &&
    setting.restrictPublicBuckets === true
  )
}
