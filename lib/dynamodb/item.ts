import { randomUUID } from 'node:crypto'
import type { AttributeValue } from '@aws-sdk/client-dynamodb'
import { namesInOrder, RECORD_FIELDS, recordJson } from '../core/record.js'
import {
  type Attributes,
  parseExact,
  plainAttributes,
  sameObject,
  toAttributes,
  toJson,
  typeName,
  UnrepresentableError,
} from './attributes.js'
import { digestItem, digestRead } from './digest.js'

/** Attribute names the store keeps for itself next to the record's fields. */
export const VERSION_ATTRIBUTE = 'lock_version'
export const BODY_ATTRIBUTE = 'lock_body'

/** Prefix of etags derived from an item's content rather than from its version attribute. */
const DIGEST_ETAG_PREFIX = 'item:'

/** How a lock record maps onto an item of one table. */
export interface ItemLayout {
  readonly partitionKey: string
  readonly sortKey?: { readonly name: string; readonly value: string }
}

/** An item as read: the body the core sees and the etag that names exactly this content. */
export interface ReadItem {
  readonly body: string
  readonly etag: string
  /** Set when the item does not read as JSON (a set, a binary value): `body` is then not JSON. */
  readonly unrepresentable?: true
}

export function keyOf(layout: ItemLayout, key: string): Attributes {
  return {
    [layout.partitionKey]: { S: key },
    ...(layout.sortKey && { [layout.sortKey.name]: { S: layout.sortKey.value } }),
  }
}

function reserved(layout: ItemLayout): Set<string> {
  const names = [layout.partitionKey, VERSION_ATTRIBUTE, BODY_ATTRIBUTE]
  if (layout.sortKey) names.push(layout.sortKey.name)
  return new Set(names)
}

/**
 * The item to write for `body`: the record's fields as native attributes (readable and
 * queryable in the console) and a fresh version. DynamoDB keeps neither the order of fields nor
 * the spelling of numbers, and the core recognises a write of its own by reading back the very
 * bytes it wrote: so the body's text is kept beside them (`lock_body`) unless the body is a
 * record in the core's one spelling (`recordFields`), which its attributes read back as
 * (`readItem`). Without it the item is half the size, in write units and on the wire, and its
 * etag is a digest, as `readItem` names it.
 * Throws `UnrepresentableError` when the body cannot be stored as it is.
 */
export function itemFor(layout: ItemLayout, key: string, body: string): { item: Attributes; etag: string } {
  const plain = recordFields(body)
  const fields = plain ?? toAttributes(body)
  const taken = reserved(layout)
  for (const name of Object.keys(fields)) {
    if (taken.has(name)) throw new UnrepresentableError(`the field "${name}" is an attribute the store uses`)
  }
  const version: AttributeValue = { S: randomUUID() }
  const item = { ...fields, ...keyOf(layout, key), [VERSION_ATTRIBUTE]: version }
  if (plain) return { item, etag: `${DIGEST_ETAG_PREFIX}${digestRead(body, [version, undefined])}` }
  return { item: { ...item, [BODY_ATTRIBUTE]: { S: body } }, etag: version.S as string }
}

/**
 * The attributes of `body` when it is a record in the core's one spelling (`recordJson`), which
 * `readItem` reads back from them byte for byte: its fields in that order, every map's by name,
 * numbers as JavaScript spells them without an exponent (as DynamoDB answers them: it drops
 * trailing zeros and a negative zero's sign, and writes plain digits). Undefined for any other.
 */
function recordFields(body: string): Attributes | undefined {
  let parsed: unknown
  try {
    parsed = JSON.parse(body)
  } catch {
    return undefined
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) return undefined
  const object = parsed as Record<string, unknown>
  return recordJson(object) === body ? plainAttributes(object) : undefined
}

/**
 * What the core sees of an item. An item with a text that describes its fields (`lock_body`,
 * kept by `itemFor` for a body its fields would not spell back) reads as that text, named by its
 * version. Any other (a record the core wrote, which needs no text; one taken by an UpdateItem,
 * which removes it; one written or edited by someone else, so that its fields and its text
 * disagree) is read from its attributes and named by a digest of all of them, its version
 * included: every write of this store and every outside change shows as a new etag.
 * Its body lists the record's own fields in `RECORD_FIELDS` order, then the others, and every
 * map's, by name: DynamoDB lists an item's attributes in an order of its own, which a write that
 * adds or removes one can change (DynamoDB Local's does), and one item must give one body.
 * An item JSON cannot express, or whose version or text is not a string, comes back as a body
 * that is not JSON, which the core refuses without writing.
 */
export function readItem(layout: ItemLayout, item: Attributes): ReadItem {
  const taken = reserved(layout)
  const fields = Object.fromEntries(Object.entries(item).filter(([name]) => !taken.has(name)))
  const version = item[VERSION_ATTRIBUTE]?.S
  const text = item[BODY_ATTRIBUTE]?.S
  if (version !== undefined && text !== undefined && describes(text, fields))
    return { body: text, etag: version }
  try {
    refuseForeignOwn(item)
    const body = toJson(inOrder(fields, RECORD_FIELDS))
    const own = [item[VERSION_ATTRIBUTE], item[BODY_ATTRIBUTE]]
    return { body, etag: `${DIGEST_ETAG_PREFIX}${digestRead(body, own)}` }
  } catch (error) {
    if (!(error instanceof UnrepresentableError)) throw error
    const etag = `${DIGEST_ETAG_PREFIX}${digestItem(withoutKey(layout, item))}`
    return { body: unrepresentable(fields, error), etag, unrepresentable: true }
  }
}

/**
 * The store's own attributes, its version and its text, are strings wherever it wrote them: of
 * another type (an outsider's edit), the item is no lock's, as one JSON cannot hold is. Read
 * from its other attributes, it would be taken and its foreign attribute dropped without a word.
 */
function refuseForeignOwn(item: Attributes): void {
  for (const name of [VERSION_ATTRIBUTE, BODY_ATTRIBUTE]) {
    const value = item[name]
    if (value !== undefined && value.S === undefined)
      throw new UnrepresentableError(
        `${name}, an attribute of the store, is ${typeName(value)}, not the string (S) it writes`,
      )
  }
}

/** The item's attributes without its key, which every condition may take as given. */
export function withoutKey(layout: ItemLayout, item: Attributes): Attributes {
  return Object.fromEntries(
    Object.entries(item).filter(([name]) => name !== layout.partitionKey && name !== layout.sortKey?.name),
  )
}

/** `map` with its attributes in one order: `first` (those present), then the others by name; maps within by name. */
function inOrder(map: Attributes, first: readonly string[] = []): Attributes {
  const names = namesInOrder(map, first)
  // fromEntries, not assignment: an attribute named "__proto__" must stay an attribute.
  return Object.fromEntries(names.map((name) => [name, valueInOrder(map[name] as AttributeValue)]))
}

function valueInOrder(value: AttributeValue): AttributeValue {
  if (value.M !== undefined) return { M: inOrder(value.M) }
  if (value.L !== undefined) return { L: value.L.map(valueInOrder) }
  return value
}

function describes(text: string, fields: Attributes): boolean {
  try {
    return sameObject(parseExact(text), fields)
  } catch {
    return false
  }
}

/** A body for the operator that `parseRecord` refuses (it is not JSON). */
function unrepresentable(fields: Attributes, error: UnrepresentableError): string {
  const types = Object.entries(fields)
    .map(([name, value]: [string, AttributeValue]) => `${name}: ${typeName(value)}`)
    .join(', ')
  return `DynamoDB item no lock reads (${error.message}); attributes: ${types}`
}
