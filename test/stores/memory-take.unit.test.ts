import { describe, expect, it } from 'vitest'
import {
  ReadStatus,
  type TakeRequest,
  type TakeResult,
  TakeStatus,
  WriteStatus,
} from '../../lib/core/store.js'
import { MemoryLockStore } from '../../lib/memory/store.js'
import { ManualClock } from '../support/sim-clock.js'

const NOW = 1_800_000_000_000
const KEY = 'jobs/take'

const request: TakeRequest = {
  owner: 'taker',
  expires_at: 1_800_000_030,
  acquired_at: 1_800_000_000,
  ttl_ms: 30_000,
  tokenBelow: 1_800_000_000_000,
}

const released = {
  v: 1,
  token: 1_700_000_000_000,
  expires_at: 0,
  owner: 'last',
  acquired_at: 1_700_000_000,
  ttl_ms: 60_000,
  run: 4,
}

function setup(body?: string): { store: MemoryLockStore; etag: string | undefined } {
  const store = new MemoryLockStore({ clock: new ManualClock(NOW), takes: true })
  return { store, etag: body === undefined ? undefined : store.putRaw(KEY, body) }
}

/** The store's `take`, which a store made with `takes` has. */
const takeOf = (store: MemoryLockStore) => {
  const take = store.take
  if (!take) throw new Error('the store does not take')
  return take
}

const taken = (result: TakeResult) => {
  if (result.status !== TakeStatus.Taken) throw new Error(`not taken: ${JSON.stringify(result)}`)
  return result
}

describe('MemoryLockStore.take: a released lock taken in one write, without a read first', () => {
  it('has no take unless made with takes, so that a lock reads first, as on S3', () => {
    expect(new MemoryLockStore().take).toBeUndefined()
    expect(new MemoryLockStore({ takes: false }).take).toBeUndefined()
    expect(new MemoryLockStore({ takes: true }).take).toBeTypeOf('function')
  })

  it('takes a released record: answers the record as written, its etag and the record before, as a read then finds them', async () => {
    const before = JSON.stringify(released)
    const { store, etag } = setup(before)
    const result = taken(await takeOf(store)(KEY, request))
    expect(JSON.parse(result.body)).toEqual({
      ...released,
      token: released.token + 1,
      owner: 'taker',
      expires_at: request.expires_at,
      acquired_at: request.acquired_at,
      ttl_ms: request.ttl_ms,
      run: 5,
    })
    expect(result.previous).toBe(before)
    expect(result.etag).not.toBe(etag)
    expect(result.serverDate).toBe(NOW)
    expect(await store.read(KEY)).toEqual({
      status: ReadStatus.Found,
      body: result.body,
      etag: result.etag,
      serverDate: NOW,
    })
    expect(store.peek(KEY)).toBe(result.body)
    expect(store.requests).toEqual({ read: 1, create: 0, replace: 0, probe: 0, take: 1 })
  })

  it('keeps every other field in its place, appends the new ones, removes running, and counts run from 1 when absent', async () => {
    const { run: _run, acquired_at: _acquired, ttl_ms: _ttl, ...rest } = released
    const before = {
      ...rest,
      history: [{ token: 5, outcome: 'completed' }],
      running: { token: released.token, tick: 't' },
      state: { cursor: 'abc' },
      x_foreign: 'kept',
    }
    const { store } = setup(JSON.stringify(before))
    const result = taken(await takeOf(store)(KEY, request))
    expect(result.body).toBe(
      JSON.stringify({
        v: 1,
        token: released.token + 1,
        expires_at: request.expires_at,
        owner: 'taker',
        history: before.history,
        state: before.state,
        x_foreign: 'kept',
        acquired_at: request.acquired_at,
        ttl_ms: request.ttl_ms,
        run: 1,
      }),
    )
  })

  it('gives an etag that a replace then lands on', async () => {
    const { store } = setup(JSON.stringify(released))
    const result = taken(await takeOf(store)(KEY, request))
    const next = JSON.stringify({ ...JSON.parse(result.body), expires_at: 0 })
    const replaced = await store.replace(KEY, next, result.etag)
    expect(replaced.status).toBe(WriteStatus.Written)
    expect(store.peek(KEY)).toBe(next)
  })

  const refused: [string, string | undefined, Partial<TakeRequest>?][] = [
    ['held (expires_at not 0)', JSON.stringify({ ...released, expires_at: 1_800_000_010 })],
    ['paused', JSON.stringify({ ...released, v: 1, paused: { by: 'op', at: 1_700_000_000, reason: 'no' } })],
    ['paused, even as null', JSON.stringify({ ...released, paused: null })],
    ['of version 2', JSON.stringify({ ...released, v: 2 })],
    ['whose token is tokenBelow', JSON.stringify(released), { tokenBelow: released.token }],
    ['whose token is above tokenBelow', JSON.stringify(released), { tokenBelow: released.token - 1 }],
    ['whose token is a string', JSON.stringify({ ...released, token: String(released.token) })],
    ['without a token', JSON.stringify({ ...released, token: undefined })],
    ['whose run is not a number', JSON.stringify({ ...released, run: '4' })],
    [
      'whose run is at the largest safe integer',
      JSON.stringify({ ...released, run: Number.MAX_SAFE_INTEGER }),
    ],
    ['not JSON', '{"v":1,'],
    ['JSON but not an object', 'null'],
    ['absent', undefined],
  ]
  it.each(refused)(
    'refuses a record %s: writes nothing, answers what a read finds',
    async (_, body, change) => {
      const { store, etag } = setup(body)
      const result = await takeOf(store)(KEY, { ...request, ...change })
      const read = await store.read(KEY)
      expect(result).toEqual({ status: TakeStatus.NotTaken, current: read, serverDate: NOW })
      expect(read.status === ReadStatus.Found ? [read.body, read.etag] : undefined).toEqual(
        body === undefined ? undefined : [body, etag],
      )
      expect(store.requests.take).toBe(1)
    },
  )

  it('stops at an aborted signal, as every call does', async () => {
    const { store } = setup(JSON.stringify(released))
    const controller = new AbortController()
    controller.abort(new Error('stop'))
    await expect(takeOf(store)(KEY, request, { signal: controller.signal })).rejects.toThrow('stop')
    expect(store.peek(KEY)).toBe(JSON.stringify(released))
  })
})
