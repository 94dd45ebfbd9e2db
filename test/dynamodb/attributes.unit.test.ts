import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import {
  type Attributes,
  sameObject,
  toAttributes,
  toJson,
  UnrepresentableError,
} from '../../lib/dynamodb/attributes.js'
import { digestItem } from '../../lib/dynamodb/digest.js'
import { classifyDynamoDBError, DynamoDBErrorKind } from '../../lib/dynamodb/errors.js'
import { itemFor, readItem } from '../../lib/dynamodb/item.js'

/** JSON objects DynamoDB can hold: no empty names, numbers within its range, no lone surrogates. */
const storable = fc.dictionary(
  fc.string({ minLength: 1, unit: 'grapheme' }),
  fc.jsonValue({ maxDepth: 4, noUnicodeString: false }),
)

describe('JSON bodies as DynamoDB attributes', () => {
  it('reads back every storable object as the same JSON', () => {
    fc.assert(
      fc.property(storable, (object) => {
        let attributes: ReturnType<typeof toAttributes>
        try {
          attributes = toAttributes(JSON.stringify(object))
        } catch (error) {
          // fast-check's JSON may hold numbers or names DynamoDB refuses; those must be refused loudly.
          expect(error).toBeInstanceOf(UnrepresentableError)
          return
        }
        const text = toJson(attributes)
        expect(JSON.parse(text)).toEqual(JSON.parse(JSON.stringify(object)))
        expect(sameObject(JSON.parse(JSON.stringify(object)), attributes)).toBe(true)
      }),
    )
  })

  it('keeps the digits of numbers as written', () => {
    expect(toAttributes('{"a":1740151473.206,"b":12345678901234567890123,"c":1e21,"d":-0.5}')).toEqual({
      a: { N: '1740151473.206' },
      b: { N: '12345678901234567890123' },
      c: { N: '1e21' },
      d: { N: '-0.5' },
    })
  })

  it('gives numbers back as DynamoDB spells them, past a double and without a bare dot, and refuses what JSON has no number for', () => {
    expect(
      toJson({ a: { N: '9007199254740993' }, b: { N: '1000000000000000000000' }, c: { N: '6.50' } }),
    ).toBe('{"a":9007199254740993,"b":1000000000000000000000,"c":6.50}')
    expect(toJson({ a: { N: '.5' }, b: { N: '-.5' }, c: { N: '5.' }, d: { N: '1E+2' } })).toBe(
      '{"a":0.5,"b":-0.5,"c":5,"d":1E+2}',
    )
    for (const text of ['NaN', 'Infinity', '0x10', ' 1', ''])
      expect(() => toJson({ a: { N: text } }), text).toThrow(UnrepresentableError)
  })

  it("reads an item whose number was edited beyond a double's precision from its attributes, under a new etag", () => {
    const layout = { partitionKey: 'pk' }
    const body = '{"v":1,"token":3,"expires_at":0,"owner":"me","state":{"last_id":1234567890123456800}}'
    const written = itemFor(layout, 'k', body)
    // An operator's UpdateItem sets the digits the job meant; the version and the text stay.
    const edited = structuredClone(written.item)
    const state = edited.state?.M as Record<string, { N?: string }>
    state.last_id = { N: '1234567890123456789' }
    const read = readItem(layout, edited)
    expect(read.etag).not.toBe(written.etag)
    expect(read.body).toContain('1234567890123456789')
    // The same number written otherwise (1.50 as 1.5, 1E+2 as 100) is no edit.
    const same = itemFor(layout, 'k', '{"v":1,"token":3,"expires_at":0,"owner":"me","a":1.50,"b":1E+2}')
    const normalized = { ...same.item, a: { N: '1.5' }, b: { N: '100' } }
    expect(readItem(layout, normalized).etag).toBe(same.etag)
  })

  it.each([
    ['lock_body', { N: '7' }],
    ['lock_body', { M: { v: { N: '1' } } }],
    ['lock_version', { N: '1' }],
  ] as const)(
    "reads an item whose own attribute %s is not text (%j) as no lock's: a body that is not JSON",
    (name, value) => {
      const layout = { partitionKey: 'pk' }
      const item = {
        pk: { S: 'k' },
        v: { N: '1' },
        token: { N: '3' },
        expires_at: { N: '0' },
        owner: { S: 'me' },
      }
      const read = readItem(layout, { ...item, [name]: value })
      expect(read.unrepresentable).toBe(true)
      expect(() => JSON.parse(read.body)).toThrow()
      expect(read.body).toContain(name)
      expect(read.etag).not.toBe(readItem(layout, item).etag)
    },
  )

  it('keeps a field named __proto__ as a field', () => {
    expect(Object.keys(toAttributes('{"__proto__":{"x":1}}'))).toEqual(['__proto__'])
  })

  it.each([
    ['1e-131', 'below the smallest magnitude'],
    ['1e126', 'above the largest magnitude'],
    [`0.${'3'.repeat(39)}`, 'more than 38 significant digits'],
  ])('refuses the number %s (%s)', (number) => {
    expect(() => toAttributes(`{"n":${number}}`)).toThrow(UnrepresentableError)
  })

  it.each([['1e-130'], ['9.9999999999999999999999999999999999999e125'], [`1${'0'.repeat(60)}`], ['0.000']])(
    'accepts the number %s',
    (number) => {
      expect(toAttributes(`{"n":${number}}`)).toEqual({ n: { N: number } })
    },
  )

  it('refuses nesting deeper than DynamoDB allows', () => {
    // 32 levels with the item: DynamoDB Local refuses an attribute nested 32 levels itself.
    const deep = `${'['.repeat(32)}${']'.repeat(32)}`
    expect(() => toAttributes(`{"d":${deep}}`)).toThrow(UnrepresentableError)
    expect(() => toAttributes(`{"d":${'['.repeat(31)}${']'.repeat(31)}}`)).not.toThrow()
  })

  it('refuses binary values and sets on the way back to JSON', () => {
    expect(() => toJson({ b: { B: new Uint8Array([1]) } })).toThrow(UnrepresentableError)
    expect(() => toJson({ s: { SS: ['a'] } })).toThrow(UnrepresentableError)
    expect(() => toJson({ m: { M: { n: { NS: ['1'] } } } })).toThrow(UnrepresentableError)
  })

  it('digests items the same whatever the order of their attributes and set members', () => {
    const a = digestItem({
      x: { S: '1' },
      y: { SS: ['a', 'b'] },
      z: { M: { p: { N: '1' }, q: { NULL: true } } },
    })
    const b = digestItem({
      z: { M: { q: { NULL: true }, p: { N: '1' } } },
      y: { SS: ['b', 'a'] },
      x: { S: '1' },
    })
    expect(a).toBe(b)
    expect(digestItem({ x: { S: '1' } })).not.toBe(digestItem({ x: { N: '1' } }))
  })

  it('names two items read from their attributes alike exactly when they are equal, whatever order DynamoDB lists them in', () => {
    const layout = { partitionKey: 'pk' }
    const reversed = (map: Attributes): Attributes =>
      Object.fromEntries(
        Object.entries(map)
          .reverse()
          .map(([name, value]) => [name, value.M ? { M: reversed(value.M) } : value]),
      )
    fc.assert(
      fc.property(
        storable,
        fc.option(storable),
        fc.option(fc.string()),
        fc.option(fc.string()),
        (a, other, textA, textB) => {
          const b = other ?? a // equal items half the time
          // An item taken by an UpdateItem (no text) or edited by hand (a text that does not describe it).
          const item = (object: Record<string, unknown>, text: string | null): Attributes => ({
            ...toAttributes(JSON.stringify(object)),
            pk: { S: 'k' },
            lock_version: { S: 'v1' },
            ...(text !== null && { lock_body: { S: `not it: ${text}` } }),
          })
          let first: Attributes
          let second: Attributes
          try {
            first = item(a, textA)
            second = item(b, textB)
          } catch (error) {
            if (error instanceof UnrepresentableError) return
            throw error
          }
          const equal = JSON.stringify(digestItem(first)) === JSON.stringify(digestItem(second))
          expect(readItem(layout, reversed(first)).etag).toBe(readItem(layout, first).etag)
          expect(readItem(layout, first).etag === readItem(layout, second).etag).toBe(equal)
        },
      ),
    )
    const base = { pk: { S: 'k' }, token: { N: '1' }, lock_version: { S: 'v1' } }
    const etag = (item: Attributes) => readItem(layout, item).etag
    expect(etag({ ...base, token: { S: '1' } })).not.toBe(etag(base))
    expect(etag({ ...base, lock_version: { N: '1' } })).not.toBe(etag({ ...base, lock_version: { S: '1' } }))
    expect(etag({ ...base, lock_body: { S: '{}' } })).not.toBe(etag(base))
    expect(etag({ ...base, pk: { S: 'other' } })).toBe(etag(base))
  })
})

