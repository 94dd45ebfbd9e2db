import { Token } from 'aws-cdk-lib'
import type { Construct } from 'constructs'
import { keyPrefixProblem } from '../../lib/config.js'
import { SingletonValidationError } from '../errors.js'

/** How one lock store checks its key prefix. */
export interface KeyPrefixRules {
  /** The construct reporting the problem, e.g. `LockBucket`. */
  readonly construct: string
  /** What an empty prefix would cover, e.g. `bucket`. */
  readonly container: string
  /** The longest prefix accepted, in UTF-8 bytes, leaving room for the lock's own name below it. */
  readonly maxBytes: number
  /** Refuse a leading `/` (S3 keys have none). */
  readonly noLeadingSlash?: boolean
}

/**
 * Refuses at synth time a key prefix that would widen every grant built on it: an empty one
 * (covers the whole store) or one with `*`/`?` (IAM reads them as wildcards, in ARNs and in
 * `StringLike` conditions alike).
 */
export function validateKeyPrefix(scope: Construct, prefix: string, rules: KeyPrefixRules): void {
  if (Token.isUnresolved(prefix)) return
  const fail = (why: string): never => {
    throw new SingletonValidationError(
      `${rules.construct}: keyPrefix ${JSON.stringify(prefix)} ${why}`,
      scope,
    )
  }
  if (prefix.length === 0) {
    fail(`is empty; use e.g. 'locks/' (an empty prefix would cover the whole ${rules.container})`)
  }
  const problem = keyPrefixProblem(prefix, rules.noLeadingSlash ? 's3' : 'dynamodb')
  if (problem) fail(problem)
  if (/[*?]/.test(prefix)) fail('contains "*" or "?", which IAM reads as wildcards')
  // Bytes, as the key limits they leave room in count: not characters.
  if (Buffer.byteLength(prefix, 'utf8') > rules.maxBytes) fail(`is longer than ${rules.maxBytes} bytes`)
}
