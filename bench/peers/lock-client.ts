/**
 * dynamodb-lock-client (npm), configured as its README recommends for locks that must free
 * themselves after a crash: a "fail open" client on the AWS SDK v2 DocumentClient, with
 * heartbeats at a third of the lease. `retryCount: 0`, so that a held lock means one wait and a
 * skip rather than two waits (its default is 1).
 *
 * How it decides (index.js): acquire reads the item; when there is one, it waits the item's
 * `leaseDurationMs` (a released item says 1 ms) and then writes on condition that the item's
 * `guid` has not changed, i.e. that the holder sent no heartbeat meanwhile. It gives a fencing
 * token (+1 per acquisition, kept by heartbeats and release), no per-tick dedupe, and nothing to
 * fence writes with; a heartbeat that fails emits `error` and the work is not stopped.
 */
import { Agent } from 'node:http'
import { promisify } from 'node:util'
import DynamoDB from 'aws-sdk/clients/dynamodb.js'
import type { AWSError, Request } from 'aws-sdk/lib/core.js'
import { FailOpen, type Lock } from 'dynamodb-lock-client'
import type { DynamoDBEngine } from '../engines.js'
import { region } from '../engines.js'
import { DYNAMODB_PRICES } from '../prices.js'
import { type Container, type Contender, type Invocation, Outcome, type RequestCounter } from './contender.js'

export const LOCK_CLIENT_PARTITION_KEY = 'id'

/** The operation name a v2 request carries (set by its constructor, not in the typings). */
type Named = { readonly operation: string }

/** Counts what a v2 client sends, by operation, each attempt (there are no retries) counted. */
function countV2Requests(client: DynamoDB.DocumentClient): RequestCounter {
  const byOperation = new Map<string, number>()
  // The DocumentClient keeps its own copy of the service object it was configured with; v2's
  // typings leave out both that and the service's (public) customizeRequests.
  const { service } = client as unknown as {
    service: { customizeRequests(callback: (request: Request<unknown, AWSError> & Named) => void): void }
  }
  service.customizeRequests((request) => {
    request.on('send', () => {
      const name = request.operation.replace(/^./, (c: string) => c.toUpperCase()) // putItem -> PutItem
      byOperation.set(name, (byOperation.get(name) ?? 0) + 1)
    })
  })
  return { byOperation, reset: () => byOperation.clear() }
}

export function lockClient(engine: DynamoDBEngine, tableName: string, leaseMs: number): Contender {
  return {
    name: 'dynamodb-lock-client',
    engine: 'DynamoDB',
    pricePerMillion: DYNAMODB_PRICES,
    container: () => {
      // Connections kept alive, as the v3 clients do by default (AWS_NODEJS_CONNECTION_REUSE_ENABLED).
      const httpOptions = { agent: new Agent({ keepAlive: true }) }
      const dynamodb = new DynamoDB.DocumentClient({
        endpoint: engine.endpoint,
        region,
        maxRetries: 0,
        httpOptions,
      })
      const requests = countV2Requests(dynamodb)
      const options = {
        dynamodb,
        lockTable: tableName,
        partitionKey: LOCK_CLIENT_PARTITION_KEY,
        retryCount: 0,
      }
      const client = new FailOpen({
        ...options,
        leaseDurationMs: leaseMs,
        heartbeatPeriodMs: Math.floor(leaseMs / 3),
      })
      // A crashed holder sends no heartbeat: one without them stands for it.
      const silent = new FailOpen({ ...options, leaseDurationMs: leaseMs })
      return lockClientContainer(client, silent, requests, leaseMs)
    },
    close: async () => {},
  }
}

function lockClientContainer(
  client: FailOpen,
  silent: FailOpen,
  requests: RequestCounter,
  leaseMs: number,
): Container {
  const acquire = (from: FailOpen, id: string) =>
    new Promise<Lock | undefined>((resolve, reject) =>
      from.acquireLock(id, (error, lock) => {
        if (error?.code === 'FailedToAcquireLock') resolve(undefined)
        else if (error) reject(error)
        else resolve(lock)
      }),
    )
  return {
    requests,
    close: () => {},
    async invoke(invocation: Invocation): Promise<Outcome> {
      const startedAt = Date.now()
      const lock = await acquire(invocation.crashes ? silent : client, invocation.job)
      // It answers FailedToAcquireLock both after waiting out a live holder's lease and at once
      // for a lost race.
      if (!lock) return Date.now() - startedAt >= leaseMs * 0.9 ? Outcome.GaveUp : Outcome.SkippedHeld
      lock.on('error', () => {}) // a failed heartbeat: the library's only signal of a lost lease
      try {
        await invocation.work()
      } finally {
        await promisify(lock.release.bind(lock))()
      }
      return Outcome.Ran
    },
  }
}
