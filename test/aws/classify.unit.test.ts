import { describe, expect, it } from 'vitest'
import {
  classifyError,
  Failure,
  type ServiceErrors,
  sendClassified,
  sharedClient,
  unexpectedAnswer,
} from '../../lib/aws/classify.js'
import { NETWORK_ERROR_CODES } from '../../lib/aws/errors.js'
import { DYNAMODB_ERRORS } from '../../lib/dynamodb/errors.js'
import { ConfigurationReason, LockConfigurationError, LockStoreError } from '../../lib/index.js'
import { S3_ERRORS } from '../../lib/s3/errors.js'

/** A service of our own, so that each rule shows apart from any real service's codes. */
const TABLE: ServiceErrors<'lost' | 'gone'> = {
  answers: { Lost: 'lost', Gone: 'gone' },
  answerStatuses: { 412: 'lost', 404: 'gone' },
  transient: new Set(['SlowDown']),
  fatal: new Set(['NoSuchPlace']),
  fatalStatuses: new Set([501]),
}

/** An SDK service exception as the SDK builds one: a name, and the status when an answer came. */
const answered = (name: string, status?: number, more: object = {}) =>
  Object.assign(new Error(name), { name, $metadata: { httpStatusCode: status }, ...more })

describe('classifyError, by a service table', () => {
  it.each([
    ['a code the table names as an answer', answered('Lost', 400), 'lost'],
    ['an S3-style Code over the name', answered('Unknown', 400, { Code: 'Gone' }), 'gone'],
    ['a status the table names, under a code it does not know', answered('Whatever', 412), 'lost'],
    ['a fatal code, whatever its status says', answered('NoSuchPlace', 404), Failure.Fatal],
    ['a fatal code, even when the SDK calls it retryable', answered('NoSuchPlace', 503), Failure.Fatal],
    ['a transient code, before the status it came with', answered('SlowDown', 412), Failure.Transient],
    ['a network error name the table does not list', answered('TimeoutError'), Failure.Transient],
    ['a fatal status', answered('Whatever', 501), Failure.Fatal],
    ['any other 5xx', answered('Whatever', 502), Failure.Transient],
    ['429', answered('Whatever', 429), Failure.Transient],
    ['an error the SDK marks retryable', answered('Whatever', 400, { $retryable: {} }), Failure.Transient],
    ['any other 4xx', answered('Whatever', 400), Failure.Fatal],
    ['an error with no answer at all', new Error('socket hang up'), Failure.Transient],
    [
      'a TypeError with no answer (our own bug, not the network)',
      new TypeError('x is undefined'),
      Failure.Fatal,
    ],
    ['something thrown that is no Error', 'oops', Failure.Fatal],
  ])('takes %s', (_, error, kind) => {
    expect(classifyError(TABLE, error)).toBe(kind)
  })

  it('takes a Node system error by its code for a network failure', () => {
    for (const code of ['ECONNRESET', 'ENOTFOUND', 'UND_ERR_SOCKET']) {
      expect(classifyError(TABLE, Object.assign(new Error('x'), { code, $metadata: {} }))).toBe(
        Failure.Transient,
      )
    }
  })

  it('takes a misconfigured client for fatal before any code or status, such as a refused key', () => {
    expect(classifyError(TABLE, answered('InvalidAccessKeyId', 412))).toBe(Failure.Fatal)
    expect(classifyError(TABLE, answered('CredentialsProviderError'))).toBe(Failure.Fatal)
  })

  it('does not take a code for an answer because an object has a property of that name', () => {
    expect(classifyError(TABLE, answered('toString', 400))).toBe(Failure.Fatal)
  })
})

