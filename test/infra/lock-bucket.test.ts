import { Errors, RemovalPolicy, type Stack } from 'aws-cdk-lib'
import { Annotations, Match, Template } from 'aws-cdk-lib/assertions'
import * as iam from 'aws-cdk-lib/aws-iam'
import * as kms from 'aws-cdk-lib/aws-kms'
import * as s3 from 'aws-cdk-lib/aws-s3'
import { describe, expect, it } from 'vitest'
import { LockBucket, SingletonValidationError } from '../../infra/index.js'
import { nagFindings, testStack, thrown } from './support.js'

/** A stack with a default LockBucket and a role granted on it, shared by the read-only tests. */
function defaultSetup() {
  const stack = testStack()
  const locks = new LockBucket(stack, 'Locks')
  const role = new iam.Role(stack, 'Worker', { assumedBy: new iam.ServicePrincipal('lambda.amazonaws.com') })
  locks.grant(role)
  return { stack, locks, role, template: Template.fromStack(stack) }
}

const shared = defaultSetup()
const bucketId = shared.stack.getLogicalId(shared.locks.createdBucket?.node.defaultChild as s3.CfnBucket)
const bucketArn = { 'Fn::GetAtt': [bucketId, 'Arn'] }
const lockObjects = (prefix: string) => ({ 'Fn::Join': ['', [bucketArn, `/${prefix}*`]] })

describe('LockBucket: a created bucket', () => {
  it('blocks all public access and uses S3-managed encryption', () => {
    shared.template.hasResourceProperties('AWS::S3::Bucket', {
      PublicAccessBlockConfiguration: {
        BlockPublicAcls: true,
        BlockPublicPolicy: true,
        IgnorePublicAcls: true,
        RestrictPublicBuckets: true,
      },
      BucketEncryption: {
        ServerSideEncryptionConfiguration: [{ ServerSideEncryptionByDefault: { SSEAlgorithm: 'AES256' } }],
      },
    })
  })

  it('is retained by default: deleting lock objects would reset every fencing token', () => {
    shared.template.hasResource('AWS::S3::Bucket', {
      DeletionPolicy: 'Retain',
      UpdateReplacePolicy: 'Retain',
    })
  })

  it('refuses any request without TLS', () => {
    shared.template.hasResourceProperties('AWS::S3::BucketPolicy', {
      PolicyDocument: {
        Statement: Match.arrayWith([
          {
            Effect: 'Deny',
            Principal: { AWS: '*' },
            Action: 's3:*',
            Condition: { Bool: { 'aws:SecureTransport': 'false' } },
            Resource: [bucketArn, { 'Fn::Join': ['', [bucketArn, '/*']] }],
          },
        ]),
      },
    })
  })

  it('denies s3:PutObject under the lock prefix when neither If-Match nor If-None-Match is sent', () => {
    shared.template.hasResourceProperties('AWS::S3::BucketPolicy', {
      PolicyDocument: {
        Statement: Match.arrayWith([
          {
            Effect: 'Deny',
            Principal: { AWS: '*' },
            Action: 's3:PutObject',
            Resource: lockObjects('locks/'),
            Condition: { Null: { 's3:if-match': 'true', 's3:if-none-match': 'true' } },
          },
        ]),
      },
    })
    expect(shared.locks.denyStatementAdded).toBe(true)
  })

  it('takes removalPolicy and bucketProps, keeping the secure settings', () => {
    const stack = testStack()
    new LockBucket(stack, 'Locks', {
      removalPolicy: RemovalPolicy.DESTROY,
      bucketProps: { versioned: true, bucketName: 'my-locks' },
    })
    const template = Template.fromStack(stack)
    template.hasResource('AWS::S3::Bucket', {
      DeletionPolicy: 'Delete',
      Properties: Match.objectLike({
        BucketName: 'my-locks',
        VersioningConfiguration: { Status: 'Enabled' },
        PublicAccessBlockConfiguration: Match.objectLike({ BlockPublicPolicy: true }),
      }),
    })
    template.hasResourceProperties('AWS::S3::BucketPolicy', {
      PolicyDocument: {
        Statement: Match.arrayWith([
          Match.objectLike({ Condition: { Bool: { 'aws:SecureTransport': 'false' } } }),
        ]),
      },
    })
  })
})

