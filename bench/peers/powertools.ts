/**
 * Powertools for AWS Lambda (TypeScript) idempotency, as its documentation sets it up: the
 * `makeIdempotent` handler wrapper with the DynamoDB persistence layer (a table keyed by `id`),
 * default configuration. The idempotency key is a hash of the whole event, which for a
 * Scheduler tick is the same for every delivery of that tick.
 *
 * Not its Middy middleware: in 2.35.0 (the latest release) `makeHandlerIdempotent` deletes the
 * record of the run in progress when it turns a duplicate away (its onError runs for its own
 * before; aws-powertools/powertools-lambda-typescript#5675, fixed after 2.35.0), so the next
 * duplicate runs; and it runs a handler that returns nothing again on every duplicate (#2987).
 *
 * It dedupes deliveries of one event: a second delivery while the first is in progress fails
 * with IdempotencyAlreadyInProgressError (so an asynchronous invoker retries it later), one
 * after it completed gets the stored result. It does not keep two different ticks from
 * running at once, and has no fencing token. A crashed run's record stays in progress until the
 * crashed invocation's deadline (`getRemainingTimeInMillis()` when it started), by the
 * retrying invocation's clock.
 */
import { randomUUID } from 'node:crypto'
import {
  IdempotencyAlreadyInProgressError,
  IdempotencyConfig,
  makeIdempotent,
} from '@aws-lambda-powertools/idempotency'
import { DynamoDBPersistenceLayer } from '@aws-lambda-powertools/idempotency/dynamodb'
import type { Context } from 'aws-lambda'
import type { SingletonScheduleEvent } from 'lambda-singleton'
import { countRequests } from '../../test/support/requests.js'
import type { DynamoDBEngine } from '../engines.js'
import { DYNAMODB_PRICES } from '../prices.js'
import { type Container, type Contender, type Invocation, Outcome } from './contender.js'
import { countDynamoDBUnits } from './units.js'

export const POWERTOOLS_PARTITION_KEY = 'id'

export function powertoolsIdempotency(engine: DynamoDBEngine, tableName: string): Contender {
  return {
    name: 'Powertools idempotency',
    engine: 'DynamoDB',
    pricePerMillion: DYNAMODB_PRICES,
    container: () => {
      const client = engine.client()
      const persistenceStore = new DynamoDBPersistenceLayer({ tableName, awsSdkV3Client: client })
      return powertoolsContainer(persistenceStore, countRequests(client), countDynamoDBUnits(client), () =>
        client.destroy(),
      )
    },
    close: async () => {},
  }
}

function powertoolsContainer(
  persistenceStore: DynamoDBPersistenceLayer,
  requests: Container['requests'],
  units: Container['units'],
  close: () => void,
): Container {
  const config = new IdempotencyConfig({})
  let job: () => Promise<unknown> = async () => undefined
  // One handler per job name, as each function has its own (the key prefix is the function name).
  const handlers = new Map<string, (event: SingletonScheduleEvent, context: Context) => Promise<unknown>>()
  const handlerFor = (name: string) => {
    const made =
      handlers.get(name) ??
      makeIdempotent(async (_event: SingletonScheduleEvent, _context: Context) => job(), {
        persistenceStore,
        config,
        keyPrefix: name,
      })
    handlers.set(name, made)
    return made
  }
  return {
    requests,
    units,
    close,
    async invoke(invocation: Invocation): Promise<Outcome> {
      let ran = false
      job = () => {
        ran = true
        return invocation.work()
      }
      const deadline = Date.now() + invocation.remainingMs
      const context = {
        functionName: invocation.job,
        awsRequestId: randomUUID(),
        getRemainingTimeInMillis: () => deadline - Date.now(),
      } as Context
      try {
        await handlerFor(invocation.job)(invocation.event, context)
      } catch (error) {
        if (error instanceof IdempotencyAlreadyInProgressError) return Outcome.FailedInProgress
        throw error
      }
      return ran ? Outcome.Ran : Outcome.Replayed
    },
  }
}
