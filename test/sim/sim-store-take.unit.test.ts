import { describe, expect, it } from 'vitest'
import { LockStoreError } from '../../lib/core/errors.js'
import {
  type LockStore,
  ReadStatus,
  type TakeRequest,
  TakeStatus,
  WriteStatus,
} from '../../lib/core/store.js'
import { NO_FAULTS, SimStore, type StoreFaults } from './sim-store.js'
import { World } from './world.js'

const KEY = 'jobs/sim'
const DYNAMODB: StoreFaults = { ...NO_FAULTS, etagIsDigest: false }

const request: TakeRequest = {
  owner: 'p/owner',
  expires_at: 1_800_000_030,
  acquired_at: 1_800_000_000,
  ttl_ms: 30_000,
  tokenBelow: 1_800_000_010_000,
}

const released = { v: 1, token: 1_799_000_000_000, expires_at: 0, owner: 'q/owner', run: 2 }

function setup(faults: Partial<StoreFaults> = {}, body: string | null = JSON.stringify(released)) {
  const world = new World(7)
  const store = new SimStore(world, { ...DYNAMODB, ...faults })
  if (body !== null) store.writeBack(KEY, body)
  const before = store.log.length
  const process = world.process('p')
  const client = store.for(process)
  /** Runs the world until `call` settles, and says how. */
  const run = async <T>(call: Promise<T>): Promise<{ value?: T; error?: unknown }> => {
    const outcome: { value?: T; error?: unknown } = {}
    call.then(
      (value) => {
        outcome.value = value
      },
      (error: unknown) => {
        outcome.error = error
      },
    )
    await world.runUntil(world.now + 10_000, () => {})
    return outcome
  }
  const take = (client: LockStore) => {
    if (!client.take) throw new Error('no take')
    return run(client.take(KEY, request))
  }
  return { world, store, client, run, take: () => take(client), written: () => store.log.slice(before) }
}

