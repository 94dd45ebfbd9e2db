import { RemovalPolicy, Stack, Token } from 'aws-cdk-lib'
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
 * Refuses at synth, on the bucket `LockBucket` created, any lifecycle rule that would expire lock
 * objects, whatever added it: `bucketProps` is checked at once, but `addLifecycleRule()` on
 * `createdBucket` (or an aspect) adds rules later, and a lifecycle rule is not subject to the
 * bucket policy's deny on deletes.
 */
export function refuseExpiringLifecycleRules(scope: Construct, bucket: s3.Bucket, keyPrefix: string): void {
  scope.node.addValidation({
    validate: () => {
      const cfn = bucket.node.defaultChild as s3.CfnBucket
      const config = Stack.of(scope).resolve(cfn.lifecycleConfiguration) as
        | { rules?: readonly RenderedRule[] }
        | undefined
      return (config?.rules ?? [])
        .filter((rule) => renderedRuleExpires(rule, keyPrefix))
        .map(
          (rule) =>
            `LockBucket: the bucket's lifecycle rule${rule.id ? ` (${rule.id})` : ''} would expire lock ` +
            `objects under '${keyPrefix}', restarting their fencing tokens; give the rule a prefix outside it`,
        )
    },
  })
}

/** A lifecycle rule as the bucket renders it (CloudFormation's fields, in the L1's casing). */
interface RenderedRule {
  readonly id?: string
  readonly status?: string
  readonly prefix?: unknown
  readonly expirationInDays?: number
  readonly expirationDate?: unknown
  readonly tagFilters?: readonly unknown[]
}

/** `expiresLockObjects`, for a rendered rule. */
function renderedRuleExpires(rule: RenderedRule, keyPrefix: string): boolean {
  if (rule.status === 'Disabled') return false
  if (rule.expirationInDays === undefined && rule.expirationDate === undefined) return false
  if (rule.tagFilters && rule.tagFilters.length > 0) return false
  const prefix = rule.prefix ?? ''
  if (typeof prefix !== 'string' || Token.isUnresolved(prefix)) return true
  return overlaps(prefix, keyPrefix)
}

const overlaps = (prefix: string, keyPrefix: string): boolean =>
  prefix.startsWith(keyPrefix) || keyPrefix.startsWith(prefix)

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
  return overlaps(prefix, keyPrefix)
}

function isBlockAll(setting: s3.BlockPublicAccess): boolean {
  return (
    setting.blockPublicAcls === true &&
    setting.blockPublicPolicy === true &&
    setting.ignorePublicAcls === true &&
    setting.restrictPublicBuckets === true
  )
}
