import type { DynamoDBClient } from '@aws-sdk/client-dynamodb'
import type { S3Client } from '@aws-sdk/client-s3'

export interface RequestCount {
  /** Requests by operation name (`GetObject`, `PutItem`…). */
  readonly byOperation: Map<string, number>
  total(): number
  /** Writes of any kind (`Put…`, `Update…`, `Delete…`). */
  writes(): number
  /**
   * Requests the engine failed to answer with a decision: 5xx, throttling, conflicts, lost
   * connections (a 4xx that decides, like a failed condition, is not one). Each may cost a read
   * to settle it and a retry.
   */
  failures(): number
  /**
   * Clock probes a lock sent while it waited for its token (see lib/core/clock-probe.ts): S3
   * HEADs, DynamoDB GetItems of the key alone. Not the protocol's requests, and counted apart.
   */
  clockProbes(): number
  /** Requests by operation, clock probes left out: what the protocol itself sent. */
  protocol(): Record<string, number>
  reset(): void
}

/** Counts the HTTP requests an AWS SDK client sends (each SDK attempt counts), by operation. */
export function countRequests(client: S3Client | DynamoDBClient): RequestCount {
  const byOperation = new Map<string, number>()
  let failures = 0
  let probes = 0
  // The two clients' stacks differ only in their type parameters.
  ;(client.middlewareStack as S3Client['middlewareStack']).add(
    (next, context) => async (args) => {
      const name = String(context.commandName ?? 'unknown').replace(/Command$/, '')
      byOperation.set(name, (byOperation.get(name) ?? 0) + 1)
      const input = args.input as { ProjectionExpression?: string }
      if (name === 'HeadObject' || (name === 'GetItem' && input.ProjectionExpression)) probes++
      try {
        return await next(args)
      } catch (error) {
        const status = (error as { $metadata?: { httpStatusCode?: number } }).$metadata?.httpStatusCode
        // A conflict (S3 409, DynamoDB TransactionConflictException) decides nothing either.
        const conflict = status === 409 || /Conflict/.test((error as Error).name)
        if (status === undefined || status >= 500 || status === 429 || conflict) failures++
        throw error
      }
    },
    { step: 'deserialize', priority: 'low', name: 'countRequests' },
  )
  const sum = (names: string[]) => names.reduce((total, name) => total + (byOperation.get(name) ?? 0), 0)
  return {
    byOperation,
    total: () => sum([...byOperation.keys()]),
    writes: () => sum([...byOperation.keys()].filter((name) => /^(Put|Update|Delete)/.test(name))),
    failures: () => failures,
    clockProbes: () => probes,
    protocol: () => {
      const sent = Object.fromEntries(byOperation)
      delete sent.HeadObject
      if (sent.GetItem !== undefined) sent.GetItem -= probes
      if (sent.GetItem === 0) delete sent.GetItem
      return sent
    },
    reset: () => {
      byOperation.clear()
      failures = 0
      probes = 0
    },
  }
}
