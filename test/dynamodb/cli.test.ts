import type { DynamoDBClient } from '@aws-sdk/client-dynamodb'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { ExitCode } from '../../lib/cli/main.js'
import { DynamoDBLockStore } from '../../lib/dynamodb/index.js'
import { Lock, LockLostError } from '../../lib/index.js'
import { cliIn, runCliProgram, WatchingCli } from '../support/cli.js'
import { dynamodbProgramEnv } from '../support/cli-engines.js'
import { freshTable, getItem, putRawItem, testDynamoDBClient } from '../support/dynamodb.js'
import { leaseOf } from '../support/lease-of.js'

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
const tokenOf = async (key: string) => Number((await item(key))?.token?.N)
const table = () => ['--table', tableName, '--partition-key', PARTITION_KEY]
const cli = (...argv: string[]) => cliIn([...argv, ...table()], { dynamodb: client })

describe('lambda-singleton CLI on a DynamoDB table (--table)', () => {
  it('inspects a held lock without writing', async () => {
    await leaseOf(lock('locks/inspect', { owner: 'job/1', ttlMs: 600_000 }).tryAcquire())
    const before = await item('locks/inspect')
    const { code, out } = await cli('inspect', '--key', 'locks/inspect', '--json')
    expect(code).toBe(ExitCode.Ok)
    expect(JSON.parse(out)).toMatchObject({
      token: await tokenOf('locks/inspect'),
      owner: 'job/1',
      held: true,
    })
    expect(JSON.parse(out).expiresInMs).toBeGreaterThan(500_000)
    expect(await item('locks/inspect')).toEqual(before)
  })

  it('says plainly that there is no lock, with its own exit code', async () => {
    expect(await cli('inspect', '--key', 'locks/none')).toEqual({
      code: ExitCode.NotFound,
      out: '',
      err: `LockNotFoundError: no lock "locks/none" in table ${tableName} (partition key ${PARTITION_KEY})`,
    })
  })

  it('force-releases a held lock, raising its token and fencing off the old holder', async () => {
    const stuck = await leaseOf(lock('locks/stuck', { ttlMs: 600_000 }).tryAcquire())
    expect((await cli('force-release', '--key', 'locks/stuck', '--owner', 'alice')).code).toBe(ExitCode.Ok)
    expect(await item('locks/stuck')).toMatchObject({
      expires_at: { N: '0' },
      owner: { S: 'force-released by alice' },
    })
    const forced = await tokenOf('locks/stuck')
    expect(forced).toBeGreaterThan(stuck?.record.token ?? Number.POSITIVE_INFINITY)
    await expect(stuck?.release()).rejects.toBeInstanceOf(LockLostError)
    expect((await leaseOf(lock('locks/stuck').tryAcquire()))?.record.token).toBeGreaterThan(forced)
  })

  it('force-releases the lease it judged though its stuck holder renews between the look and the write', async () => {
    const stuck = await leaseOf(lock('locks/renewing', { ttlMs: 600_000, owner: 'stuck-run' }).tryAcquire())
    const watched = testDynamoDBClient()
    const reads: string[] = []
    watched.middlewareStack.add(
      (send, context) => async (args) => {
        if (context.commandName === 'GetItemCommand' && reads.push(context.commandName) === 2)
          await stuck?.renew()
        return send(args)
      },
      { step: 'initialize' },
    )
    const released = await cliIn(
      ['force-release', '--key', 'locks/renewing', '--owner', 'alice', ...table()],
      {
        dynamodb: watched,
      },
    )
    watched.destroy()
    expect(reads).toHaveLength(2)
    expect(released).toMatchObject({ code: ExitCode.Ok, err: '' })
    expect(await item('locks/renewing')).toMatchObject({
      expires_at: { N: '0' },
      owner: { S: 'force-released by alice' },
    })
    await expect(stuck?.renew()).rejects.toMatchObject({ reason: 'released-by-operator' })
  })

  it('leaves a lock that is not held alone and says so, unless --force', async () => {
    await leaseOf(lock('locks/free', { owner: 'done' }).tryAcquire()).then((lease) => lease?.release())
    const before = await item('locks/free')
    const refused = await cli('force-release', '--key', 'locks/free')
    expect(refused).toMatchObject({
      code: ExitCode.Refused,
      err: expect.stringMatching(/is not held \(released/),
    })
    expect(await item('locks/free')).toEqual(before)
    expect((await cli('force-release', '--key', 'locks/free', '--force')).code).toBe(ExitCode.Ok)
    expect(await tokenOf('locks/free')).toBeGreaterThan(Number(before?.token?.N))
  })

  it('shows an item it cannot read and resets it only with an explicit token', async () => {
    await putRawItem(client, tableName, { [PARTITION_KEY]: { S: 'locks/corrupt' } }, '{"token":"five"}')
    const refused = await cli('inspect', '--key', 'locks/corrupt')
    expect(refused.code).toBe(ExitCode.Corrupted)
    expect(refused.err).toMatch(/LockCorruptedError/)
    expect((await cli('reset', '--key', 'locks/corrupt')).code).toBe(ExitCode.Usage)
    // It shows no expiry, so only a forced reset replaces it.
    expect((await cli('reset', '--key', 'locks/corrupt', '--token', '500')).code).toBe(ExitCode.Refused)
    expect((await cli('reset', '--key', 'locks/corrupt', '--token', '500', '--force')).code).toBe(ExitCode.Ok)
    expect((await leaseOf(lock('locks/corrupt').tryAcquire()))?.record.token).toBeGreaterThan(500)
  })

  it('refuses to force-release an item whose token ran ahead of the clock, and resets it back to the clock', async () => {
    const ahead = Date.now() + 3_600_000
    const outside = JSON.stringify({ v: 1, token: ahead, expires_at: 0, owner: 'script' })
    await putRawItem(client, tableName, { [PARTITION_KEY]: { S: 'locks/ahead' } }, outside)
    expect(await cli('force-release', '--key', 'locks/ahead', '--force')).toMatchObject({
      code: ExitCode.Refused,
      err: expect.stringMatching(/LockConflictError: .*more than 10 s ahead.*--back-to-clock/),
    })
    expect(await tokenOf('locks/ahead')).toBe(ahead)
    expect((await cli('reset', '--key', 'locks/ahead', '--token', String(ahead - 1))).code).toBe(
      ExitCode.Refused,
    )
    const reset = await cli('reset', '--key', 'locks/ahead', '--back-to-clock')
    expect(reset.code).toBe(ExitCode.Ok)
    expect(await tokenOf('locks/ahead')).toBeLessThan(ahead)
    expect((await leaseOf(lock('locks/ahead').tryAcquire()))?.record.token).toBeLessThan(ahead)
  })
})

describe('lambda-singleton list and watch on a DynamoDB table', () => {
  beforeAll(async () => {
    await leaseOf(lock('jobs/a', { owner: 'run/a', ttlMs: 600_000 }).tryAcquire())
    await leaseOf(lock('jobs/b', { owner: 'run/b' }).tryAcquire()).then((lease) => lease?.release())
    await leaseOf(lock('other/c', { owner: 'run/c' }).tryAcquire())
  })

  it('lists the locks whose key starts with the prefix, by a Scan', async () => {
    const { code, out } = await cli('list', '--prefix', 'jobs/')
    expect(code).toBe(ExitCode.Ok)
    const rows = out.split('\n').map((line) => line.split(/\s{2,}/))
    expect(rows.map((row) => row.slice(0, 4))).toEqual([
      ['KEY', 'STATE', 'HOLDER', 'TOKEN'],
      ['jobs/a', 'held', 'run/a', String(await tokenOf('jobs/a'))],
      ['jobs/b', 'free', 'run/b', String(await tokenOf('jobs/b'))],
    ])
  })

  it('follows the Scan across pages, past items outside the prefix', async () => {
    const store = new DynamoDBLockStore({ client, tableName, partitionKey: PARTITION_KEY })
    expect(await store.listKeys('jobs/', { pageSize: 1 })).toEqual(['jobs/a', 'jobs/b'])
  })

  it('watches with --json, one document per refresh, until interrupted', async () => {
    const watch = new WatchingCli(['watch', '--prefix', 'jobs/', '--interval', '0.2', '--json', ...table()], {
      dynamodb: client,
    })
    const keysIn = (frame: string) => JSON.parse(frame).locks.map((shown: { key: string }) => shown.key)
    expect(keysIn(await watch.waitFor(/./))).toEqual(['jobs/a', 'jobs/b'])
    await leaseOf(lock('jobs/c', { owner: 'run/new' }).tryAcquire())
    expect(keysIn(await watch.waitFor(/jobs\/c/))).toEqual(['jobs/a', 'jobs/b', 'jobs/c'])
    expect(await watch.stop()).toBe(ExitCode.Ok)
    for (const frame of watch.frames) expect(frame).not.toContain('\n')
    expect(watch.errors).toEqual([])
  })
})

describe('lambda-singleton as a program on a DynamoDB table', () => {
  const env = dynamodbProgramEnv

  it('runs with the engine from AWS_ENDPOINT_URL_DYNAMODB', async () => {
    await leaseOf(lock('locks/program', { owner: 'job/2' }).tryAcquire())
    const { code, stdout } = await runCliProgram(
      ['inspect', ...table(), '--key', 'locks/program', '--json'],
      env(),
    )
    expect(code).toBe(ExitCode.Ok)
    expect(JSON.parse(stdout)).toMatchObject({ key: 'locks/program', owner: 'job/2', held: true })
  })

  it('names a missing region as configuration', async () => {
    const { AWS_REGION: _region, ...noRegion } = env()
    const { code, stderr } = await runCliProgram(['list', ...table()], noRegion)
    expect(code).toBe(ExitCode.Configuration)
    expect(stderr).toMatch(/^ConfigurationError: no AWS region/)
  })
})