describe('LockBucket.grant()', () => {
  it('gives exactly s3:GetObject and s3:PutObject on the lock prefix, and nothing else', () => {
    const policies = shared.template.findResources('AWS::IAM::Policy')
    const statements = Object.values(policies).flatMap(
      (policy) =>
        (policy as { Properties: { PolicyDocument: { Statement: unknown[] } } }).Properties.PolicyDocument
          .Statement,
    )
    expect(statements).toEqual([
      { Effect: 'Allow', Action: ['s3:GetObject', 's3:PutObject'], Resource: lockObjects('locks/') },
    ])
  })

  it('follows a custom prefix, in the grant and in the deny statement', () => {
    const stack = testStack()
    const locks = new LockBucket(stack, 'Locks', { keyPrefix: 'jobs/locks/' })
    const role = new iam.Role(stack, 'Worker', {
      assumedBy: new iam.ServicePrincipal('lambda.amazonaws.com'),
    })
    locks.grant(role)
    const template = Template.fromStack(stack)
    const id = stack.getLogicalId(locks.createdBucket?.node.defaultChild as s3.CfnBucket)
    const resource = { 'Fn::Join': ['', [{ 'Fn::GetAtt': [id, 'Arn'] }, '/jobs/locks/*']] }
    template.hasResourceProperties('AWS::IAM::Policy', {
      PolicyDocument: {
        Statement: [{ Effect: 'Allow', Action: ['s3:GetObject', 's3:PutObject'], Resource: resource }],
      },
    })
    template.hasResourceProperties('AWS::S3::BucketPolicy', {
      PolicyDocument: {
        Statement: Match.arrayWith([Match.objectLike({ Effect: 'Deny', Resource: resource })]),
      },
    })
  })

  it('adds kms:Decrypt and kms:GenerateDataKey when the bucket has a KMS key', () => {
    const stack = testStack()
    const key = new kms.Key(stack, 'Key', { enableKeyRotation: true })
    const locks = new LockBucket(stack, 'Locks', {
      bucketProps: { encryption: s3.BucketEncryption.KMS, encryptionKey: key },
    })
    const role = new iam.Role(stack, 'Worker', {
      assumedBy: new iam.ServicePrincipal('lambda.amazonaws.com'),
    })
    locks.grant(role)
    Template.fromStack(stack).hasResourceProperties('AWS::IAM::Policy', {
      PolicyDocument: {
        Statement: Match.arrayWith([
          Match.objectLike({ Action: ['s3:GetObject', 's3:PutObject'] }),
          Match.objectLike({ Action: ['kms:Decrypt', 'kms:GenerateDataKey'], Effect: 'Allow' }),
        ]),
      },
    })
  })

  it('raises no cdk-nag finding once the bucket logs its access', () => {
    const stack = testStack()
    const logs = new s3.Bucket(stack, 'AccessLogs', {
      enforceSSL: true,
      blockPublicAccess: s3.BlockPublicAccess.BLOCK_ALL,
    })
    const locks = new LockBucket(stack, 'Locks', { bucketProps: { serverAccessLogsBucket: logs } })
    locks.grant(
      new iam.Role(stack, 'Worker', { assumedBy: new iam.ServicePrincipal('lambda.amazonaws.com') }),
    )
    expect(nagFindings(stack)).toEqual([])
  })

  it('leaves only AwsSolutions-S1 (access logs) to the user with the bare defaults', () => {
    expect(nagFindings(shared.stack)).toEqual([
      { rule: 'AwsSolutions-S1', path: 'Test/Locks/Bucket/Resource' },
    ])
  })
})

