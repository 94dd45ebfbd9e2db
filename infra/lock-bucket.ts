import { Annotations, type RemovalPolicy } from 'aws-cdk-lib'
import * as iam from 'aws-cdk-lib/aws-iam'
import type * as lambda from 'aws-cdk-lib/aws-lambda'
import * as s3 from 'aws-cdk-lib/aws-s3'
import { Construct } from 'constructs'
import { DEFAULT_KEY_PREFIX, LOCK_ENV } from '../lib/config.js'
import { SingletonValidationError } from './errors.js'
import type { ILockStore } from './lock-store.js'
import { refuseExpiringLifecycleRules, secureBucketProps } from './private/bucket-props.js'
import { validateKeyPrefix } from './private/key-prefix.js'
import {
  type BindOptions,
  bindLockKey,
  grantedKeys,
  readOnlyKey,
  validateLockKey,
  validateLockKeys,
} from './private/lock-key.js'
import { acknowledgeWildcardResource } from './private/nag.js'

/** What a lock holder does: read the lock object, and write it conditionally. Nothing else. */
export const LOCK_ACTIONS = ['s3:GetObject', 's3:PutObject'] as const

/**
 * What the bucket policy refuses on lock objects, to anyone: a deleted lock object (or a deleted
 * current version, which brings back an older one) is one way its fencing token could restart.
 * Nothing the library or its CLI does deletes one.
 */
export const DENIED_LOCK_DELETES = ['s3:DeleteObject', 's3:DeleteObjectVersion'] as const

/** S3 keys are at most 1024 bytes; leave room below the prefix for the lock's own name. */
const MAX_PREFIX_BYTES = 512

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

  /**
   * Add a bucket-policy statement refusing `s3:DeleteObject` and `s3:DeleteObjectVersion` on
   * the lock objects to everyone, administrators included: a deleted lock object could restart
   * its fencing token. Turn it off only for a bucket that must be emptied automatically
   * (`autoDeleteObjects`, a throwaway stack). A lifecycle rule is not subject to bucket
   * policies: a created bucket refuses one that would expire lock objects.
   *
   * @default true
   */
  readonly denyDeletes?: boolean
}

/**
 * The S3 bucket and key prefix where lock objects live, with a bucket policy that refuses any
 * `PutObject` under the prefix that is not conditional (`If-Match` / `If-None-Match`), so no
 * client, tool or person can overwrite a lock blindly and break its fencing token.
 */
export class LockBucket extends Construct implements ILockStore {
  /** The store's kind, as `LAMBDA_SINGLETON_STORE` names it. */
  readonly kind = 's3' as const
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
  /**
   * The statement denying deletes of lock objects (`DENIED_LOCK_DELETES`), unless `denyDeletes`
   * is false. In the bucket policy when `denyStatementAdded`; otherwise add it where that
   * bucket's policy is managed, with `denyStatement`.
   */
  readonly denyDeleteStatement: iam.PolicyStatement | undefined

