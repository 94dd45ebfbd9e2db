import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { serializeRecord } from '../../lib/core/record.js'
import { type Attributes, UnrepresentableError } from '../../lib/dynamodb/attributes.js'
import { BODY_ATTRIBUTE, itemFor, readItem, VERSION_ATTRIBUTE } from '../../lib/dynamodb/item.js'
import type { LockRecord } from '../../lib/extend.js'

const layout = { partitionKey: 'pk' }
/** JSON objects DynamoDB can hold: no empty names, numbers within its range, no lone surrogates. */
const storable = fc.dictionary(
  fc.string({ minLength: 1, unit: 'grapheme' }),
  fc.jsonValue({ maxDepth: 4, noUnicodeString: false }),
)
/** `item` as DynamoDB may list it: its attributes, and every map's, in another order. */
const reversed = (map: Attributes): Attributes =>
  Object.fromEntries(
    Object.entries(map)
      .reverse()
      .map(([name, value]) => [name, value.M ? { M: reversed(value.M) } : value]),
  )
const record = (fields: Record<string, unknown> = {}): string =>
  serializeRecord({ v: 1, token: 1_740_151_473_206, expires_at: 1_740_151_503.206, owner: 'me', ...fields })

describe('a lock item as this store writes it', () => {
  it('reads back as the very body and etag it was written with, whatever the body, in any attribute order', () => {
    fc.assert(
      fc.property(storable, fc.boolean(), (object, asRecord) => {
        let body: string
        let written: ReturnType<typeof itemFor>
        try {
          // Half as the core writes records (one order), half as any writer may (any order).
          body = asRecord ? serializeRecord(object as unknown as LockRecord) : JSON.stringify(object)
          written = itemFor(layout, 'k', body)
        } catch (error) {
          if (error instanceof UnrepresentableError) return
          throw error
        }
        const read = readItem(layout, reversed(written.item))
        expect(read.body).toBe(body)
        expect(read.etag).toBe(written.etag)
      }),
    )
  })

  it('keeps no text beside the attributes of a record the core wrote: they read back as its bytes', () => {
    const body = record({
      run: 7,
      last_run: '2026-12-07T00:00:00Z',
      state: { pages: [1, 2], cursor: 'x' },
      history: [{ token: 5, outcome: 'completed', at: 1_740_151_400.5 }],
      future: { b: true, a: null },
    })
    const { item } = itemFor(layout, 'k', body)
    expect(item).not.toHaveProperty(BODY_ATTRIBUTE)
    expect(readItem(layout, item).body).toBe(body)
  })

  it.each([
    ['fields in another order', '{"owner":"me","v":1,"token":3,"expires_at":0}'],
    ['a map in another order', '{"v":1,"token":3,"expires_at":0,"owner":"me","state":{"b":1,"a":2}}'],
    ['a number with trailing zeros', '{"v":1,"token":3,"expires_at":1.50,"owner":"me"}'],
    ['a number with an exponent', '{"v":1,"token":3,"expires_at":1E+2,"owner":"me"}'],
    ['a negative zero', '{"v":1,"token":3,"expires_at":-0,"owner":"me"}'],
    ['digits beyond a double', '{"v":1,"token":12345678901234567891,"expires_at":0,"owner":"me"}'],
  ])('keeps its text beside a body with %s, which its attributes would not spell back', (_, body) => {
    const { item, etag } = itemFor(layout, 'k', body)
    expect(item[BODY_ATTRIBUTE]).toEqual({ S: body })
    expect(readItem(layout, item)).toEqual({ body, etag })
  })

  it("keeps its text beside a record in the core's spelling whose number JavaScript writes with an exponent", () => {
    const body = record({ state: { big: 1e21, small: 1e-7 } })
    expect(body).toContain('1e+21')
    const { item, etag } = itemFor(layout, 'k', body)
    expect(item[BODY_ATTRIBUTE]).toEqual({ S: body })
    expect(readItem(layout, item)).toEqual({ body, etag })
  })

  it.each([
    ['a lone surrogate', { state: '\ud800' }],
    ['an empty name', { state: { '': 1 } }],
    ['nesting deeper than DynamoDB holds', { state: JSON.parse(`${'['.repeat(40)}${']'.repeat(40)}`) }],
  ])("refuses a record in the core's spelling holding %s, as any body", (_, fields) => {
    expect(() => itemFor(layout, 'k', record(fields))).toThrow(UnrepresentableError)
  })

  it('names each write anew, identical bytes included: its etag changes with its version', () => {
    const body = record()
    const first = itemFor(layout, 'k', body)
    const second = itemFor(layout, 'k', body)
    expect(first.item[VERSION_ATTRIBUTE]).not.toEqual(second.item[VERSION_ATTRIBUTE])
    expect(first.etag).not.toBe(second.etag)
  })

  it('shows an outside edit that keeps the version as a new etag and the edited body', () => {
    const written = itemFor(layout, 'k', record())
    const edited = { ...written.item, expires_at: { N: '0' } }
    const read = readItem(layout, edited)
    expect(read.etag).not.toBe(written.etag)
    expect(JSON.parse(read.body)).toMatchObject({ expires_at: 0 })
    // Text added from outside that does not describe the item changes nothing of the reading.
    const withText = readItem(layout, { ...edited, [BODY_ATTRIBUTE]: { S: record() } })
    expect(withText.body).toBe(read.body)
    expect(withText.etag).not.toBe(written.etag)
  })
})
