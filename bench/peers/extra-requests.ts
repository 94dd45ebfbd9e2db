/**
 * Tells lambda-singleton's protocol requests from any others it sends (clock probes, say), on
 * the wire, without knowing how the others are made, so that a change to the library that adds
 * requests shows up in the counts and the prices.
 *
 * The protocol of an uncontended run that takes the lock is its conditional writes, and a read
 * of the lock object when the process does not know it (a new container, or someone else wrote
 * since). Only for invocations that take the lock (a skip writes nothing, and its read would be
 * called extra). So, per
 * container, this remembers the last version of each key it saw on the wire (the etag or item
 * version a read returned or a write made, or "absent"), and counts as extra, at the end of each
 * invocation:
 *   - a read of a key the invocation never wrote (not the lock object);
 *   - a read that returned what the container already knew of that key (it told the protocol
 *     nothing, whatever else it was for: the `Date` of its answer, say);
 *   - any request that is neither a read nor a write of an object or item.
 * Every write is the protocol's. A read that fails is counted as the protocol's. When a probe
 * and the protocol's read both return something new (a probe sent first in a new container),
 * which of the two is called extra may be the wrong one; the counts are right either way.
 */
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb'
import type { S3Client } from '@aws-sdk/client-s3'
import { VERSION_ATTRIBUTE } from '../../lib/dynamodb/item.js'
import type { RequestCounter } from './contender.js'

const READS = new Set(['GetObject', 'HeadObject', 'GetItem'])
const WRITES = new Set(['PutObject', 'DeleteObject', 'PutItem', 'UpdateItem', 'DeleteItem'])
const ABSENT = 'absent'

interface Sent {
  readonly operation: string
  readonly key: string | undefined
  readonly kind: 'read' | 'write' | 'other'
  /** For a read: whether its answer told this container something it did not know. */
  readonly novel: boolean
}

/** How a service's requests name their key and the version of what they read or wrote. */
interface Dialect {
  keyOf(input: Record<string, unknown>): string | undefined
  /** What a read found (ABSENT when nothing), or undefined when it failed otherwise. */
  readVersion(output: Record<string, unknown> | undefined, error: unknown): string | undefined
  /** What a write left (undefined: not known). */
  writtenVersion(
    input: Record<string, unknown>,
    output: Record<string, unknown> | undefined,
    error: unknown,
  ): string | undefined
}

const status = (error: unknown) =>
  (error as { $metadata?: { httpStatusCode?: number } } | undefined)?.$metadata?.httpStatusCode
const bare = (etag: unknown) => (typeof etag === 'string' ? etag.replace(/^"(.*)"$/, '$1') : undefined)

const s3Dialect: Dialect = {
  keyOf: (input) => (typeof input.Key === 'string' ? input.Key : undefined),
  readVersion: (output, error) => (error ? (status(error) === 404 ? ABSENT : undefined) : bare(output?.ETag)),
  writtenVersion: (_input, output, error) => (error ? undefined : bare(output?.ETag)),
}

type Item = Record<string, { S?: string } | undefined>
const versionOf = (item: Item) => item[VERSION_ATTRIBUTE]?.S ?? JSON.stringify(item)

/** The version an UpdateItem sets (`SET lock_version = :version`), if it names one. */
function updatedVersion(input: Record<string, unknown>): string | undefined {
  const values = input.ExpressionAttributeValues as Item | undefined
  return values?.[':version']?.S
}

function dynamodbDialect(partitionKey: string): Dialect {
  return {
    keyOf: (input) => ((input.Key ?? input.Item) as Item | undefined)?.[partitionKey]?.S,
    readVersion: (output, error) => {
      if (error) return undefined
      const item = output?.Item as Item | undefined
      return item ? versionOf(item) : ABSENT
    },
    writtenVersion: (input, _output, error) => {
      // An UpdateItem (the take) names the version it sets among its values.
      if (!error) return input.Item ? versionOf(input.Item as Item) : updatedVersion(input)
      // A failed condition answers with the item it found (ReturnValuesOnConditionCheckFailure).
      const found = (error as { Item?: Item }).Item
      return found ? versionOf(found) : undefined
    },
  }
}

/** Extra requests a container's S3 client sends, by operation (see the top of this file). */
export function extraS3Requests(client: S3Client): RequestCounter {
  return classify(client, s3Dialect)
}

/** The same for a DynamoDB client on a table whose partition key is `partitionKey`. */
export function extraDynamoDBRequests(client: DynamoDBClient, partitionKey: string): RequestCounter {
  return classify(client, dynamodbDialect(partitionKey))
}

function classify(client: S3Client | DynamoDBClient, dialect: Dialect): RequestCounter {
  /** The last version of each key seen on the wire, for as long as the container lives. */
  const known = new Map<string, string>()
  /** What the current invocation sent (since the last reset), classified. */
  let sent: Sent[] = []
  /**
   * Requests as they went, classified only when the counts are read: in a new process the
   * classifying code would be compiled inside the invocation, which the bench times, and no
   * other peer carries a counter of its kind.
   */
  let pending: Wire[] = []
  ;(client.middlewareStack as S3Client['middlewareStack']).add(
    (next, context) => async (args) => {
      const wire: Wire = {
        commandName: context.commandName,
        input: args.input,
        output: undefined,
        error: undefined,
      }
      try {
        const result = await next(args)
        wire.output = result.output
        return result
      } catch (thrown) {
        wire.error = thrown
        throw thrown
      } finally {
        pending.push(wire) // in the order answers came, as what each read found is judged
      }
    },
    { step: 'initialize', name: 'classifyExtraRequests' },
  )
  const settle = () => {
    for (const wire of pending) sent.push(classified(wire, dialect, known))
    pending = []
  }
  return {
    get byOperation() {
      settle()
      const written = new Set(sent.filter((s) => s.kind === 'write').map((s) => s.key))
      const extra = new Map<string, number>()
      for (const s of sent) {
        const protocol = s.kind === 'write' || (s.kind === 'read' && s.novel && written.has(s.key))
        if (!protocol) extra.set(s.operation, (extra.get(s.operation) ?? 0) + 1)
      }
      return extra
    },
    reset: () => {
      settle()
      sent = []
    },
  }
}

/** A request as the middleware saw it go and come back (or fail). */
interface Wire {
  readonly commandName: unknown
  readonly input: unknown
  output: unknown
  error: unknown
}

/** What `wire` was, and what it taught of its key (`known`, updated in the order the answers came). */
function classified(wire: Wire, dialect: Dialect, known: Map<string, string>): Sent {
  const operation = String(wire.commandName ?? 'unknown').replace(/Command$/, '')
  const input = (wire.input ?? {}) as Record<string, unknown>
  const output = wire.output as Record<string, unknown> | undefined
  const { error } = wire
  const key = dialect.keyOf(input)
  const kind = READS.has(operation) ? 'read' : WRITES.has(operation) ? 'write' : 'other'
  let novel = true
  if (key !== undefined && kind === 'read') {
    const version = dialect.readVersion(output, error)
    novel = version === undefined || version !== known.get(key)
    if (version !== undefined) known.set(key, version)
  } else if (key !== undefined && kind === 'write') {
    const version = dialect.writtenVersion(input, output, error)
    if (version === undefined) known.delete(key)
    else known.set(key, version)
  }
  return { operation, key, kind, novel }
}
