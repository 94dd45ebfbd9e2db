import { describe, expect, it } from 'vitest'
import { LockConflictError } from '../../lib/index.js'
import { MemoryLockStore } from '../../lib/memory/index.js'
import { LockOperator } from '../../lib/operator/lock-operator.js'
import { SimTime } from '../support/sim-clock.js'

/**
 * What `reset` reads from an object that is not a valid record (a truncated write, a record of
 * another version, one wrapped or edited by hand): every token it shows is a floor, and an expiry
 * only when it is plainly a finite number. Read leniently, it may refuse more than a valid record
 * would, never allow more.
 */
const KEY = 'jobs/unreadable'
const MARGIN_MS = 1_000

/** An operator's lock on a store holding `body` at the key. */
function withBody(body: string) {
  const time = new SimTime()
  const store = new MemoryLockStore({ clock: time.serverClock })
  store.putRaw(KEY, body)
  const operator = new LockOperator({
    store,
    key: KEY,
    operator: 'operator',
    ttlMs: 10_000,
    clockSkewMarginMs: MARGIN_MS,
    clock: time.localClock(),
  })
  return { store, operator }
}

/** The reset's refusal, after checking that nothing was written. */
async function refusal(body: string, token: number, force: boolean): Promise<LockConflictError> {
  const { store, operator } = withBody(body)
  const error = await operator.reset({ token, force }).then(
    (record) => {
      throw new Error(`expected a refusal of token ${token}, got ${JSON.stringify(record)}`)
    },
    (e: unknown) => e,
  )
  expect(error).toBeInstanceOf(LockConflictError)
  expect(store.peek(KEY)).toBe(body)
  return error as LockConflictError
}

/** Checks that a forced reset of `body` takes `lowest` and refuses the token just below. */
async function expectLowestReset(body: string, lowest: number): Promise<void> {
  expect((await refusal(body, lowest - 1, true)).reason).toBe('token-too-low')
  const { store, operator } = withBody(body)
  expect(await operator.reset({ token: lowest, force: true })).toMatchObject({
    token: lowest,
    expires_at: 0,
  })
  expect(JSON.parse(store.peek(KEY) ?? 'null')).toMatchObject({ token: lowest, owner: 'reset by operator' })
}

/** `JSON.stringify` of an object, with `token` spelled `tok\u0065n`: JSON reads the key, a text search does not. */
const escapedKey = (fields: Record<string, unknown>) =>
  JSON.stringify(fields).replace('"token"', '"tok\\u0065n"')

describe('reset of an object that is not a valid record: the token floor', () => {
  it.each([
    ['the top-level token of a record of another version', '{"v":3,"token":12,"expires_at":0}', 13],
    ['a token that only JSON reads (an escaped key)', escapedKey({ v: 3, token: 12 }), 13],
    ['a string token that only JSON reads (escaped digits)', '{"v":3,"token":"\\u00312"}', 13],
    ['a string token with a sign', JSON.stringify({ v: 3, token: '+12' }), 13],
    ['a token written as a fraction', '{"v":3,"token":12.5,"expires_at":0', 13],
    ['a token written as a bare fraction', '{"v":3,"token":.125e2,"expires_at":0', 13],
    ['a token written with a trailing point', '{"v":3,"token":12.,"expires_at":0', 13],
    ['a token written with an exponent', '{"v":3,"token":1.2e1,', 13],
    ['a token written with a signed capital exponent', '{"v":3,"token":12E+0,', 13],
    ['a token written with a negative exponent', '{"v":3,"token":1200e-2,', 13],
    ['a token written with several digits everywhere', '{"v":3,"token":12.00e00,', 13],
    ['a padded token in a truncated text', '{"v":3, "token" :  " 12', 13],
    ['the highest of several tokens in a text, first', '[{"token":30},{"token":9},{"token":12}]', 31],
    ['the highest of several tokens in a text, last', '[{"token":9},{"token":12},{"token":30}]', 31],
    ['the highest of several tokens in a text, in between', '[{"token":9},{"token":30},{"token":12}]', 31],
    ['a token in the text above the top-level one', '{"v":3,"token":3,"history":[{"token":40}]}', 41],
    [
      'a top-level token above the ones in the text',
      escapedKey({ v: 3, token: 50, history: [{ token: 4 }] }),
      51,
    ],
  ])('goes above %s', async (_, body, lowest) => {
    await expectLowestReset(body, lowest)
  })

  it.each([
    ['a negative token', '{"v":3,"token":-12,"expires_at":0}'],
    ['a string token that holds more than a number', escapedKey({ v: 3, token: '12 and more' })],
    ['a string token that holds a number after something else', escapedKey({ v: 3, token: 'version 12' })],
    ['a string token that is not a number', escapedKey({ v: 3, token: 'twelve' })],
    ['a token that is neither a number nor a string', escapedKey({ v: 3, token: [12] })],
    ['a "token" that is not a field', '{"v":3,"note":"token: 12"}'],
    ['no token at all', '{"v":3,"expires_at":0}'],
    ['a body that is not JSON', 'garbage'],
  ])('takes token 1, the lowest a lock that has seen nothing takes, over %s', async (_, body) => {
    await expectLowestReset(body, 1)
  })

  it('refuses every token over a token too large to be a number (1e999 reads as Infinity)', async () => {
    for (const token of [1, 1_800_000_000_000 + 9_000]) {
      // as high as reset goes: 10 s ahead of the store
      expect((await refusal('{"v":3,"token":1e999}', token, true)).reason).toBe('token-too-low')
    }
  })
})

describe('reset of an object that is not a valid record: its expiry', () => {
  const pastSeconds = (1_800_000_000_000 - 60_000) / 1000

  it.each([
    ['released', { v: 3, token: 5, expires_at: 0 }],
    ['expired a minute ago', { v: 3, token: 5, expires_at: pastSeconds }],
  ])('replaces, unforced, a body whose top-level expires_at shows it %s', async (_, fields) => {
    const { operator } = withBody(JSON.stringify(fields))
    expect(await operator.reset({ token: 6 })).toMatchObject({ token: 6, expires_at: 0 })
  })

  it.each([
    ['a string', '{"v":3,"token":5,"expires_at":"0"}'],
    ['minus infinity (-1e999)', '{"v":3,"token":5,"expires_at":-1e999}'],
    ['nested, not top-level', '{"v":3,"token":5,"lease":{"expires_at":0}}'],
    ['in a truncated text', '{"v":3,"token":5,"expires_at":0,"own'],
    ['in an array', '[{"v":3,"token":5,"expires_at":0}]'],
  ])('refuses, unforced, a body whose only expires_at is %s, and takes it when forced', async (_, body) => {
    expect((await refusal(body, 6, false)).reason).toBe('not-released')
    await expectLowestReset(body, 6)
  })
})
