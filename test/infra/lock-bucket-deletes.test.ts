import { execFileSync } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { Duration, RemovalPolicy } from 'aws-cdk-lib'
import { Annotations, Match, Template } from 'aws-cdk-lib/assertions'
import * as s3 from 'aws-cdk-lib/aws-s3'
import { describe, expect, it } from 'vitest'
import { LockBucket, SingletonValidationError } from '../../infra/index.js'
import { nagFindings, testStack, thrown } from './support.js'

/** The bucket policy statements of the one bucket policy in `stack`'s template. */
function policyStatements(template: Template): Array<Record<string, unknown>> {
  const policies = Object.values(template.findResources('AWS::S3::BucketPolicy')) as Array<{
    Properties: { PolicyDocument: { Statement: Array<Record<string, unknown>> } }
  }>
  expect(policies).toHaveLength(1)
  return policies[0]?.Properties.PolicyDocument.Statement ?? []
}

const deletes = (statement: Record<string, unknown>) =>
  [statement.Action].flat().some((action) => String(action).startsWith('s3:Delete'))

describe('LockBucket: lock objects cannot be deleted (a deletion could restart a fencing token)', () => {
  it('refuses s3:DeleteObject and s3:DeleteObjectVersion on the lock prefix to everyone', () => {
    const stack = testStack()
    const locks = new LockBucket(stack, 'Locks', { keyPrefix: 'mutex/' })
    const template = Template.fromStack(stack)
    const bucketArn = {
      'Fn::GetAtt': [stack.getLogicalId(locks.createdBucket?.node.defaultChild as never), 'Arn'],
    }
    template.hasResourceProperties('AWS::S3::BucketPolicy', {
      PolicyDocument: {
        Statement: Match.arrayWith([
          {
            Effect: 'Deny',
            Principal: { AWS: '*' },
            Action: ['s3:DeleteObject', 's3:DeleteObjectVersion'],
            Resource: { 'Fn::Join': ['', [bucketArn, '/mutex/*']] },
          },
        ]),
      },
    })
    // Only the lock objects: nothing else in the bucket is refused a delete.
    expect(policyStatements(template).filter(deletes)).toHaveLength(1)
  })

  it('adds the statement to an existing bucket of the stack, and passes cdk-nag', () => {
    const stack = testStack()
    const bucket = new s3.Bucket(stack, 'Jobs', {
      enforceSSL: true,
      blockPublicAccess: s3.BlockPublicAccess.BLOCK_ALL,
      serverAccessLogsPrefix: 'logs/',
    })
    new LockBucket(stack, 'Locks', { bucket })
    expect(policyStatements(Template.fromStack(stack)).filter(deletes)).toHaveLength(1)
    expect(nagFindings(stack)).toEqual([])
  })

  it('exposes the statement for an imported bucket, and warns that it could not be added', () => {
    const stack = testStack()
    const locks = new LockBucket(stack, 'Locks', {
      bucket: s3.Bucket.fromBucketName(stack, 'I', 'shared-locks'),
    })
    const statement = stack.resolve(locks.denyDeleteStatement?.toStatementJson())
    expect(statement).toMatchObject({ Effect: 'Deny', Action: ['s3:DeleteObject', 's3:DeleteObjectVersion'] })
    expect(JSON.stringify(statement.Resource)).toContain(':s3:::shared-locks/locks/*')
    Annotations.fromStack(stack).hasWarning('/Test/Locks', Match.stringLikeRegexp('denyDeleteStatement'))
  })

  it('leaves deletes allowed with denyDeletes: false, which autoDeleteObjects needs', () => {
    const stack = testStack()
    const locks = new LockBucket(stack, 'Locks', {
      denyDeletes: false,
      bucketProps: { autoDeleteObjects: true },
      removalPolicy: RemovalPolicy.DESTROY,
    })
    expect(locks.denyDeleteStatement).toBeUndefined()
    const ours = policyStatements(Template.fromStack(stack)).filter(
      (statement) => statement.Effect === 'Deny' && deletes(statement),
    )
    expect(ours).toEqual([])
  })

  it('accepts lifecycle rules that cannot expire lock objects', () => {
    const stack = testStack()
    new LockBucket(stack, 'Locks', {
      bucketProps: {
        versioned: true,
        lifecycleRules: [
          { prefix: 'tmp/', expiration: Duration.days(1) },
          { noncurrentVersionExpiration: Duration.days(30) }, // old versions only
          { expiration: Duration.days(1), tagFilters: { scratch: 'yes' } }, // lock objects carry no tags
          { prefix: 'locks/', expiration: Duration.days(1), enabled: false },
        ],
      },
    })
    expect(Template.fromStack(stack).findResources('AWS::S3::Bucket')).not.toEqual({})
  })

  it.each([
    [
      'autoDeleteObjects without denyDeletes: false',
      { bucketProps: { autoDeleteObjects: true } },
      /denyDeletes: false/,
    ],
    [
      'a lifecycle rule expiring everything',
      { bucketProps: { lifecycleRules: [{ id: 'purge', expiration: Duration.days(90) }] } },
      /lifecycleRules \(purge\) would expire lock objects under 'locks\/'/,
    ],
    [
      'a lifecycle rule expiring a part of the lock prefix',
      { bucketProps: { lifecycleRules: [{ prefix: 'locks/old-', expiration: Duration.days(1) }] } },
      /would expire lock objects/,
    ],
  ])('refuses %s at synth', (_name, props, message) => {
    const error = thrown(() => new LockBucket(testStack(), 'L', props))
    expect(error).toBeInstanceOf(SingletonValidationError)
    expect(error.message).toMatch(message)
  })
})

