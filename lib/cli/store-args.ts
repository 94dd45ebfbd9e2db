import { keyAttributeClash } from '../dynamodb/key-attributes.js'
import { EtagQuoting } from '../s3/etag.js'
import { seconds, textOf, type Values } from './arg-values.js'
import type { CommandName } from './commands-spec.js'
import { UsageError } from './exit-codes.js'
import type { StoreTarget } from './store.js'

// The store takes any positive timeout; 1 ms is kept so that a timeout can be forced on purpose.
const REQUEST_TIMEOUT_RANGE_S = { min: 0.001, max: 3_600 } as const

/** The store options: one store, and only the options that store has. */
export function targetOf(command: CommandName, values: Values): StoreTarget {
  const text = textOf(values)
  const bucket = text('bucket')
  const table = text('table')
  if (!bucket === !table)
    throw new UsageError('give one of --bucket (an S3 bucket) or --table (a DynamoDB table)', command)
  for (const option of ['partition-key', 'sort-key'] as const) {
    if (bucket && values[option] !== undefined)
      throw new UsageError(`--${option} names a DynamoDB attribute: it goes with --table`, command)
  }
  if (table && values['etag-quoting'] !== undefined)
    throw new UsageError('--etag-quoting is how S3 etags are sent: it goes with --bucket', command)
  const partitionKey = text('partition-key')
  const sortKey = sortKeyOf(text('sort-key'), partitionKey ?? 'pk', command)
  refuseClash('--partition-key', partitionKey, command)
  refuseClash('--sort-key', sortKey?.name, command)
  const timeout = text('request-timeout')
  const quoting = text('etag-quoting')
  return {
    bucket,
    table,
    partitionKey,
    ...(sortKey && { sortKey }),
    endpoint: text('endpoint'),
    ...(timeout !== undefined && {
      requestTimeoutMs: seconds('--request-timeout', timeout, REQUEST_TIMEOUT_RANGE_S, command),
    }),
    ...(quoting !== undefined && { etagQuoting: etagQuotingOf(quoting, command) }),
  }
}

function etagQuotingOf(text: string, command: CommandName): EtagQuoting {
  const values: readonly string[] = Object.values(EtagQuoting)
  if (!values.includes(text)) {
    const listed = `${values.slice(0, -1).join(', ')} or ${values.at(-1)}`
    throw new UsageError(`--etag-quoting takes ${listed}, got "${text}"`, command)
  }
  return text as EtagQuoting
}

/** `--sort-key NAME=VALUE`: the name ends at the first "=", so a value may hold more. */
function sortKeyOf(
  text: string | undefined,
  partitionKey: string,
  command: CommandName,
): { name: string; value: string } | undefined {
  if (text === undefined) return undefined
  const at = text.indexOf('=')
  if (at <= 0) throw new UsageError(`--sort-key takes NAME=VALUE, got "${text}"`, command)
  const name = text.slice(0, at)
  if (name === partitionKey)
    throw new UsageError(`--sort-key needs an attribute other than the partition key, got "${name}"`, command)
  return { name, value: text.slice(at + 1) }
}

/** A key attribute named like a record field fails every write: say so before the first. */
function refuseClash(option: string, name: string | undefined, command: CommandName): void {
  const clash = name === undefined ? undefined : keyAttributeClash(name)
  if (clash) throw new UsageError(`${option} cannot be "${name}": ${clash}`, command)
}
