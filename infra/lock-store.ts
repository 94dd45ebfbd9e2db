import type * as iam from 'aws-cdk-lib/aws-iam'
import type * as lambda from 'aws-cdk-lib/aws-lambda'
import type { LockStoreKind } from '../lib/config.js'
import type { BindOptions } from './private/lock-key.js'

/**
 * Where scheduled singletons keep their locks, as the constructs that schedule them see it: a
 * `LockBucket` (S3) or a `LockTable` (DynamoDB). `ScheduledSingleton`, `ScheduledSingletonFunction`
 * and `ScheduledSingletonTask` use a store through this alone, never by its class, as
 * aws-cdk-lib's schedules use their targets through `IScheduleTarget`.
 */
export interface ILockStore {
  /** Which store it is, as `LAMBDA_SINGLETON_STORE` names it. */
  readonly kind: LockStoreKind
  /** What every lock key in it starts with (`locks/` by default). */
  readonly keyPrefix: string

  /** Lets `grantee` use every lock under the prefix: for an operator or a tool that serves every job. */
  grant(grantee: iam.IGrantable): iam.Grant
  /** Lets `grantee` use one lock only: `keyPrefix + lockKey`. */
  grantKey(grantee: iam.IGrantable, lockKey: string): iam.Grant
  /** Lets `grantee` use the locks whose keys match `patterns` (IAM wildcards), below the prefix. */
  grantKeys(grantee: iam.IGrantable, patterns: readonly string[]): iam.Grant
  /**
   * Wires a function to the store: the environment the `singleton()` middleware reads and a grant
   * on its own key (or `lockKeys`). Returns the function's lock key, below the prefix.
   */
  bind(fn: lambda.Function, options?: BindOptions): string
  /** The options that name this store to `lambda-singleton exec`: `--bucket B`, or `--table T` and its key. */
  execOptions(): string[]
}
