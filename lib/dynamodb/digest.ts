import { hash } from 'node:crypto'
import type { AttributeValue } from '@aws-sdk/client-dynamodb'
import type { Attributes } from './attributes.js'

/**
 * A digest of an item's attributes, the same whatever order DynamoDB lists them (or a set's
 * members) in: two reads give one digest exactly when the items are equal.
 */
export function digestItem(attributes: Attributes): string {
  // The one-shot hash (here and in digestRead), not createHash: a new process's first
  // createHash('sha256') takes about twice as long (0.9 against 0.5 ms here), and a cold take's
  // digest of the item it wrote is the first hash of its process.
  return hash('sha256', JSON.stringify(canonicalMap(attributes)), 'base64url').slice(0, 32)
}

/**
 * A digest of an item JSON can express, from what it reads as: `body`, its fields as `readItem`
 * orders them (JSON that says every field's type and digits, whatever order DynamoDB listed them
 * in), and `own`, the store's attributes beside them (version, text). Two such items give one
 * digest exactly when they are equal, as `digestItem` does, without a second walk of the item.
 */
export function digestRead(body: string, own: readonly (AttributeValue | undefined)[]): string {
  const attributes = own.map((value) => (value === undefined ? null : canonical(value)))
  return hash('sha256', JSON.stringify([attributes, body]), 'base64url').slice(0, 32)
}

type Canonical = string | boolean | null | Canonical[]

function canonicalMap(map: Attributes): Canonical[] {
  return Object.keys(map)
    .sort()
    .map((name) => [name, canonical(map[name] as AttributeValue)])
}

function canonical(value: AttributeValue): Canonical {
  if (value.S !== undefined) return ['S', value.S]
  // DynamoDB normalises numbers on write, so equal numbers have equal text.
  if (value.N !== undefined) return ['N', value.N]
  if (value.BOOL !== undefined) return ['BOOL', value.BOOL]
  if (value.NULL !== undefined) return ['NULL', value.NULL]
  if (value.B !== undefined) return ['B', Buffer.from(value.B).toString('base64')]
  if (value.SS !== undefined) return ['SS', ...[...value.SS].sort()]
  if (value.NS !== undefined) return ['NS', ...[...value.NS].sort()]
  if (value.BS !== undefined) return ['BS', ...value.BS.map((b) => Buffer.from(b).toString('base64')).sort()]
  if (value.M !== undefined) return ['M', ...canonicalMap(value.M)]
  if (value.L !== undefined) return ['L', ...value.L.map(canonical)]
  return ['?', JSON.stringify(value)]
}