describe('DynamoDB error classification', () => {
  const error = (name: string, status?: number) =>
    Object.assign(new Error(name), { name, $metadata: { httpStatusCode: status } })

  it.each([
    ['ConditionalCheckFailedException', 400, DynamoDBErrorKind.ConditionFailed],
    ['TransactionConflictException', 400, DynamoDBErrorKind.Conflict],
    ['ThrottlingException', 400, DynamoDBErrorKind.Transient],
    ['ProvisionedThroughputExceededException', 400, DynamoDBErrorKind.Transient],
    ['RequestLimitExceeded', 400, DynamoDBErrorKind.Transient],
    ['InternalServerError', 500, DynamoDBErrorKind.Transient],
    ['SomethingNew', 503, DynamoDBErrorKind.Transient],
    ['TimeoutError', undefined, DynamoDBErrorKind.Transient],
    ['ResourceNotFoundException', 400, DynamoDBErrorKind.Fatal],
    ['AccessDeniedException', 400, DynamoDBErrorKind.Fatal],
    ['ValidationException', 400, DynamoDBErrorKind.Fatal],
    ['CredentialsProviderError', undefined, DynamoDBErrorKind.Fatal],
  ])('classifies %s (%s) as %s', (name, status, kind) => {
    expect(classifyDynamoDBError(error(name, status))).toBe(kind)
  })

  it('classifies a socket error without an HTTP answer as transient', () => {
    expect(classifyDynamoDBError(Object.assign(new Error('refused'), { code: 'ECONNREFUSED' }))).toBe(
      DynamoDBErrorKind.Transient,
    )
  })
})
