import type { DynamoDBClient } from '@aws-sdk/client-dynamodb'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { ExitCode } from '../../lib/cli/main.js'
import { DynamoDBLockStore } from '../../lib/dynamodb/index.js'
import { Lock } from '../../lib/index.js'
import { cliIn } from '../support/cli.js'
import { freshTable, getItem, testDynamoDBClient } from '../support/dynamodb.js'
import { leaseOf } from '../support/lease-of.js'

let client: DynamoDBClient
let tableName: string

beforeAll(async () => {
  client = testDynamoDBClient()
  tableName = await freshTable(client, 'cli-sort', { partitionKey: 'id', sortKey: 'kind' })
})

afterAll(() => client.destroy())

const storeFor = (value: string) =>
  new DynamoDBLockStore({ client, tableName, partitionKey: 'id', sortKey: { name: 'kind', value } })
const lock = (key: string, value = 'lock') =>
  new Lock({ store: storeFor(value), key, owner: `job/${value}`, ttlMs: 600_000 })
const item = (key: string, value = 'lock') =>
  getItem(client, tableName, { id: { S: key }, kind: { S: value } })
const cli = (...argv: string[]) =>
  cliIn([...argv, '--table', tableName, '--partition-key', 'id'], { dynamodb: client })

describe('lambda-singleton CLI on a table with a sort key (--sort-key NAME=VALUE)', () => {
  it('cannot reach the locks without --sort-key, and names the option that can', async () => {
    await leaseOf(lock('locks/without').tryAcquire())
    const { code, err } = await cli('inspect', '--key', 'locks/without')
    expect(code).toBe(ExitCode.Configuration)
    expect(err).toContain('--sort-key')
  })

  it('inspects, force-releases and resets the item of its sort key value, leaving the others alone', async () => {
    const key = 'locks/sorted'
    await leaseOf(lock(key).tryAcquire())
    await leaseOf(lock(key, 'other').tryAcquire())
    const other = await item(key, 'other')
    const inspected = await cli('inspect', '--key', key, '--sort-key', 'kind=lock', '--json')
    expect(inspected.code).toBe(ExitCode.Ok)
    expect(JSON.parse(inspected.out)).toMatchObject({ owner: 'job/lock', held: true })
    expect((await cli('force-release', '--key', key, '--sort-key', 'kind=lock')).code).toBe(ExitCode.Ok)
    expect(await item(key)).toMatchObject({ expires_at: { N: '0' } })
    const token = String(Number((await item(key))?.token?.N) + 1)
    const reset = await cli('reset', '--key', key, '--sort-key', 'kind=lock', '--token', token)
    expect(reset.code).toBe(ExitCode.Ok)
    expect(await item(key)).toMatchObject({ token: { N: token } })
    expect(await item(key, 'other')).toEqual(other)
  })

  it('lists the keys of its sort key value only', async () => {
    await leaseOf(lock('listed/a').tryAcquire())
    await leaseOf(lock('listed/b', 'other').tryAcquire())
    const listed = await cli('list', '--prefix', 'listed/', '--sort-key', 'kind=lock', '--json')
    expect(listed.code).toBe(ExitCode.Ok)
    const { locks } = JSON.parse(listed.out) as { locks: { key: string }[] }
    expect(locks.map((entry) => entry.key)).toEqual(['listed/a'])
  })
})
