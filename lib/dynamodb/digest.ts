import { createHash } from 'node:crypto'
import type { AttributeValue } from '@aws-sdk/client-dynamodb'
import type { Attributes } from './attributes.js'

/**
 * A digest of an item's attributes, the same whatever order DynamoDB lists them (or a set's
 * members) in: two reads give one digest exactly when the items are equal.
 */
export function digestItem(attributes: Attributes): string {
  return createHash('sha256')
    .update(JSON.stringify(canonicalMap(attributes)))
    .digest('base64url')
    .slice(0, 32)
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