describe('LockBucket on an existing bucket', () => {
  it('adds the deny statement to a bucket of the same app', () => {
    const stack = testStack()
    const bucket = new s3.Bucket(stack, 'Existing', { enforceSSL: true })
    const locks = new LockBucket(stack, 'Locks', { bucket, keyPrefix: 'mutex/' })
    expect(locks.bucket).toBe(bucket)
    expect(locks.createdBucket).toBeUndefined()
    const template = Template.fromStack(stack)
    template.resourceCountIs('AWS::S3::Bucket', 1)
    template.hasResourceProperties('AWS::S3::BucketPolicy', {
      PolicyDocument: {
        Statement: Match.arrayWith([
          Match.objectLike({
            Effect: 'Deny',
            Action: 's3:PutObject',
            Condition: { Null: { 's3:if-match': 'true', 's3:if-none-match': 'true' } },
          }),
        ]),
      },
    })
  })

  it('warns when an imported bucket cannot take the statement, and exposes it', () => {
    const stack = testStack()
    const bucket = s3.Bucket.fromBucketName(stack, 'Imported', 'someone-elses-bucket')
    const locks = new LockBucket(stack, 'Locks', { bucket })
    expect(locks.denyStatementAdded).toBe(false)
    const statement = stack.resolve(locks.denyStatement.toStatementJson())
    expect(statement).toMatchObject({ Effect: 'Deny', Action: 's3:PutObject' })
    expect(JSON.stringify(statement.Resource)).toContain(':s3:::someone-elses-bucket/locks/*')
    Annotations.fromStack(stack).hasWarning(
      '/Test/Locks',
      Match.stringLikeRegexp('cannot be changed from here'),
    )
  })
})

describe('LockBucket validation', () => {
  const cases: Array<[string, (stack: Stack) => void, RegExp]> = [
    [
      'a prefix that runs into the lock name',
      (s) => new LockBucket(s, 'L', { keyPrefix: 'locks' }),
      /runs into the lock's name/,
    ],
    ['an empty prefix', (s) => new LockBucket(s, 'L', { keyPrefix: '' }), /keyPrefix "" is empty/],
    ['a wildcard in the prefix', (s) => new LockBucket(s, 'L', { keyPrefix: 'locks/*' }), /wildcards/],
    ['a leading slash', (s) => new LockBucket(s, 'L', { keyPrefix: '/locks/' }), /leading slash/],
    [
      'both bucket and bucketProps',
      (s) => new LockBucket(s, 'L', { bucket: new s3.Bucket(s, 'B'), bucketProps: { versioned: true } }),
      /either `bucket`.*or `bucketProps`/,
    ],
    [
      'removalPolicy with an existing bucket',
      (s) => new LockBucket(s, 'L', { bucket: new s3.Bucket(s, 'B'), removalPolicy: RemovalPolicy.DESTROY }),
      /removalPolicy` only applies/,
    ],
    [
      'public access not fully blocked',
      (s) => new LockBucket(s, 'L', { bucketProps: { blockPublicAccess: s3.BlockPublicAccess.BLOCK_ACLS } }),
      /blockPublicAccess must block all/,
    ],
    [
      'TLS not enforced',
      (s) => new LockBucket(s, 'L', { bucketProps: { enforceSSL: false } }),
      /enforceSSL cannot be false/,
    ],
  ]

  it.each(cases)('refuses %s at synth with a ValidationError', (_name, build, message) => {
    const error = thrown(() => build(testStack()))
    expect(error).toBeInstanceOf(SingletonValidationError)
    expect(error.name).toBe('ValidationError')
    expect(error.message).toMatch(message)
    expect(error.message).toContain('(at Test/L)')
    expect(Errors.isValidationError(error)).toBe(true)
  })
})