describe.each([
  ['S3', S3_ERRORS],
  ['DynamoDB', DYNAMODB_ERRORS],
] as const)("%s's error table", (_, table: ServiceErrors<string>) => {
  it('gives every code one meaning only', () => {
    const answers = Object.keys(table.answers)
    const all = [...answers, ...table.transient, ...table.fatal, ...NETWORK_ERROR_CODES]
    expect(new Set(all).size).toBe(all.length)
  })

  it('names no answer Transient or Fatal, which the store would never be shown', () => {
    const kinds = [...Object.values(table.answers), ...Object.values(table.answerStatuses ?? {})]
    expect(kinds.filter((kind) => kind === Failure.Transient || kind === Failure.Fatal)).toEqual([])
  })
})

describe('S3_ERRORS', () => {
  it.each([
    ['NoSuchBucket', 404, Failure.Fatal],
    ['NoSuchKey', 404, 'not-found'],
    ['AccessDenied', 403, 'denied'],
    ['ConditionalRequestConflict', 409, 'conflict'],
    ['PreconditionFailed', 400, 'precondition-failed'],
    // The SDK corrects its clock from this 403: the next try is signed right.
    ['RequestTimeTooSkewed', 403, Failure.Transient],
    ['SlowDown', 503, Failure.Transient],
    // S3 sends it with 400: the code alone says that another try may do.
    ['RequestTimeout', 400, Failure.Transient],
    ['NotImplemented', 501, Failure.Fatal],
    // A HEAD's error has no body, so no code: its status alone tells (a 403 may hide a missing key).
    ['NotFound', 404, 'not-found'],
    ['403', 403, 'denied'],
    ['412', 412, 'precondition-failed'],
    ['409', 409, 'conflict'],
  ] as const)('takes %s (%s) as %s', (name, status, kind) => {
    expect(classifyError(S3_ERRORS, answered(name, status))).toBe(kind)
  })
})

describe('DYNAMODB_ERRORS', () => {
  it.each([
    ['ConditionalCheckFailedException', 400, 'condition-failed'],
    ['TransactionConflictException', 400, 'conflict'],
    ['ThrottlingException', 400, Failure.Transient],
    ['ProvisionedThroughputExceededException', 400, Failure.Transient],
    // No retry makes a table appear or a role allow it, whatever status a proxy gave the answer.
    ['ResourceNotFoundException', 500, Failure.Fatal],
    ['AccessDeniedException', 503, Failure.Fatal],
    ['ValidationException', 500, Failure.Fatal],
    // DynamoDB sends no 404 for a missing item: a status that means one on S3 means nothing here.
    ['UnknownOperationException', 404, Failure.Fatal],
  ] as const)('takes %s (%s) as %s', (name, status, kind) => {
    expect(classifyError(DYNAMODB_ERRORS, answered(name, status))).toBe(kind)
  })
})

/** A command as the SDK's clients take it: only its middleware stack is touched. */
const command = () => ({ middlewareStack: { add() {} } })

/** A client whose every send settles as `answer` says. */
function client(answer: () => Promise<unknown>) {
  return { send: () => answer() }
}

const SEND = { timeoutMs: 1_000, errors: TABLE, what: 'Svc Get of "k"', key: 'k' }

