import type { AttributeValue } from '@aws-sdk/client-dynamodb'

/** A DynamoDB item or map: attribute name to value. */
export type Attributes = Record<string, AttributeValue>

/** A JSON body that DynamoDB cannot hold as it is; storing it would change it. */
export class UnrepresentableError extends Error {
  override name = 'UnrepresentableError'
}

/** DynamoDB numbers: at most 38 significant digits, magnitudes from 1e-130 to below 1e126. */
const MAX_SIGNIFICANT_DIGITS = 38
const MIN_EXPONENT = -130
const MAX_EXPONENT = 125
/**
 * Levels of maps and lists DynamoDB holds, the item itself being the first: an attribute's value
 * may nest 31 levels (DynamoDB Local refuses 32: "Nesting Levels have exceeded supported limits").
 */
export const MAX_ITEM_DEPTH = 32

const JSON_NUMBER = /^-?(0|[1-9]\d*)(\.\d+)?([eE][+-]?\d+)?$/
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/

/** A number as its JSON source text, so that no digit is lost on the way to DynamoDB. */
class NumberText {
  constructor(readonly text: string) {}
}

/** `JSON.parse` with the reviver's source-text argument (Node >= 21), not yet in TypeScript's lib. */
const parseWithSource = JSON.parse as (
  text: string,
  reviver: (key: string, value: unknown, context?: { source?: string }) => unknown,
) => unknown

/**
 * The attributes for a JSON object body: numbers as N (with their digits as written), strings
 * as S, objects as M, arrays as L. Throws `UnrepresentableError` rather than store anything that
 * would not read back as the same JSON.
 */
export function toAttributes(body: string): Attributes {
  let parsed: unknown
  try {
    parsed = parseExact(body)
  } catch (error) {
    throw new UnrepresentableError('the body is not JSON', { cause: error })
  }
  if (
    typeof parsed !== 'object' ||
    parsed === null ||
    Array.isArray(parsed) ||
    parsed instanceof NumberText
  ) {
    throw new UnrepresentableError('the body is not a JSON object')
  }
  return toMap(parsed as Record<string, unknown>, '', 1)
}

/**
 * The attributes for a parsed JSON object, or undefined where it holds anything `toAttributes`
 * would have to judge (a number JavaScript spells with an exponent, a name or string DynamoDB
 * cannot hold, nesting too deep): for a body known to be JavaScript's own spelling of `object`,
 * whose numbers are then exact as doubles, without a second parse that keeps their digits.
 */
export function plainAttributes(object: Record<string, unknown>): Attributes | undefined {
  try {
    return toMap(object, '', 1)
  } catch (error) {
    if (error instanceof UnrepresentableError) return undefined
    throw error
  }
}

/**
 * Why DynamoDB cannot hold `value` exactly as the attribute `name` (a number outside its range,
 * nesting too deep, an empty map key, a lone surrogate), or undefined when it can.
 */
export function unstorableAttribute(name: string, value: unknown): string | undefined {
  try {
    toAttributes(JSON.stringify({ [name]: value }))
    return undefined
  } catch (error) {
    if (error instanceof UnrepresentableError) return error.message
    throw error
  }
}

function toMap(object: Record<string, unknown>, path: string, depth: number): Attributes {
  // fromEntries, not assignment: a field named "__proto__" must stay a field.
  return Object.fromEntries(
    Object.entries(object).map(([name, value]) => {
      const at = `${path}/${name}`
      if (name.length === 0) throw new UnrepresentableError(`${at}: DynamoDB has no empty attribute names`)
      if (LONE_SURROGATE.test(name)) throw new UnrepresentableError(`${at}: the name is not valid UTF-16`)
      return [name, toValue(value, at, depth)]
    }),
  )
}

function toValue(value: unknown, path: string, depth: number): AttributeValue {
  if (value === null) return { NULL: true }
  if (typeof value === 'boolean') return { BOOL: value }
  if (typeof value === 'string') {
    if (LONE_SURROGATE.test(value)) throw new UnrepresentableError(`${path}: the string is not valid UTF-16`)
    return { S: value }
  }
  if (value instanceof NumberText) return { N: checkNumber(value.text, path) }
  if (typeof value === 'number') {
    // Parsed as a double (`plainAttributes`): without an exponent, its spelling is within
    // DynamoDB's range and digits, and DynamoDB answers it as it is.
    const text = String(value)
    if (!Number.isFinite(value) || text.includes('e'))
      throw new UnrepresentableError(`${path}: ${text} is not spelled as DynamoDB answers it`)
    return { N: text }
  }
  if (depth + 1 > MAX_ITEM_DEPTH)
    throw new UnrepresentableError(
      `${path}: nested deeper than DynamoDB holds (${MAX_ITEM_DEPTH} levels, the item's included)`,
    )
  if (Array.isArray(value)) return { L: value.map((item, i) => toValue(item, `${path}/${i}`, depth + 1)) }
  return { M: toMap(value as Record<string, unknown>, path, depth + 1) }
}