describe('lifecycle rules added to the created bucket after the construct', () => {
  it('refuses at synth one that would expire lock objects, however it was added', () => {
    const stack = testStack()
    const locks = new LockBucket(stack, 'Locks')
    locks.createdBucket?.addLifecycleRule({ id: 'purge', expiration: Duration.days(30) })
    const error = thrown(() => Template.fromStack(stack))
    expect(error.message).toMatch(
      /Test\/Locks.*lifecycle rule \(purge\) would expire lock objects under 'locks\/'/s,
    )
  })

  it('refuses one on a part of a custom lock prefix, and one given a date', () => {
    for (const rule of [
      { prefix: 'jobs/locks/old-', expiration: Duration.days(1) },
      { prefix: 'jobs/', expirationDate: new Date('2030-01-01T00:00:00Z') },
    ]) {
      const stack = testStack()
      new LockBucket(stack, 'Locks', { keyPrefix: 'jobs/locks/' }).createdBucket?.addLifecycleRule(rule)
      expect(thrown(() => Template.fromStack(stack)).message).toMatch(/would expire lock objects/)
    }
  })

  it('accepts added rules that cannot expire lock objects', () => {
    const stack = testStack()
    const bucket = new LockBucket(stack, 'Locks').createdBucket
    bucket?.addLifecycleRule({ prefix: 'tmp/', expiration: Duration.days(1) })
    bucket?.addLifecycleRule({ abortIncompleteMultipartUploadAfter: Duration.days(1) })
    bucket?.addLifecycleRule({ prefix: 'locks/', expiration: Duration.days(1), enabled: false })
    bucket?.addLifecycleRule({ expiration: Duration.days(1), tagFilters: { scratch: 'yes' } })
    const rules = (
      Object.values(Template.fromStack(stack).findResources('AWS::S3::Bucket'))[0] as {
        Properties: { LifecycleConfiguration: { Rules: unknown[] } }
      }
    ).Properties.LifecycleConfiguration.Rules
    expect(rules).toHaveLength(4)
  })
})

describe('nothing the library or its CLI does needs a delete of a lock object', () => {
  it('has no DeleteObject call in lib/ (the lock, the stores, fencedPut, the CLI)', () => {
    const lib = fileURLToPath(new URL('../../lib', import.meta.url))
    const found = (pattern: string) => {
      try {
        return execFileSync('grep', ['-rlE', pattern, lib], { encoding: 'utf8' }).trim()
      } catch {
        return '' // grep answers 1 when nothing matches
      }
    }
    expect(found('DeleteObject|DeleteItem|deleteObject|deleteItem')).toBe('')
    // The check itself finds what it looks for.
    expect(found('PutObjectCommand')).not.toBe('')
  })
})
