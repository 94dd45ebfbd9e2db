import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { LockStoreError } from '../../lib/core/errors.js'
import { WriteStatus } from '../../lib/core/store.js'
import { DynamoDBLockStore } from '../../lib/dynamodb/index.js'
import { Lock, withSingleton } from '../../lib/index.js'
import type { OutcomeEvent } from '../../lib/lifecycle/outcome.js'
import { type ContractTarget, describeLockStoreContract } from '../stores/contract.js'
import { describeTokenAttacks } from '../stores/token-attacks.js'
import { deleteItem, putRawItem } from '../support/dynamodb.js'
import { lambdaContext, schedulerEvent } from '../support/lambda-context.js'
import { leaseOf } from '../support/lease-of.js'
import { type DynaliteEngine, startDynalite } from './dynalite-engine.js'

/**
 * dynalite, the DynamoDB emulator many teams test with, started by this file. Its answers
 * differ from DynamoDB's (its `=` is false for every map and list, and it sends no item with a
 * failed condition): the library must work on it, or say plainly what it got.
 */
describe('on dynalite', () => {
  let engine: DynaliteEngine
  beforeAll(async () => {
    engine = await startDynalite()
  })
  afterAll(() => engine?.close())

  const silent = { info: () => {}, warn: () => {}, error: () => {} }
  const storeOn = (client = engine.client) => new DynamoDBLockStore({ client, tableName: engine.tableName })

  function job(key: string, outcomes: OutcomeEvent[]) {
    return withSingleton(async (_event, context) => await context.singleton.fencingToken(), {
      store: storeOn(),
      key,
      logger: silent,
      onOutcome: (event) => outcomes.push(event),
    })
  }

  it('releases a run with a tick, and the next tick runs', async () => {
    const outcomes: OutcomeEvent[] = []
    const handler = job('ticked', outcomes)
    const first = await handler(schedulerEvent('2026-01-01T00:00:00Z'), lambdaContext({ timeoutMs: 20_000 }))
    const second = await handler(schedulerEvent('2026-01-01T00:01:00Z'), lambdaContext({ timeoutMs: 20_000 }))
    expect(outcomes.map((o) => o.outcome)).toEqual(['acquired', 'released', 'acquired', 'released'])
    expect(second).toBeGreaterThan(first as number)
  })

  it('releases a run without a tick, and the next run acquires', async () => {
    const outcomes: OutcomeEvent[] = []
    const handler = job('unticked', outcomes)
    await handler({}, lambdaContext({ timeoutMs: 20_000 }))
    await handler({}, lambdaContext({ timeoutMs: 20_000 }))
    expect(outcomes.map((o) => o.outcome)).toEqual(['acquired', 'released', 'acquired', 'released'])
  })

  it('takes, checkpoints and releases a lock whose item holds 400 attributes and a large checkpoint, compared leaf by leaf', async () => {
    const team = Object.fromEntries(Array.from({ length: 400 }, (_, i) => [`team_field_${i}`, i]))
    const record = { v: 1, token: 1, expires_at: 0, owner: 'old', state: { pages: [1, 2, 3] }, ...team }
    await putRawItem(engine.client, engine.tableName, { pk: { S: 'wide' } }, JSON.stringify(record))
    const lease = await leaseOf(new Lock({ store: storeOn(), key: 'wide' }).tryAcquire())
    expect(lease).not.toBeNull()
    await lease?.saveCheckpoint({ pages: Array.from({ length: 300 }, (_, page) => ({ page, done: true })) })
    await lease?.renew()
    await lease?.release()
  })

  it('refuses a replace whose condition the engine fails on the very item it holds, naming the answer', async () => {
    // An engine that fails every condition however it is written: nothing the store can map.
    const client = engine.newClient()
    client.middlewareStack.add(
      (next) => (args) => {
        const input = args.input as { ConditionExpression?: string }
        if (input.ConditionExpression?.startsWith('attribute_exists')) {
          input.ConditionExpression += ' AND attribute_not_exists(#key)'
        }
        return next(args)
      },
      { step: 'initialize', name: 'failEveryCondition' },
    )
    const store = storeOn(client)
    const created = await store.create(
      'refused',
      JSON.stringify({ v: 1, token: 1, expires_at: 0, history: [] }),
    )
    if (created.status !== WriteStatus.Written) throw new Error(`create: ${created.status}`)
    const replacing = store.replace(
      'refused',
      JSON.stringify({ v: 1, token: 2, expires_at: 0 }),
      created.etag,
    )
    await expect(replacing).rejects.toThrow(LockStoreError)
    await expect(replacing).rejects.toMatchObject({
      retryable: false,
      message: expect.stringMatching(/answered ConditionalCheckFailedException, yet the item still holds/),
    })
  })
})

async function dynaliteTarget(): Promise<ContractTarget> {
  const engine = await startDynalite()
  const key = (k: string) => ({ pk: { S: k } })
  const { client, tableName } = engine
  return {
    store: () => new DynamoDBLockStore({ client, tableName }),
    putRaw: (k, body) => putRawItem(client, tableName, key(k), body),
    deleteRaw: (k) => deleteItem(client, tableName, key(k)),
    storeAt: (endpoint, requestTimeoutMs) =>
      new DynamoDBLockStore({ client: engine.newClient(endpoint), tableName, requestTimeoutMs }),
    outsideBodiesVerbatim: false,
    close: () => engine.close(),
  }
}

// Five rounds of each 50-writer race, not twenty: dynalite serves them one by one, ~1 s a round.
describeLockStoreContract('dynalite', dynaliteTarget, { raceRounds: 5 })
describeTokenAttacks('dynalite', dynaliteTarget)
