/**
 * The local demo: a scheduled job, invoked five times at once on every tick (duplicate
 * deliveries, retries, a second region...), against a real S3 engine. On each tick one
 * invocation runs, with its fencing token; the others skip. Then a duplicate delivery of a
 * finished tick is skipped, and a zombie that lost its lease is fenced off.
 *
 * Run through `bash scripts/demo.sh`, which provides the engine (or set S3_ENDPOINT).
 */

import { randomUUID } from 'node:crypto'
import { CreateBucketCommand, GetObjectCommand, S3Client } from '@aws-sdk/client-s3'
import middy from '@middy/core'
import type { Context } from 'aws-lambda'
import { isSkipResult, type SingletonContext, type SkipResult, singleton } from 'lambda-singleton/middy'
import { FencedWriteRejectedError, fencedPut, S3Lock, S3LockStore } from 'lambda-singleton/s3'
import { leaseOf } from '../test/support/lease-of.js'

const endpoint = process.env.S3_ENDPOINT
if (!endpoint) {
  console.error('S3_ENDPOINT is not set: run `bash scripts/demo.sh`, which starts the local S3 engine.')
  process.exit(1)
}
const s3 = new S3Client({ endpoint, region: process.env.AWS_REGION ?? 'us-east-1', forcePathStyle: true })
const bucket = `lambda-singleton-demo-${randomUUID().slice(0, 8)}`
await s3.send(new CreateBucketCommand({ Bucket: bucket }))

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

// The job: a "nightly report" that takes a moment and writes its output fenced by its token.
const handler = middy<unknown, { report: string; token: number } | SkipResult, Error, SingletonContext>()
  .use(singleton({ store: new S3LockStore({ s3, bucket }), logger: false }))
  .handler(async (_event, context) => {
    const { tick } = context.singleton
    await sleep(300)
    // Awaited where it is used: by now the store's clock has passed it, so this takes no time.
    const token = await context.singleton.fencingToken()
    const report = `reports/${tick ?? 'adhoc'}.json`
    await fencedPut({ s3, bucket, key: report, body: JSON.stringify({ tick, token }), token })
    return { report, token }
  })

let invocation = 0
const invoke = (event: unknown) => {
  const context: Context = {
    callbackWaitsForEmptyEventLoop: false,
    functionName: 'nightly-report',
    functionVersion: '$LATEST',
    invokedFunctionArn: 'arn:aws:lambda:local:000000000000:function:nightly-report',
    memoryLimitInMB: '256',
    awsRequestId: `req-${++invocation}`,
    logGroupName: 'demo',
    logStreamName: 'demo',
    getRemainingTimeInMillis: () => 30_000,
    done: () => undefined,
    fail: () => undefined,
    succeed: () => undefined,
  }
  return handler(event, context as SingletonContext)
}
const tickEvent = (scheduledTime: string) => ({
  source: 'lambda-singleton.scheduler',
  schedule: 'nightly',
  scheduledTime,
})
const describe = (result: Awaited<ReturnType<typeof invoke>>): string =>
  isSkipResult(result)
    ? `skipped (${result.reason}${result.reason !== 'held' ? '' : result.token === undefined ? ': lost the race for the write' : `, holder token ${result.token}`})`
    : `RAN with token ${result.token} -> s3://${bucket}/${result.report}`

console.log(`lambda-singleton demo against ${endpoint}, bucket ${bucket}\n`)
const ticks = ['2026-11-21T03:00:00Z', '2026-11-22T03:00:00Z', '2026-11-23T03:00:00Z']
for (const tick of ticks) {
  console.log(`tick ${tick}: 5 concurrent invocations`)
  const results = await Promise.all(Array.from({ length: 5 }, () => invoke(tickEvent(tick))))
  for (const [i, result] of results.entries()) console.log(`  invocation ${i + 1}: ${describe(result)}`)
  const ran = results.filter((r) => !isSkipResult(r)).length
  if (ran !== 1) throw new Error(`expected exactly one run on tick ${tick}, got ${ran}`)
}

console.log(`\nlate duplicate delivery of tick ${ticks[0]}:`)
console.log(`  ${describe(await invoke(tickEvent(ticks[0] ?? '')))}`)

console.log('\na zombie: a run whose lease expired while it was paused, and a successor')
const zombieLock = new S3Lock({ s3, bucket, key: 'locks/compaction', ttlMs: 1_500, clockSkewMarginMs: 200 })
const zombie = await leaseOf(zombieLock.tryAcquire())
const zombieToken = await zombie?.fencingToken() // read before it paused
await sleep(4_000) // the zombie's ttl, both margins, and the Date header's one-second resolution
const successor = await leaseOf(
  new S3Lock({
    s3,
    bucket,
    key: 'locks/compaction',
    clockSkewMarginMs: 200,
  }).tryAcquire(),
)
const successorToken = await successor?.fencingToken()
console.log(`  zombie token ${zombieToken}, successor token ${successorToken}`)
await fencedPut({ s3, bucket, key: 'compacted/part-0', body: 'successor', token: successorToken ?? 0 })
try {
  await fencedPut({ s3, bucket, key: 'compacted/part-0', body: 'zombie', token: zombieToken ?? 0 })
  throw new Error('the zombie write went through')
} catch (error) {
  if (!(error instanceof FencedWriteRejectedError)) throw error
  console.log(`  zombie write refused: ${error.message}`)
}
await zombie?.release().catch((error: Error) => console.log(`  zombie release refused: ${error.name}`))
await successor?.release()

const lock = await s3.send(new GetObjectCommand({ Bucket: bucket, Key: 'locks/nightly-report' }))
console.log(`\nlock object s3://${bucket}/locks/nightly-report:\n  ${await lock.Body?.transformToString()}`)
s3.destroy()