/** The number's text, if DynamoDB can store it exactly. */
function checkNumber(text: string, path: string): string {
  const match = /^-?(\d+)(?:\.(\d+))?(?:[eE]([+-]?\d+))?$/.exec(text)
  if (!match) throw new UnrepresentableError(`${path}: ${text} is not a number DynamoDB knows`)
  const { digits, exponent } = significantOf(match[1] ?? '', match[2] ?? '', match[3] ?? '0')
  if (digits === '') return text
  if (digits.length > MAX_SIGNIFICANT_DIGITS || exponent < MIN_EXPONENT || exponent > MAX_EXPONENT) {
    throw new UnrepresentableError(`${path}: ${text} is outside what a DynamoDB number can hold exactly`)
  }
  return text
}

/**
 * The JSON text of `attributes`, in the order DynamoDB gave them. Throws `UnrepresentableError`
 * for what JSON has no exact form for (binary values and sets).
 */
export function toJson(attributes: Attributes): string {
  return mapJson(attributes, '')
}

function mapJson(map: Attributes, path: string): string {
  const fields = Object.entries(map).map(
    ([name, value]) => `${JSON.stringify(name)}:${valueJson(value, `${path}/${name}`)}`,
  )
  return `{${fields.join(',')}}`
}

function valueJson(value: AttributeValue, path: string): string {
  if (value.S !== undefined) return JSON.stringify(value.S)
  if (value.N !== undefined) return numberJson(value.N, path)
  if (value.BOOL !== undefined) return value.BOOL ? 'true' : 'false'
  if (value.NULL === true) return 'null'
  if (value.M !== undefined) return mapJson(value.M, path)
  if (value.L !== undefined) return `[${value.L.map((item, i) => valueJson(item, `${path}/${i}`)).join(',')}]`
  throw new UnrepresentableError(`${path} is ${typeName(value)}, which JSON cannot hold`)
}

/** DynamoDB's own number text, which is JSON's grammar but for a bare leading or trailing dot. */
function numberJson(text: string, path: string): string {
  // JavaScript's own spelling of a finite number is JSON (a store's numbers mostly are), no pattern needed.
  const number = Number(text)
  if (Number.isFinite(number) && String(number) === text) return text
  if (JSON_NUMBER.test(text)) return text
  const fixed = text.replace(/^(-?)\./, '$10.').replace(/\.(?=$|[eE])/, '')
  if (JSON_NUMBER.test(fixed)) return fixed
  throw new UnrepresentableError(`${path}: the number ${text} has no JSON form`)
}

/**
 * `text` parsed with each number kept as its digits (`NumberText`), for `sameObject` to compare
 * exactly: two numbers a double cannot tell apart (a 64-bit id edited in its last digits) differ.
 */
export function parseExact(text: string): unknown {
  return parseWithSource(text, (_key, value, context) =>
    typeof value === 'number' ? new NumberText(context?.source ?? JSON.stringify(value)) : value,
  )
}

/**
 * The significant digits of the number `whole.fraction` times ten to `exponent`, and the power of
 * ten of the first of them: `0012.50`, `0` gives `125`, 1. No digits for a zero.
 */
function significantOf(
  whole: string,
  fraction: string,
  exponent: string,
): { digits: string; exponent: number } {
  const all = `${whole}${fraction}`
  const leadingZeros = all.length - all.replace(/^0+/, '').length
  return {
    digits: all.slice(leadingZeros).replace(/0+$/, ''),
    exponent: whole.length - 1 - leadingZeros + Number(exponent),
  }
}

/** A number's value as text, whatever way it is written: `1.50`, `1.5` and `15E-1` give one. */
function decimalOf(text: string): string {
  const match = /^(-?)(\d*)(?:\.(\d*))?(?:[eE]([+-]?\d+))?$/.exec(text)
  if (!match) return text
  const [, sign, whole = '', fraction = '', power = '0'] = match
  const { digits, exponent } = significantOf(whole, fraction, power)
  return digits === '' ? '0' : `${sign}${digits}e${exponent}`
}

/** Whether a parsed JSON value and an attribute value say the same thing. */
export function sameJson(json: unknown, value: AttributeValue): boolean {
  if (value.S !== undefined) return json === value.S
  if (value.N !== undefined) {
    // The same digits say the same number; only another spelling needs the comparison by value
    // (a store's own writes are spelled as DynamoDB answers them, so a read takes the first branch).
    if (json instanceof NumberText)
      return json.text === value.N || decimalOf(json.text) === decimalOf(value.N)
    return typeof json === 'number' && json === Number(value.N)
  }
  if (value.BOOL !== undefined) return json === value.BOOL
  if (value.NULL === true) return json === null
  if (value.L !== undefined) {
    return (
      Array.isArray(json) &&
      json.length === value.L.length &&
      value.L.every((item, i) => sameJson(json[i], item))
    )
  }
  if (value.M !== undefined) return sameObject(json, value.M)
  return false
}

export function sameObject(json: unknown, map: Attributes): boolean {
  if (typeof json !== 'object' || json === null || Array.isArray(json) || json instanceof NumberText)
    return false
  const names = Object.keys(map)
  const object = json as Record<string, unknown>
  return (
    Object.keys(object).length === names.length &&
    names.every((name) => Object.hasOwn(object, name) && sameJson(object[name], map[name] as AttributeValue))
  )
}

export function typeName(value: AttributeValue): string {
  return (
    Object.keys(value).find((type) => (value as unknown as Record<string, unknown>)[type] !== undefined) ??
    '?'
  )
}
