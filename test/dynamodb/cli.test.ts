import type { DynamoDBClient } from '@aws-sdk/client-dynamodb'
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest'
import { runCli } from '../../lib/cli/main.js'
import { DynamoDBLockStore } from '../../lib/dynamodb/index.js'
import { Lock, LockLostError } from '../../lib/index.js'
import { runCliProgram } from '../support/cli.js'
import { freshTable, getItem, putRawItem, testDynamoDBClient } from '../support/dynamodb.js'

let client: DynamoDBClient
let tableName: string
const PARTITION_KEY = 'lock_id'

beforeAll(async () => {
  client = testDynamoDBClient()
  tableName = await freshTable(client, 'cli', { partitionKey: PARTITION_KEY })
})

afterAll(() => client.destroy())

const lock = (key: string, options: { owner?: string; ttlMs?: number } = {}) =>
  new Lock({
    store: new DynamoDBLockStore({ client, tableName, partitionKey: PARTITION_KEY }),
    key,
    ...options,
  })
const item = (key: string) => getItem(client, tableName, { [PARTITION_KEY]: { S: key } })

async function cli(...argv: string[]) {
  const out: string[] = []
  const err: string[] = []
  const code = await runCli([...argv, '--table', tableName, '--partition-key', PARTITION_KEY], {
    dynamodb: client,
    out: (l) => out.push(l),
    err: (l) => err.push(l),
  })
  return { code, out: out.join('\n'), err: err.join('\n') }
}

describe('lambda-singleton CLI on a DynamoDB table (--table)', () => {
  it('inspects a held lock without writing', async () => {
    const lease = await lock('locks/inspect', { owner: 'job/1' }).tryAcquire()
    const before = await item('locks/inspect')
    const { code, out } = await cli('inspect', '--key', 'locks/inspect')
    expect(code).toBe(0)
    expect(JSON.parse(out)).toMatchObject({ token: lease?.token, owner: 'job/1', held: true })
    expect(await item('locks/inspect')).toEqual(before)
    expect((await cli('inspect', '--key', 'locks/none')).code).toBe(1)
  })

  it('force-releases a stuck lock with a higher token, fencing off the old holder', async () => {
    const stuck = await lock('locks/stuck', { ttlMs: 600_000 }).tryAcquire()
    expect((await cli('force-release', '--key', 'locks/stuck', '--owner', 'alice')).code).toBe(0)
    const freed = await item('locks/stuck')
    expect(freed).toMatchObject({ expires_at: { N: '0' }, owner: { S: 'force-released by alice' } })
    const forced = Number(freed?.token?.N)
    expect(forced).toBeGreaterThan(stuck?.token ?? Number.POSITIVE_INFINITY)
    await expect(stuck?.release()).rejects.toBeInstanceOf(LockLostError)
    expect((await lock('locks/stuck').tryAcquire())?.token).toBeGreaterThan(forced)
  })

  it('shows an item it cannot read and resets it only with an explicit token', async () => {
    await putRawItem(client, tableName, { [PARTITION_KEY]: { S: 'locks/corrupt' } }, '{"token":"five"}')
    const refused = await cli('inspect', '--key', 'locks/corrupt')
    expect(refused.code).toBe(1)
    expect(refused.err).toMatch(/LockCorruptedError/)
    expect((await cli('reset', '--key', 'locks/corrupt')).code).toBe(2)
    // It shows no expiry, so only a forced reset replaces it.
    expect((await cli('reset', '--key', 'locks/corrupt', '--token', '500')).code).toBe(1)
    expect((await cli('reset', '--key', 'locks/corrupt', '--token', '500', '--force')).code).toBe(0)
    expect((await lock('locks/corrupt').tryAcquire())?.token).toBeGreaterThan(500)
  })

  it('runs as a program, with the engine from AWS_ENDPOINT_URL_DYNAMODB', async () => {
    const target = inject('dynamodb')
    const lease = await lock('locks/program', { owner: 'job/2' }).tryAcquire()
    const stdout = await runCliProgram(
      ['inspect', '--table', tableName, '--partition-key', PARTITION_KEY, '--key', 'locks/program'],
      {
        AWS_ENDPOINT_URL_DYNAMODB: target.endpoint,
        AWS_REGION: target.region,
        AWS_ACCESS_KEY_ID: target.accessKeyId,
        AWS_SECRET_ACCESS_KEY: target.secretAccessKey,
      },
    )
    expect(JSON.parse(stdout)).toMatchObject({ token: lease?.token, owner: 'job/2', held: true })
  })
})
