import { DynamoDBClient, GetItemCommand } from '@aws-sdk/client-dynamodb'
import { GetObjectCommand, HeadObjectCommand, S3Client } from '@aws-sdk/client-s3'
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest'
import { configurationReason } from '../../lib/aws/configuration.js'
import { ExitCode, exitCodeFor } from '../../lib/cli/exit-codes.js'
import { classifyDynamoDBError, DynamoDBErrorKind } from '../../lib/dynamodb/errors.js'
import { DynamoDBLockStore } from '../../lib/dynamodb/index.js'
import {
  ConfigurationReason,
  Lock,
  LockConfigurationError,
  LockError,
  LockStoreError,
  withSingleton,
} from '../../lib/index.js'
import { classifyS3Error, S3ErrorKind } from '../../lib/s3/errors.js'
import { S3Lock, S3LockStore } from '../../lib/s3/index.js'
import { AnsweringServer, dynamoDBError, s3Error } from '../support/answering-server.js'
import { lambdaContext } from '../support/lambda-context.js'
import { leaseOf } from '../support/lease-of.js'

const KEYS = { accessKeyId: 'AKIDEXAMPLE', secretAccessKey: 'secret' }
const KEY = 'locks/nightly-report'

/**
 * A machine with no AWS configuration at all: no region or credentials in the environment, no
 * config files, no instance metadata. The SDK reads these when a request is first sent.
 */
function withoutAwsConfiguration(): void {
  for (const name of Object.keys(process.env)) if (name.startsWith('AWS_')) vi.stubEnv(name, undefined)
  vi.stubEnv('AWS_CONFIG_FILE', '/nonexistent/aws/config')
  vi.stubEnv('AWS_SHARED_CREDENTIALS_FILE', '/nonexistent/aws/credentials')
  vi.stubEnv('AWS_EC2_METADATA_DISABLED', 'true')
}

/** What `send` rejects with: the error exactly as the SDK builds it. */
async function failureOf(send: () => Promise<unknown>): Promise<unknown> {
  return send().then(
    () => expect.unreachable('the request succeeded'),
    (error: unknown) => error,
  )
}

let server: AnsweringServer
beforeAll(async () => {
  server = await AnsweringServer.start()
})
afterAll(() => server.close())
beforeEach(() => {
  withoutAwsConfiguration()
  server.seen.length = 0
})
afterEach(() => vi.unstubAllEnvs())

const s3Client = (config: { region?: string; credentials?: typeof KEYS } = {}) =>
  new S3Client({ endpoint: server.endpoint, forcePathStyle: true, maxAttempts: 1, ...config })
const dynamoDBClient = (config: { region?: string; credentials?: typeof KEYS } = {}) =>
  new DynamoDBClient({ endpoint: server.endpoint, maxAttempts: 1, ...config })
const getObject = (s3: S3Client) => s3.send(new GetObjectCommand({ Bucket: 'locks', Key: KEY }))
const getItem = (client: DynamoDBClient) =>
  client.send(new GetItemCommand({ TableName: 'locks', Key: { pk: { S: KEY } } }))

describe('LockConfigurationError', () => {
  it('is a LockStoreError that is never retryable, and names its reason and keeps its cause', () => {
    const cause = new Error('Region is missing')
    const error = new LockConfigurationError('m', { key: 'k', reason: ConfigurationReason.NoRegion, cause })
    expect(error).toBeInstanceOf(LockStoreError)
    expect(error).toBeInstanceOf(LockError)
    expect(String(error)).toBe('LockConfigurationError: m')
    expect(error).toMatchObject({ retryable: false, reason: 'no-region', key: 'k', cause })
  })

  it('ends a CLI command with the configuration exit code, whatever its reason', () => {
    for (const reason of Object.values(ConfigurationReason)) {
      expect(exitCodeFor(new LockConfigurationError('m', { reason }))).toBe(ExitCode.Configuration)
    }
  })
})

describe('a client with no region or no credentials, as the SDK fails it', () => {
  it.each([
    ['no region', { credentials: KEYS }, ConfigurationReason.NoRegion],
    [
      'a region that is no region name',
      { region: 'not a region!', credentials: KEYS },
      ConfigurationReason.NoRegion,
    ],
    ['no credentials', { region: 'eu-west-1' }, ConfigurationReason.NoCredentials],
  ])('classifies S3 with %s as fatal configuration, sending nothing', async (_, config, reason) => {
    const error = await failureOf(() => getObject(s3Client(config)))
    expect(classifyS3Error(error)).toBe(S3ErrorKind.Fatal)
    expect(configurationReason(error)).toBe(reason)
    expect(server.seen).toEqual([])
  })

  it.each([
    ['no region', { credentials: KEYS }, ConfigurationReason.NoRegion],
    ['no credentials', { region: 'eu-west-1' }, ConfigurationReason.NoCredentials],
  ])('classifies DynamoDB with %s as fatal configuration, sending nothing', async (_, config, reason) => {
    const error = await failureOf(() => getItem(dynamoDBClient(config)))
    expect(classifyDynamoDBError(error)).toBe(DynamoDBErrorKind.Fatal)
    expect(configurationReason(error)).toBe(reason)
    expect(server.seen).toEqual([])
  })

  it('still takes a refused connection, which also has no HTTP status, for a transient failure', async () => {
    const closed = await AnsweringServer.start()
    const endpoint = closed.endpoint
    await closed.close()
    const config = { endpoint, region: 'eu-west-1', credentials: KEYS, maxAttempts: 1 }
    const s3 = await failureOf(() => getObject(new S3Client({ ...config, forcePathStyle: true })))
    const dynamodb = await failureOf(() => getItem(new DynamoDBClient(config)))
    expect([classifyS3Error(s3), configurationReason(s3)]).toEqual([S3ErrorKind.Transient, undefined])
    expect([classifyDynamoDBError(dynamodb), configurationReason(dynamodb)]).toEqual([
      DynamoDBErrorKind.Transient,
      undefined,
    ])
  })
})