describe("the simulator's store: take, on a DynamoDB-like store only", () => {
  it('offers no take where etags are digests (S3-like), so its worlds draw what they drew before', () => {
    const world = new World(1)
    const s3 = new SimStore(world, NO_FAULTS).for(world.process('p'))
    expect('take' in s3).toBe(false)
    const dynamodb = new SimStore(world, DYNAMODB).for(world.process('p'))
    expect(dynamodb.take).toBeTypeOf('function')
  })

  it("takes a released record, logs it for the oracle as a replace with the new body, and answers it with the store's date", async () => {
    const { store, take, written, world } = setup()
    const { value } = await take()
    if (value?.status !== TakeStatus.Taken) throw new Error(`not taken: ${JSON.stringify(value)}`)
    const body = JSON.stringify({
      ...released,
      token: released.token + 1,
      expires_at: request.expires_at,
      owner: request.owner,
      run: 3,
      acquired_at: request.acquired_at,
      ttl_ms: request.ttl_ms,
    })
    expect(value.body).toBe(body)
    expect(value.previous).toBe(JSON.stringify(released))
    expect(store.peek(KEY)).toEqual({ body, etag: value.etag })
    expect(value.serverDate).toBeLessThanOrEqual(world.now)
    const [write, ...more] = written()
    expect(more).toEqual([])
    expect(write).toMatchObject({ by: 'p', kind: 'take', body, etag: value.etag })
    expect(write?.answeredAt).toBeTypeOf('number')
  })

  it("answers a take with what the DynamoDB store reads of the item its UpdateItem leaves: the core's one spelling", async () => {
    // Written from outside in an order of its own: the item keeps its text, which the take removes.
    const outside = `{"owner":"q/owner","run":2,"expires_at":0,"token":${released.token},"v":1,"note":"kept"}`
    const { store, take } = setup({}, outside)
    expect(store.peek(KEY)?.body).toBe(outside)
    const { value } = await take()
    if (value?.status !== TakeStatus.Taken) throw new Error(`not taken: ${JSON.stringify(value)}`)
    expect(value.previous).toBe(outside)
    expect(value.body).toBe(
      `{"v":1,"token":${released.token + 1},"expires_at":${request.expires_at},"owner":"${request.owner}",` +
        `"run":3,"acquired_at":${request.acquired_at},"ttl_ms":${request.ttl_ms},"note":"kept"}`,
    )
    expect(store.peek(KEY)?.body).toBe(value.body)
    expect(store.misread).toEqual([])
  })

  it('reports a body of the library that no DynamoDB item holds, for the oracle (I4)', async () => {
    const { store, client, run } = setup({}, null)
    await run(client.create(KEY, '{"v":1,"token":1,"expires_at":0,"owner":"p","s":"\ud800"}'))
    expect(store.misread).toHaveLength(1)
    expect(store.misread[0]).toContain('no item holds')
  })

  it('keeps other fields, removes running, and raises run from 0', async () => {
    const { run: _run, ...rest } = released
    const { take } = setup({}, JSON.stringify({ ...rest, running: { token: 1 }, history: [{ token: 1 }] }))
    const { value } = await take()
    if (value?.status !== TakeStatus.Taken) throw new Error(`not taken: ${JSON.stringify(value)}`)
    expect(JSON.parse(value.body)).toEqual({
      v: 1,
      token: released.token + 1,
      expires_at: request.expires_at,
      owner: request.owner,
      history: [{ token: 1 }],
      acquired_at: request.acquired_at,
      ttl_ms: request.ttl_ms,
      run: 1,
    })
  })

  const refused: [string, string | null][] = [
    ['held', JSON.stringify({ ...released, expires_at: 1_800_000_005 })],
    ['paused', JSON.stringify({ ...released, paused: { by: 'op' } })],
    ['of version 2', JSON.stringify({ ...released, v: 2 })],
    ['whose token is not below tokenBelow', JSON.stringify({ ...released, token: request.tokenBelow })],
    ['whose token is a string', JSON.stringify({ ...released, token: '5' })],
    ['whose run is at the ceiling', JSON.stringify({ ...released, run: Number.MAX_SAFE_INTEGER })],
    ['not JSON', 'not json'],
    ['absent', null],
  ]
  it.each(refused)(
    'refuses a record %s: writes nothing, answers what a read finds, dated',
    async (_, body) => {
      const { store, client, run, take, written } = setup({}, body)
      const { value } = await take()
      expect(written()).toEqual([])
      const { value: read } = await run(client.read(KEY))
      if (value?.status !== TakeStatus.NotTaken) throw new Error(`taken: ${JSON.stringify(value)}`)
      expect(value.current).toEqual({ ...read, serverDate: value.serverDate })
      expect(value.current.status).toBe(body === null ? ReadStatus.Absent : ReadStatus.Found)
      expect(value.serverDate).toBeTypeOf('number')
      expect(store.peek(KEY)?.body).toBe(body ?? undefined)
    },
  )

  it('answers without a date on both the take and its read when the date is missing', async () => {
    const { take } = setup({ missingDate: 1 }, JSON.stringify({ ...released, expires_at: 1_800_000_005 }))
    const { value } = await take()
    expect(value).toEqual({
      status: TakeStatus.NotTaken,
      current: expect.objectContaining({ status: 'found' }),
    })
    if (value?.status === TakeStatus.NotTaken) expect(value.current).not.toHaveProperty('serverDate')
  })

  it('applies a take whose answer is lost, unanswered: the caller times out', async () => {
    const { take, written } = setup({ lostAnswer: 1 })
    const { error } = await take()
    expect(error).toBeInstanceOf(LockStoreError)
    expect((error as LockStoreError).retryable).toBe(true)
    const [write] = written()
    expect(write).toMatchObject({ kind: 'take', by: 'p' })
    expect(write?.answeredAt).toBeUndefined()
  })

  it.each([
    ['a lost request', { lostRequest: 1 }],
    ['a 503', { unavailable: 1 }],
    ['a conflict (a transaction in progress)', { conflict: 1 }],
  ])('applies nothing on %s, failing with a retryable error', async (_, faults) => {
    const { store, take, written } = setup(faults)
    const { error } = await take()
    expect(error).toBeInstanceOf(LockStoreError)
    expect((error as LockStoreError).retryable).toBe(true)
    expect(written()).toEqual([])
    expect(store.peek(KEY)?.body).toBe(JSON.stringify(released))
  })

  it('still answers a conflicting replace with conflict, as before', async () => {
    const { store, client, run } = setup({ conflict: 1 })
    const etag = store.peek(KEY)?.etag as string
    const { value } = await run(client.replace(KEY, '{}', etag))
    expect(value?.status).toBe(WriteStatus.Conflict)
  })

  it('takes over a held record when the store ignores conditions, but not over a token it cannot raise', async () => {
    const held = setup(
      { ignoreConditions: true },
      JSON.stringify({ ...released, expires_at: 1_800_000_005, v: 2 }),
    )
    expect((await held.take()).value?.status).toBe(TakeStatus.Taken)
    const stringToken = setup({ ignoreConditions: true }, JSON.stringify({ ...released, token: '5' }))
    expect((await stringToken.take()).value?.status).toBe(TakeStatus.NotTaken)
    const absent = setup({ ignoreConditions: true }, null)
    expect((await absent.take()).value?.status).toBe(TakeStatus.NotTaken)
  })

  it('takes over a record holding maps on an engine whose maps never compare equal: its condition names none', async () => {
    const { take } = setup({ mapsNeverEqual: true }, JSON.stringify({ ...released, history: [{ token: 1 }] }))
    expect((await take()).value?.status).toBe(TakeStatus.Taken)
  })
})
