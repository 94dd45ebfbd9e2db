import { describe, expect, it } from 'vitest'
import { nextRun, serializeRecord } from '../../lib/core/record.js'
import { MAX_RECORD_BYTES, parseRecord } from '../../lib/extend.js'
import { LockCorruptedError } from '../../lib/index.js'

const valid = { v: 1 as const, token: 3, expires_at: 1_740_151_473.206, owner: 'a' }
const body = (fields: Record<string, unknown>) => JSON.stringify({ ...valid, ...fields })
/** A valid record body of exactly `bytes` bytes in UTF-8, padded with two-byte characters. */
const ofBytes = (bytes: number) => {
  const bare = Buffer.byteLength(body({ pad: '' }))
  const left = bytes - bare
  return body({ pad: `${'é'.repeat(Math.floor(left / 2))}${left % 2 ? 'a' : ''}` })
}
const refusal = (raw: string, etag?: string) => {
  try {
    parseRecord(raw, 'jobs/k', etag)
  } catch (error) {
    return error as LockCorruptedError
  }
  throw new Error('expected the body to be refused')
}

describe('parseRecord', () => {
  it('reads a record, keeping the fields it does not know', () => {
    expect(parseRecord(body({ future: [1] }), 'jobs/k')).toEqual({ ...valid, future: [1] })
  })

  it('takes the smallest values each field allows', () => {
    const smallest = {
      v: 1,
      token: 0,
      run: 0,
      expires_at: 0,
      owner: '',
      acquired_at: 0,
      ttl_ms: 0,
      last_run: '',
    }
    expect(parseRecord(JSON.stringify(smallest), 'jobs/k')).toEqual(smallest)
  })

  it.each([
    ['not JSON', '{"token": 1', /not JSON/],
    ['JSON null', 'null', /not a JSON object/],
    ['a number', '5', /not a JSON object/],
    ['a string', '"record"', /not a JSON object/],
    ['an array', '[1]', /not a JSON object/],
    ['another version', body({ v: 3 }), /"v" is 3/],
    ['a negative token', body({ token: -1 }), /"token"/],
    ['a fractional token', body({ token: 1.5 }), /"token"/],
    ['a string token', body({ token: '3' }), /"token"/],
    ['a negative expires_at', body({ expires_at: -1 }), /"expires_at"/],
    ['a string expires_at', body({ expires_at: '1' }), /"expires_at"/],
    [
      'an infinite expires_at',
      body({ expires_at: 1 }).replace('"expires_at":1', '"expires_at":1e999'),
      /"expires_at"/,
    ],
    ['an owner that is not a string', body({ owner: 5 }), /"owner"/],
    ['a negative run', body({ run: -1 }), /"run"/],
    ['a fractional run', body({ run: 1.5 }), /"run"/],
    ['an unsafe run', body({ run: 2 ** 53 }), /"run"/],
    ['a negative acquired_at', body({ acquired_at: -1 }), /"acquired_at"/],
    ['a string ttl_ms', body({ ttl_ms: '60000' }), /"ttl_ms"/],
    ['a last_run that is not a string', body({ last_run: 5 }), /"last_run"/],
  ])('refuses %s, saying what is wrong', (_, raw, why) => {
    const error = refusal(raw)
    expect(error).toBeInstanceOf(LockCorruptedError)
    expect(error.message).toMatch(why)
    expect(error).toMatchObject({ key: 'jobs/k', raw })
  })

  it('keeps the JSON error as the cause of a body that is not JSON', () => {
    expect(refusal('{').cause).toBeInstanceOf(SyntaxError)
  })

  it('names the etag of the refused object when it is known, so an operator can reset exactly that one', () => {
    expect(refusal('[]', '"e1"').etag).toBe('"e1"')
    expect(refusal('[]').etag).toBeUndefined()
  })

  it('reads a record of exactly 64 KiB, counted in UTF-8 bytes, and refuses one byte more', () => {
    expect(parseRecord(ofBytes(MAX_RECORD_BYTES), 'jobs/k')).toMatchObject(valid)
    const over = ofBytes(MAX_RECORD_BYTES + 1)
    expect(over.length).toBeLessThan(MAX_RECORD_BYTES) // it is over in bytes, not in characters
    const error = refusal(over)
    expect(error.message).toMatch(/larger than 65536 bytes/)
    expect(error.raw).toBe(over)
  })

  it('keeps at most 64 KiB of a body too large to be a record', () => {
    expect(refusal('x'.repeat(100_000)).raw).toHaveLength(MAX_RECORD_BYTES)
  })
})

describe('nextRun: the run count an acquisition writes', () => {
  it('counts one past the last run, starting at 1', () => {
    expect(nextRun(undefined)).toBe(1)
    expect(nextRun({ ...valid })).toBe(1)
    expect(nextRun({ ...valid, run: 41 })).toBe(42)
  })

  it('starts again at 1 past the largest safe integer, which a record may not hold', () => {
    expect(nextRun({ ...valid, run: Number.MAX_SAFE_INTEGER - 1 })).toBe(Number.MAX_SAFE_INTEGER)
    expect(nextRun({ ...valid, run: Number.MAX_SAFE_INTEGER })).toBe(1)
  })
})

describe('serializeRecord: the bytes a record is stored as', () => {
  it('spells one record one way, whatever order its fields and their maps were set in', () => {
    const a = serializeRecord({
      ...valid,
      history: [{ token: 2, at: 1.5, outcome: 'completed' } as never],
      state: { b: [{ y: 1, x: 2 }], a: 'first' },
      zeta: 1,
      alpha: { d: 4, c: 3 },
    })
    const b = serializeRecord({
      alpha: { c: 3, d: 4 },
      zeta: 1,
      state: { a: 'first', b: [{ x: 2, y: 1 }] },
      history: [{ outcome: 'completed', at: 1.5, token: 2 } as never],
      owner: 'a',
      expires_at: 1_740_151_473.206,
      token: 3,
      v: 1,
    })
    expect(b).toBe(a)
  })

  it("lists the record format's own fields in their order, then the others by name, and every map's by name", () => {
    const text = serializeRecord({
      z: 0,
      history: [],
      owner: 'a',
      a: { y: 1, x: [{ q: 1, p: 2 }] },
      token: 3,
      expires_at: 0,
      v: 1,
    })
    expect(text).toBe(
      '{"v":1,"token":3,"expires_at":0,"owner":"a","history":[],"a":{"x":[{"p":2,"q":1}],"y":1},"z":0}',
    )
  })

  it('writes the version its fields call for, and leaves out what JSON leaves out', () => {
    const paused = serializeRecord({ ...valid, paused: { by: 'op', at: 1 }, gone: undefined } as never)
    expect(JSON.parse(paused)).toEqual({ ...valid, v: 2, paused: { at: 1, by: 'op' } })
    expect(paused).not.toContain('gone')
  })

  it('keeps a field named __proto__ as a field, at the top and within', () => {
    const body = JSON.parse('{"v":1,"token":3,"expires_at":0,"owner":"a","__proto__":{"__proto__":1}}')
    expect(serializeRecord(body)).toBe(
      '{"v":1,"token":3,"expires_at":0,"owner":"a","__proto__":{"__proto__":1}}',
    )
  })
})