describe('the answer of a service that refuses the credentials, as the SDK reads it', () => {
  const configured = { region: 'eu-west-1', credentials: KEYS }

  it.each([
    [403, 'InvalidAccessKeyId'],
    [403, 'SignatureDoesNotMatch'],
    [400, 'ExpiredToken'],
  ])('classifies S3 %s %s as fatal configuration, not as a hidden key', async (status, code) => {
    server.answer = s3Error(status, code, 'refused')
    const error = await failureOf(() => getObject(s3Client(configured)))
    expect(classifyS3Error(error)).toBe(S3ErrorKind.Fatal)
    expect(configurationReason(error)).toBe(ConfigurationReason.CredentialsRefused)
  })

  it("keeps S3's AccessDenied, and a HEAD's 403 that names nothing, as denied (maybe a hidden key)", async () => {
    server.answer = s3Error(403, 'AccessDenied', 'Access Denied')
    const get = await failureOf(() => getObject(s3Client(configured)))
    const head = await failureOf(() =>
      s3Client(configured).send(new HeadObjectCommand({ Bucket: 'locks', Key: KEY })),
    )
    for (const error of [get, head]) {
      expect(classifyS3Error(error)).toBe(S3ErrorKind.Denied)
      expect(configurationReason(error)).toBeUndefined()
    }
  })

  it.each([
    ['UnrecognizedClientException', ConfigurationReason.CredentialsRefused],
    ['InvalidSignatureException', ConfigurationReason.CredentialsRefused],
    ['ExpiredTokenException', ConfigurationReason.CredentialsRefused],
    ['AccessDeniedException', undefined],
  ])('classifies DynamoDB %s as fatal, configuration: %s', async (code, reason) => {
    server.answer = dynamoDBError(code, 'refused')
    const error = await failureOf(() => getItem(dynamoDBClient(configured)))
    expect(classifyDynamoDBError(error)).toBe(DynamoDBErrorKind.Fatal)
    expect(configurationReason(error)).toBe(reason)
  })

  it('fails an S3 read at once with LockConfigurationError, not "absent, unconfirmed"', async () => {
    server.answer = s3Error(403, 'InvalidAccessKeyId', 'no such key id')
    const store = new S3LockStore({ s3: s3Client(configured), bucket: 'locks' })
    const error = await store.read(KEY).catch((e: unknown) => e)
    expect(error).toBeInstanceOf(LockConfigurationError)
    expect(error).toMatchObject({ reason: 'credentials-refused', key: KEY, retryable: false })
    expect((error as Error).message).toMatch(/^the AWS credentials were refused \(InvalidAccessKeyId\)/)
    expect(server.seen).toEqual([`GET /locks/${KEY}`])
  })
})

describe('a lock whose client has no region or no credentials', () => {
  it('fails S3Lock.tryAcquire at once, naming the missing region, after one send', async () => {
    const s3 = s3Client({ credentials: KEYS })
    const send = vi.spyOn(s3, 'send')
    const error = await leaseOf(new S3Lock({ s3, bucket: 'locks', key: KEY }).tryAcquire()).catch(
      (e: unknown) => e,
    )
    expect(error).toBeInstanceOf(LockConfigurationError)
    expect(error).toMatchObject({ reason: 'no-region', retryable: false })
    expect((error as Error).message).toMatch(/^no AWS region \(Region is missing\): S3 \w+ on s3:\/\/locks\//)
    expect((error as Error).message).not.toMatch(/kept failing/)
    expect(send).toHaveBeenCalledTimes(1)
  })

  it('fails a DynamoDB lock at once, naming the missing credentials, after one send', async () => {
    const client = dynamoDBClient({ region: 'eu-west-1' })
    const send = vi.spyOn(client, 'send')
    const lock = new Lock({ store: new DynamoDBLockStore({ client, tableName: 'locks' }), key: KEY })
    const error = await lock.acquire({ waitMs: 5_000 }).catch((e: unknown) => e)
    expect(error).toBeInstanceOf(LockConfigurationError)
    expect(error).toMatchObject({ reason: 'no-credentials', retryable: false })
    expect((error as Error).message).toMatch(
      /^no AWS credentials \(.+\): DynamoDB \w+ of "locks\/nightly-report"/,
    )
    expect(send).toHaveBeenCalledTimes(1)
  })

  it('fails a withSingleton invocation at once, without running the handler', async () => {
    const s3 = s3Client({ credentials: KEYS })
    const send = vi.spyOn(s3, 'send')
    const outcomes: string[] = []
    const handler = withSingleton(async () => expect.unreachable('the handler ran'), {
      store: new S3LockStore({ s3, bucket: 'locks' }),
      logger: false,
      onOutcome: (event) => outcomes.push(event.outcome),
    })
    const error = await handler({}, lambdaContext()).catch((e: unknown) => e)
    expect(error).toBeInstanceOf(LockConfigurationError)
    expect(error).toMatchObject({ reason: 'no-region' })
    expect(send).toHaveBeenCalledTimes(1)
    expect(outcomes).toEqual(['error'])
  })
})