describe('sendClassified', () => {
  it('gives back what the service answered', async () => {
    const call = await sendClassified(
      client(async () => ({ body: 'b' })),
      command(),
      SEND,
    )
    expect(call).toEqual({ kind: 'ok', output: { body: 'b' }, serverDate: undefined })
  })

  it('gives back an answer the table names, saying whether the SDK sent the request twice', async () => {
    const error = answered('Lost', 412, { $metadata: { httpStatusCode: 412, attempts: 2 } })
    const call = await sendClassified(
      client(() => Promise.reject(error)),
      command(),
      SEND,
    )
    expect(call).toEqual({ kind: 'lost', error, retried: true, serverDate: undefined })
  })

  it('throws a retryable LockStoreError for a transient failure, naming the request, keeping the cause', async () => {
    const error = answered('SlowDown', 503)
    const thrown = await sendClassified(
      client(() => Promise.reject(error)),
      command(),
      SEND,
    ).catch((e) => e)
    expect(thrown).toBeInstanceOf(LockStoreError)
    expect(thrown).not.toBeInstanceOf(LockConfigurationError)
    expect(thrown).toMatchObject({ key: 'k', retryable: true, cause: error })
    expect(thrown.message).toBe('Svc Get of "k" failed: SlowDown: SlowDown')
  })

  it('throws a LockStoreError that is not retryable for a fatal failure', async () => {
    const error = answered('NoSuchPlace', 404)
    const thrown = await sendClassified(
      client(() => Promise.reject(error)),
      command(),
      SEND,
    ).catch((e) => e)
    expect(thrown).toMatchObject({ name: 'LockStoreError', retryable: false, cause: error })
  })

  it("throws the service's own configuration error, asked only of failures no answer explains", async () => {
    const asked: unknown[] = []
    const misconfigured = (error: unknown) => {
      asked.push(error)
      return new LockConfigurationError('m', {
        key: 'k',
        reason: ConfigurationReason.KeySchema,
        cause: error,
      })
    }
    const lost = answered('Lost', 412)
    await sendClassified(
      client(() => Promise.reject(lost)),
      command(),
      { ...SEND, misconfigured },
    )
    expect(asked).toEqual([])
    const fatal = answered('NoSuchPlace', 400)
    const thrown = await sendClassified(
      client(() => Promise.reject(fatal)),
      command(),
      {
        ...SEND,
        misconfigured,
      },
    ).catch((e) => e)
    expect(thrown).toMatchObject({ name: 'LockConfigurationError', reason: 'key-schema', cause: fatal })
  })

  it('names refused credentials before asking the service', async () => {
    const error = answered('InvalidAccessKeyId', 403)
    const thrown = await sendClassified(
      client(() => Promise.reject(error)),
      command(),
      {
        ...SEND,
        misconfigured: () => expect.unreachable('the service was asked'),
      },
    ).catch((e) => e)
    expect(thrown).toMatchObject({ reason: ConfigurationReason.CredentialsRefused, retryable: false })
  })

  it('throws a timed-out request as retryable "request timed out", whatever the abort surfaced as', async () => {
    const stuck = client(
      () => new Promise((_, reject) => setTimeout(() => reject(new TypeError('terminated')), 50)),
    )
    const thrown = await sendClassified(stuck, command(), { ...SEND, timeoutMs: 10 }).catch((e) => e)
    expect(thrown).toMatchObject({ name: 'LockStoreError', retryable: true })
    expect(thrown.message).toBe('Svc Get of "k" failed: request timed out')
  })

  it("rejects with the caller's reason when the caller gave up: the store did not fail", async () => {
    const caller = new AbortController()
    const pending = sendClassified(
      client(() => new Promise((_, reject) => setTimeout(() => reject(new Error('aborted')), 10))),
      command(),
      { ...SEND, signal: caller.signal },
    )
    caller.abort(new Error('shutting down'))
    await expect(pending).rejects.toThrow('shutting down')
  })
})

describe('unexpectedAnswer', () => {
  it('is a LockStoreError that is not retryable, naming the request and keeping the cause', () => {
    const cause = new Error('no ETag')
    const error = unexpectedAnswer('S3 PutObject on s3://b/k', 'k', cause)
    expect(error).toBeInstanceOf(LockStoreError)
    expect(error).toMatchObject({ key: 'k', retryable: false, cause })
    expect(error.message).toBe('S3 PutObject on s3://b/k: unexpected answer: Error: no ETag')
  })
})

describe('sharedClient', () => {
  it('makes one client, on first use, that sends each request once', () => {
    const made: object[] = []
    const removed: string[] = []
    const get = sharedClient((config) => {
      made.push(config)
      return { config, middlewareStack: { remove: (name: string) => removed.push(name) > 0 } }
    })
    expect(made).toEqual([])
    expect(get()).toBe(get())
    expect(made).toEqual([{ maxAttempts: 1 }])
    expect(removed).toEqual(['loggerMiddleware'])
  })
})