  constructor(scope: Construct, id: string, props: LockBucketProps = {}) {
    super(scope, id)
    this.keyPrefix = props.keyPrefix ?? DEFAULT_KEY_PREFIX
    validateKeyPrefix(this, this.keyPrefix, {
      construct: 'LockBucket',
      container: 'bucket',
      maxBytes: MAX_PREFIX_BYTES,
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
      refuseExpiringLifecycleRules(this, this.createdBucket, this.keyPrefix)
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
    this.denyDeleteStatement =
      props.denyDeletes === false
        ? undefined
        : new iam.PolicyStatement({
            effect: iam.Effect.DENY,
            principals: [new iam.AnyPrincipal()],
            actions: [...DENIED_LOCK_DELETES],
            resources: [this.lockObjectsArn],
          })
    if (this.denyDeleteStatement && this.denyStatementAdded) {
      this.bucket.addToResourcePolicy(this.denyDeleteStatement)
    }
    if (!this.denyStatementAdded) {
      Annotations.of(this).addWarningV2(
        'lambda-singleton:unconditional-writes-allowed',
        'LockBucket: the bucket is imported, so its policy cannot be changed from here; add ' +
          '`denyStatement` and `denyDeleteStatement` to its bucket policy where it is managed, or ' +
          'unconditional writes and deletes can restart the fencing tokens of lock objects.',
      )
    }
  }

  /**
   * Lets `grantee` take, renew and release any lock under the prefix: `s3:GetObject` and
   * `s3:PutObject` on `keyPrefix*` (plus `kms:Decrypt`/`kms:GenerateDataKey` when the bucket has a
   * KMS key). No delete, no listing, nothing outside the prefix. This is the wide grant, for an
   * operator or a tool that serves every job: a job's own role should get `grantKey`, `grantKeys`
   * or `bind`, which cover its keys only, so that it cannot write (and park) another job's lock.
   */
  grant(grantee: iam.IGrantable): iam.Grant {
    return this.#grantObjects(grantee, ['*'])
  }

  /**
   * Lets `grantee` hold one lock only: `s3:GetObject` and `s3:PutObject` on the object at
   * `keyPrefix + lockKey` and nothing else (plus the bucket's KMS key, if any). For a job whose
   * key is fixed at deploy time, such as a `ScheduledSingletonTask`.
   */
  grantKey(grantee: iam.IGrantable, lockKey: string): iam.Grant {
    validateLockKey(this, lockKey, this.keyPrefix)
    return this.#grantObjects(grantee, [lockKey])
  }

  /**
   * Lets `grantee` use the locks whose keys match `patterns`, below the prefix (IAM wildcards:
   * `*` any run of characters, `?` one): `s3:GetObject` and `s3:PutObject` on those objects only,
   * plus the bucket's KMS key, if any. For a job that chooses its key at run time, e.g.
   * `['tenant-sync/*']`.
   */
  grantKeys(grantee: iam.IGrantable, patterns: readonly string[]): iam.Grant {
    validateLockKeys(this, patterns, this.keyPrefix)
    return this.#grantObjects(grantee, patterns)
  }

  /**
   * Wires a function to this lock store: the environment variables the `singleton()` middleware
   * reads (bucket name, key prefix and the function's lock key), and a grant on its own key only
   * (`grantKey`), or on `lockKeys` when given, with `s3:GetObject` on its own key then too (the
   * runtime's clock probe at INIT reads it). Returns the lock key (below the prefix).
   */
  bind(fn: lambda.Function, options: BindOptions = {}): string {
    const lockKey = bindLockKey(this, fn, options.lockKey, this.keyPrefix)
    fn.addEnvironment(LOCK_ENV.store, this.kind)
    fn.addEnvironment(LOCK_ENV.bucket, this.bucket.bucketName)
    fn.addEnvironment(LOCK_ENV.keyPrefix, this.keyPrefix)
    this.#grantObjects(fn, grantedKeys(this, lockKey, options.lockKeys, this.keyPrefix))
    const readOnly = readOnlyKey(lockKey, options.lockKeys)
    // The KMS key, if any, is granted with the keys above.
    if (readOnly !== undefined) {
      fn.addToRolePolicy(
        new iam.PolicyStatement({
          actions: ['s3:GetObject'],
          resources: [this.bucket.arnForObjects(`${this.keyPrefix}${readOnly}`)],
        }),
      )
    }
    return lockKey
  }

  /** `--bucket NAME`: how `lambda-singleton exec` (a `ScheduledSingletonTask`) finds this store. */
  execOptions(): string[] {
    return ['--bucket', this.bucket.bucketName]
  }

  /** GetObject and PutObject on `keyPrefix + key` for each key (or pattern), and the KMS key. */
  #grantObjects(grantee: iam.IGrantable, keys: readonly string[]): iam.Grant {
    const arns = keys.map((key) => this.bucket.arnForObjects(`${this.keyPrefix}${key}`))
    const grant = iam.Grant.addToPrincipalOrResource({
      grantee,
      actions: [...LOCK_ACTIONS],
      resourceArns: arns,
      resource: this.bucket,
    })
    this.bucket.encryptionKey?.grant(grantee, 'kms:Decrypt', 'kms:GenerateDataKey')
    const principal = grantee.grantPrincipal
    if (!Construct.isConstruct(principal)) return grant
    for (const arn of arns.filter((_, i) => keys[i]?.includes('*'))) {
      acknowledgeWildcardResource(
        principal,
        arn,
        'Lock object names under this pattern are chosen at run time (a per-tenant or per-entity ' +
          'key), so the grant covers the pattern, and only with GetObject and PutObject.',
      )
    }
    return grant
  }
}
