/**
 * lambda-singleton itself, as a user deploys it: the `singleton()` Middy middleware with its
 * defaults (lease held to the invocation's deadline, tick dedupe on the Scheduler payload), on
 * an S3 bucket or a DynamoDB table.
 */
import { randomUUID } from 'node:crypto'
import middy from '@middy/core'
import type { Context } from 'aws-lambda'
import type { SingletonScheduleEvent } from 'lambda-singleton'
import { SkipReason } from 'lambda-singleton'
import { DynamoDBLockStore } from 'lambda-singleton/dynamodb'
import type { LockStore } from 'lambda-singleton/extend'
import { isSkipResult, type SingletonContext, singleton } from 'lambda-singleton/middy'
import { S3LockStore } from 'lambda-singleton/s3'
import { withoutSdkLogger } from '../../lib/aws/classify.js'
import { countRequests } from '../../test/support/requests.js'
import type { DynamoDBEngine, S3Engine } from '../engines.js'
import { DYNAMODB_PRICES, S3_PRICES } from '../prices.js'
import {
  type Container,
  type Contender,
  type Invocation,
  Outcome,
  type RequestCounter,
  type TokenRead,
} from './contender.js'
import { extraDynamoDBRequests, extraS3Requests } from './extra-requests.js'
import { countDynamoDBUnits } from './units.js'

/** The partition key of lambda-singleton's table (the store's default). */
export const SINGLETON_PARTITION_KEY = 'pk'

export function singletonOnS3(engine: S3Engine): Contender {
  return {
    name: 'lambda-singleton, S3',
    engine: 'S3',
    pricePerMillion: S3_PRICES,
    container: () => {
      // The engine's client (its endpoint, one attempt a request) as a deployed function's store
      // makes its own (sharedClient); one per container, so that each counts its own requests.
      const s3 = withoutSdkLogger(engine.client())
      const store = new S3LockStore({ s3, bucket: engine.bucket })
      return singletonContainer(store, countRequests(s3), extraS3Requests(s3), undefined, () => s3.destroy())
    },
    close: async () => {},
  }
}

export function singletonOnDynamoDB(engine: DynamoDBEngine, tableName: string): Contender {
  return {
    name: 'lambda-singleton, DynamoDB',
    engine: 'DynamoDB',
    pricePerMillion: DYNAMODB_PRICES,
    container: () => {
      const client = withoutSdkLogger(engine.client())
      const store = new DynamoDBLockStore({ client, tableName, partitionKey: SINGLETON_PARTITION_KEY })
      return singletonContainer(
        store,
        countRequests(client),
        extraDynamoDBRequests(client, SINGLETON_PARTITION_KEY),
        countDynamoDBUnits(client),
        () => client.destroy(),
      )
    },
    close: async () => {},
  }
}

function historySize(): { historySize?: number } {
  const given = process.env.BENCH_HISTORY_SIZE
  return given === undefined ? {} : { historySize: Number(given) }
}

/** One execution environment: its own store (and so its own cache of its last write). */
function singletonContainer(
  store: LockStore,
  requests: RequestCounter,
  extra: RequestCounter,
  units: RequestCounter | undefined,
  close: () => void,
): Container {
  // Lambda runs one invocation at a time in an environment, so one slot for the job suffices.
  let job: () => Promise<unknown> = async () => undefined
  let token: TokenRead = 'never'
  // No early timeout: a crash is a job that never ends, and Middy would end it gracefully.
  const handler = middy<SingletonScheduleEvent, unknown, Error, SingletonContext>({ timeoutEarlyInMillis: 0 })
    // the lock key is locks/<function name>; BENCH_HISTORY_SIZE: runs kept (10 by default), for
    // what carrying them costs (npm run bench:cold-trace)
    .use(singleton({ store, logger: false, ...historySize() }))
    .handler(async (_event, context) => {
      if (token === 'at-once') await fencingToken(context.singleton)
      await job()
      if (token === 'after-work') await fencingToken(context.singleton)
    })
  return {
    requests,
    extra,
    units,
    close,
    async invoke(invocation: Invocation): Promise<Outcome> {
      job = invocation.work
      token = invocation.token ?? 'never'
      const deadline = Date.now() + invocation.remainingMs
      const context = {
        functionName: invocation.job,
        awsRequestId: randomUUID(),
        getRemainingTimeInMillis: () => deadline - Date.now(),
      } as Context as SingletonContext
      const result = await handler(invocation.event, context)
      if (!isSkipResult(result)) return Outcome.Ran
      return result.reason === SkipReason.Held ? Outcome.SkippedHeld : Outcome.SkippedDuplicate
    },
  }
}

/**
 * The handle's token, awaited as a handler does. (Before 0.2 the token was a number on the
 * handle, ready when the handler started: the bench reads either, to measure both.)
 */
async function fencingToken(handle: object): Promise<number> {
  const { fencingToken, token } = handle as { fencingToken?: () => Promise<number>; token?: number }
  return fencingToken ? await fencingToken.call(handle) : (token ?? Number.NaN)
}
