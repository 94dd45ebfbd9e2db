import { randomUUID } from 'node:crypto'
import type { AttributeValue } from '@aws-sdk/client-dynamodb'
import type { TakeRequest } from '../core/store.js'
import type { Attributes } from './attributes.js'
import { BODY_ATTRIBUTE, VERSION_ATTRIBUTE } from './item.js'

/** The record format version a take writes over (`RECORD_VERSION`): a paused or newer record is read first. */
const TAKEN_RECORD_VERSION = 1
/** A run this high wraps to 1 (`nextRun`), which an update cannot do: such a record is read first. */
const RUN_CEILING = Number.MAX_SAFE_INTEGER

/** The parts of an UpdateItem that take a released lock (`LockStore.take`). */
export interface TakeUpdate {
  readonly ConditionExpression: string
  readonly UpdateExpression: string
  readonly ExpressionAttributeNames: Record<string, string>
  readonly ExpressionAttributeValues: Record<string, AttributeValue>
}

/**
 * The UpdateItem of `LockStore.take`: over a record of version 1, released (`expires_at` 0),
 * not paused, whose `token` is a number below `tokenBelow` and whose `run`, when there is one, a
 * number below `RUN_CEILING` (a failed condition answers with the item: the lock then goes on
 * from that read, and says what is wrong with it). Sets the lease, raises token and run, removes
 * `running` (its token would be the old one) and the item's text (`lock_body`, which no longer
 * describes it: readers then go by its attributes), and gives the item a new version. Numbers go
 * out as DynamoDB stores them (`storedNumber`), so that the item `takenItem` computes is the one
 * a read finds on any engine (DynamoDB Local stores an UpdateItem's values as spelled).
 */
export function takeUpdate(partitionKey: string, take: TakeRequest): TakeUpdate {
  const number = (value: number): AttributeValue => ({ N: storedNumber(value) })
  return {
    ConditionExpression: [
      'attribute_exists(#key)',
      '#v = :v',
      '#expires_at = :zero',
      'attribute_not_exists(#paused)',
      'attribute_type(#token, :number)',
      '#token < :token_below',
      '(attribute_not_exists(#run) OR (attribute_type(#run, :number) AND #run < :run_ceiling))',
    ].join(' AND '),
    UpdateExpression:
      'SET #owner = :owner, #expires_at = :expires_at, #acquired_at = :acquired_at, #ttl_ms = :ttl_ms, ' +
      '#token = #token + :one, #run = if_not_exists(#run, :zero) + :one, #version = :version ' +
      'REMOVE #running, #body',
    ExpressionAttributeNames: {
      '#key': partitionKey,
      '#v': 'v',
      '#expires_at': 'expires_at',
      '#paused': 'paused',
      '#token': 'token',
      '#run': 'run',
      '#owner': 'owner',
      '#acquired_at': 'acquired_at',
      '#ttl_ms': 'ttl_ms',
      '#running': 'running',
      '#version': VERSION_ATTRIBUTE,
      '#body': BODY_ATTRIBUTE,
    },
    ExpressionAttributeValues: {
      ':v': number(TAKEN_RECORD_VERSION),
      ':zero': number(0),
      ':one': number(1),
      ':number': { S: 'N' },
      ':token_below': number(take.tokenBelow),
      ':run_ceiling': number(RUN_CEILING),
      ':owner': { S: take.owner },
      ':expires_at': number(take.expires_at),
      ':acquired_at': number(take.acquired_at),
      ':ttl_ms': number(take.ttl_ms),
      ':version': { S: randomUUID() },
    },
  }
}

/**
 * The item `update` writes over `old` (which met its condition), computed as the update
 * expression computes it: what DynamoDB answers with `ReturnValues: 'ALL_OLD'`, made into what
 * `ALL_NEW` would have answered, so that one answer gives both records.
 */
export function takenItem(old: Attributes, update: TakeUpdate): Attributes {
  const values = update.ExpressionAttributeValues
  const token = old.token?.N
  if (token === undefined) throw new Error('the item taken has no number token')
  const { running: _running, [BODY_ATTRIBUTE]: _body, ...kept } = old
  return {
    ...kept,
    owner: value(values, ':owner'),
    expires_at: value(values, ':expires_at'),
    acquired_at: value(values, ':acquired_at'),
    ttl_ms: value(values, ':ttl_ms'),
    token: { N: plusOne(token) },
    run: { N: plusOne(old.run?.N ?? '0') },
    [VERSION_ATTRIBUTE]: value(values, ':version'),
  }
}

function value(values: Record<string, AttributeValue>, name: string): AttributeValue {
  const given = values[name]
  if (given === undefined) throw new Error(`the update sets no ${name}`)
  return given
}

/**
 * A number as DynamoDB stores and answers it: plain digits (no exponent), no trailing zeros after
 * the point, no negative zero (`1e21` is `1000000000000000000000`, `1.50` is `1.5`). Not finite:
 * as JavaScript spells it, for DynamoDB to refuse.
 */
export function storedNumber(value: number): string {
  const text = String(value)
  // JavaScript spells a number without trailing zeros after its point and without a negative
  // zero: only an exponent (from 1e21, below 1e-6) needs rewriting. Not finite: as it spells it.
  if (!Number.isFinite(value) || !text.includes('e')) return text
  let { unscaled, scale } = decimalOf(text)
  while (scale > 0 && unscaled % 10n === 0n) {
    unscaled /= 10n
    scale--
  }
  return plainText({ unscaled, scale })
}

/**
 * `text` + 1 as DynamoDB's arithmetic gives it: exact, the sum's scale that of `text` (or 0),
 * written plain. Of a stored (normalized) number, the sum is normalized too; of a spelling
 * DynamoDB Local keeps (`5.50`, set by an UpdateItem), the sum is what Local answers (`6.50`).
 */
export function plusOne(text: string): string {
  // A whole number spelled as JavaScript spells it, whose sum is still exact in a double (every
  // token and run): JavaScript's own sum, without a BigInt or a pattern on a cold start's path.
  const number = Number(text)
  if (Number.isSafeInteger(number + 1) && String(number) === text) return String(number + 1)
  const { unscaled, scale } = decimalOf(text)
  const sumScale = Math.max(scale, 0)
  return plainText({
    unscaled: unscaled * 10n ** BigInt(sumScale - scale) + 10n ** BigInt(sumScale),
    scale: sumScale,
  })
}

/** A decimal number as `unscaled` × 10^-`scale`, exactly (Java's BigDecimal, which DynamoDB uses). */
interface Decimal {
  readonly unscaled: bigint
  readonly scale: number
}

function decimalOf(text: string): Decimal {
  const match = /^([+-]?)(\d*)(?:\.(\d*))?(?:[eE]([+-]?\d+))?$/.exec(text)
  const [, sign = '', whole = '', fraction = '', exponent = '0'] = match ?? []
  if (!match || whole + fraction === '') throw new Error(`${text} is not a DynamoDB number`)
  return {
    unscaled: BigInt(`${sign === '-' ? '-' : ''}${whole}${fraction}`),
    scale: fraction.length - Number(exponent),
  }
}

/** The number's digits without an exponent (BigDecimal's `toPlainString`). */
function plainText({ unscaled, scale }: Decimal): string {
  if (scale <= 0) return (unscaled * 10n ** BigInt(-scale)).toString()
  const sign = unscaled < 0n ? '-' : ''
  const digits = (unscaled < 0n ? -unscaled : unscaled).toString().padStart(scale + 1, '0')
  return `${sign}${digits.slice(0, -scale)}.${digits.slice(-scale)}`
}
