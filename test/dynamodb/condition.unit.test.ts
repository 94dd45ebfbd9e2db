import { describe, expect, it } from 'vitest'
import { RECORD_FIELDS } from '../../lib/core/record.js'
import type { Attributes } from '../../lib/dynamodb/attributes.js'
import { Comparison, type Condition, sameItemCondition } from '../../lib/dynamodb/condition.js'
import { BODY_ATTRIBUTE, VERSION_ATTRIBUTE } from '../../lib/dynamodb/item.js'
import { marshal } from '../support/dynamodb.js'

/** DynamoDB's own limits on one condition expression. */
const MAX_OPERATORS = 300
const MAX_LENGTH = 4096
/** What the store adds to the condition: `attribute_exists(#key) AND `. */
const KEY_CLAUSE = { operators: 2, length: 'attribute_exists(#key) AND '.length }

const expression = (condition: Condition) => condition.clauses.join(' AND ')

/** Operators and functions as DynamoDB counts them: comparators, ANDs, function calls. */
const operators = (text: string) =>
  (text.match(/ = | AND |attribute_not_exists\(|attribute_type\(|size\(/g) ?? []).length

const withinLimits = (condition: Condition) => {
  const text = expression(condition)
  expect(operators(text) + KEY_CLAUSE.operators).toBeLessThanOrEqual(MAX_OPERATORS)
  expect(text.length + KEY_CLAUSE.length).toBeLessThanOrEqual(MAX_LENGTH)
}

/** Every placeholder given is used, and every one used is given: DynamoDB refuses either. */
const placeholdersMatch = (condition: Condition) => {
  const used = new Set(expression(condition).match(/[#:][av]\d+/g))
  expect(new Set([...Object.keys(condition.names), ...Object.keys(condition.values)])).toEqual(used)
}

/** The attributes and map keys a condition names (all of them used: see placeholdersMatch). */
const comparedNames = (condition: Condition) => Object.values(condition.names)

const item = (fields: Record<string, unknown>): Attributes =>
  (marshal({ v: 1, token: 7, expires_at: 12.5, owner: 'me', ...fields }) as { M: Attributes }).M

const wide = (count: number) =>
  Object.fromEntries(Array.from({ length: count }, (_, i) => [`team_field_${i}`, `value ${i}`]))

describe('the condition of a replace', () => {
  it('compares every attribute of an item that fits in one condition, and requires every other record field absent', () => {
    const expected = { ...item({ extra: 'x' }), [VERSION_ATTRIBUTE]: { S: 'v1' } }
    const condition = sameItemCondition(expected, Comparison.Whole)
    const absent = [...RECORD_FIELDS, BODY_ATTRIBUTE].filter((name) => !(name in expected))
    expect(comparedNames(condition).sort()).toEqual([...Object.keys(expected), ...absent].sort())
    for (const name of absent) {
      const placeholder = Object.entries(condition.names).find(([, named]) => named === name)?.[0]
      expect(condition.clauses).toContain(`attribute_not_exists(${placeholder})`)
    }
    placeholdersMatch(condition)
  })

  it('stays within DynamoDB limits on an item of 400 attributes, comparing the version and every record field', () => {
    const record = item({ state: { page: 3 }, cursor: 'c', last_run: 't', run: 2, ...wide(400) })
    const expected = { ...record, [VERSION_ATTRIBUTE]: { S: 'v1' }, [BODY_ATTRIBUTE]: { S: '{}' } }
    const condition = sameItemCondition(expected, Comparison.Whole)
    withinLimits(condition)
    placeholdersMatch(condition)
    const compared = comparedNames(condition)
    const recordFields = RECORD_FIELDS.filter((name) => name in expected)
    expect(compared).toEqual(expect.arrayContaining([VERSION_ATTRIBUTE, BODY_ATTRIBUTE, ...recordFields]))
    // The team's fields fill what is left, in name order.
    expect(compared.length).toBeGreaterThan(130)
  })

  it('requires the version still absent on an outsider item of 400 attributes', () => {
    const condition = sameItemCondition(item(wide(400)), Comparison.Whole)
    withinLimits(condition)
    placeholdersMatch(condition)
    expect(expression(condition)).toContain('attribute_not_exists(')
    expect(Object.values(condition.names)).toContain(VERSION_ATTRIBUTE)
  })

  it('stays within DynamoDB limits compared leaf by leaf, leaving out a map too large to compare', () => {
    const pages = Array.from({ length: 300 }, (_, i) => ({ page: i, done: i % 2 === 0 }))
    const expected = { ...item({ state: { pages }, cursor: { at: 4 } }), [VERSION_ATTRIBUTE]: { S: 'v1' } }
    const condition = sameItemCondition(expected, Comparison.Leaves)
    withinLimits(condition)
    placeholdersMatch(condition)
    const compared = comparedNames(condition)
    expect(compared).toEqual(
      expect.arrayContaining([VERSION_ATTRIBUTE, 'token', 'expires_at', 'owner', 'at']),
    )
    expect(compared).not.toContain('page')
  })
})
