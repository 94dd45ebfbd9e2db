import { Annotations, RemovalPolicy } from 'aws-cdk-lib'
import * as iam from 'aws-cdk-lib/aws-iam'
import type * as lambda from 'aws-cdk-lib/aws-lambda'
import * as s3 from 'aws-cdk-lib/aws-s3'
import { Construct } from 'constructs'
import { DEFAULT_KEY_PREFIX, LOCK_ENV } from '../lib/config.js'
import { SingletonValidationError } from './errors.js'
import { validateKeyPrefix } from './private/key-prefix.js'
import { acknowledgeWildcardResource } from './private/nag.js'

/** What a lock holder does: read the lock object, and write it conditionally. Nothing else. */
export const LOCK_ACTIONS = ['s3:GetObject', 's3:PutObject'] as const

/** S3 keys are at most 1024 bytes; leave room below the prefix for the lock's own name. */
const MAX_PREFIX_LENGTH = 512

export interface LockBucketProps {
  /**
   * An existing bucket to keep the lock objects in. The construct then only adds the
   * conditional-write policy statement (when the bucket accepts one) and grants.
   * Mutually exclusive with `bucketProps` and `removalPolicy`.
   *
   * @default a new bucket: all public access blocked, TLS only, S3-managed encryption
   */
  readonly bucket?: s3.IBucket

  /**
   * Settings for the bucket this construct creates. Public access stays blocked and TLS stays
   * required whatever is passed here; `encryption` may be changed (a KMS key is granted too).
   *
   * @default the secure settings above, nothing else
   */
  readonly bucketProps?: s3.BucketProps

  /**
   * What CloudFormation does with a created bucket when it leaves the stack. Deleting the
   * lock objects resets every fencing token to 0, so a retained bucket is the safe default.
   * Only for a bucket this construct creates.
   *
   * @default RemovalPolicy.RETAIN
   */
  readonly removalPolicy?: RemovalPolicy

  /**
   * The key prefix of the lock objects: grants, the conditional-write policy and the
   * functions' environment all use it. End it with `/` so that `locks/` does not also cover
   * `locks-old/`. No `*` or `?`: in a policy they would widen what is granted.
   *
   * @default 'locks/'
   */
  readonly keyPrefix?: string
}

/**
 * The S3 bucket and key prefix where lock objects live, with a bucket policy that refuses any
 * `PutObject` under the prefix that is not conditional (`If-Match` / `If-None-Match`), so no
 * client, tool or person can overwrite a lock blindly and break its fencing token.
 */
export class LockBucket extends Construct {
  /** The bucket holding the lock objects (created here, or the one passed in). */
  readonly bucket: s3.IBucket
  /** The bucket this construct created, or `undefined` when one was passed in. */
  readonly createdBucket: s3.Bucket | undefined
  /** Key prefix of every lock object. */
  readonly keyPrefix: string
  /** ARN pattern of the lock objects, `arn:…:bucket/<prefix>*`. */
  readonly lockObjectsArn: string
  /**
   * The statement denying unconditional `s3:PutObject` under the prefix. Already in the bucket
   * policy when `denyStatementAdded`; otherwise (an imported bucket) add it to the bucket's
   * policy where that bucket is managed.
   */
  readonly denyStatement: iam.PolicyStatement
  /** Whether `denyStatement` could be added to the bucket's policy from this stack. */
  readonly denyStatementAdded: boolean

  constructor(scope: Construct, id: string, props: LockBucketProps = {}) {
    super(scope, id)
    this.keyPrefix = props.keyPrefix ?? DEFAULT_KEY_PREFIX
    validateKeyPrefix(this, this.keyPrefix, {
      construct: 'LockBucket',
      container: 'bucket',
      maxLength: MAX_PREFIX_LENGTH,
      noLeadingSlash: true,
    })

    if (props.bucket) {
      if (props.bucketProps) {
        throw new SingletonValidationError(
          'LockBucket: pass either `bucket` (an existing bucket) or `bucketProps` (for a new one), not both',
          this,
        )
      }
      if (props.removalPolicy !== undefined) {
        throw new SingletonValidationError(
          'LockBucket: `removalPolicy` only applies to a bucket this construct creates, not to `bucket`',
          this,
        )
      }
      this.bucket = props.bucket
      this.createdBucket = undefined
    } else {
      this.createdBucket = new s3.Bucket(this, 'Bucket', secureBucketProps(this, props))
      this.bucket = this.createdBucket
    }

    this.lockObjectsArn = this.bucket.arnForObjects(`${this.keyPrefix}*`)
    this.denyStatement = new iam.PolicyStatement({
      effect: iam.Effect.DENY,
      principals: [new iam.AnyPrincipal()],
      actions: ['s3:PutObject'],
      resources: [this.lockObjectsArn],
      // Keys in one Null block are ANDed: deny only when both headers are absent.
      conditions: { Null: { 's3:if-match': 'true', 's3:if-none-match': 'true' } },
    })
    this.denyStatementAdded = this.bucket.addToResourcePolicy(this.denyStatement).statementAdded
    if (!this.denyStatementAdded) {
      Annotations.of(this).addWarningV2(
        'lambda-singleton:unconditional-writes-allowed',
        'LockBucket: the bucket is imported, so its policy cannot be changed from here; add ' +
          '`denyStatement` to its bucket policy where it is managed, or unconditional writes can ' +
          'overwrite lock objects.',
      )
    }
  }

  /**
   * Lets `grantee` take, renew and release locks: `s3:GetObject` and `s3:PutObject` on the lock
   * prefix only (plus `kms:Decrypt`/`kms:GenerateDataKey` when the bucket has a KMS key).
   * No delete, no listing, nothing outside the prefix.
   */
  grant(grantee: iam.IGrantable): iam.Grant {
    const grant = iam.Grant.addToPrincipalOrResource({
      grantee,
      actions: [...LOCK_ACTIONS],
      resourceArns: [this.lockObjectsArn],
      resource: this.bucket,
    })
    this.bucket.encryptionKey?.grant(grantee, 'kms:Decrypt', 'kms:GenerateDataKey')
    const principal = grantee.grantPrincipal
    if (Construct.isConstruct(principal)) {
      acknowledgeWildcardResource(
        principal,
        this.lockObjectsArn,
        'Lock object names are chosen at run time (the function name or a per-entity key), so ' +
          'the grant covers the lock prefix, and only with GetObject and PutObject.',
      )
    }
    return grant
  }

  /**
   * Wires a function to this lock store: the environment variables the `singleton()` middleware
   * reads (bucket name and key prefix), and `grant()`.
   */
  bind(fn: lambda.Function): void {
    fn.addEnvironment(LOCK_ENV.store, 's3')
    fn.addEnvironment(LOCK_ENV.bucket, this.bucket.bucketName)
    fn.addEnvironment(LOCK_ENV.keyPrefix, this.keyPrefix)
    this.grant(fn)
  }
}

function secureBucketProps(scope: Construct, props: LockBucketProps): s3.BucketProps {
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
  return {
    encryption: given.encryptionKey ? undefined : s3.BucketEncryption.S3_MANAGED,
    ...given,
    blockPublicAccess: s3.BlockPublicAccess.BLOCK_ALL,
    enforceSSL: true,
    removalPolicy: props.removalPolicy ?? given.removalPolicy ?? RemovalPolicy.RETAIN,
  }
}

function isBlockAll(setting: s3.BlockPublicAccess): boolean {
  return (
    setting.blockPublicAcls === true &&
    setting.blockPublicPolicy === true &&
    setting.ignorePublicAcls === true &&
    setting.restrictPublicBuckets === true
  )
}
