// Runs a consumer's bundled handler in this Node process, as Lambda would, against the local
// engine, and checks what a user relies on. Copied into each consumer project, so that the SDK it
// imports to make the bucket or table is the project's own.
//
//   node invoke.mjs BUNDLE s3 BUCKET        (AWS_ENDPOINT_URL_S3, AWS_REGION and keys set)
//   node invoke.mjs BUNDLE dynamodb TABLE   (AWS_ENDPOINT_URL_DYNAMODB, AWS_REGION and keys set)
//
// 1. Importing the handler with no LAMBDA_SINGLETON_* variable set does not throw; its first
//    invocation rejects with a LockOptionsError that names the missing variable.
// 2. With the variable set (the same module: the store is built at the first invocation that
//    has it), two concurrent deliveries of one tick: one runs, the other skips.
//    The library's old S3_ENDPOINT points nowhere: the SDK's own AWS_ENDPOINT_URL_S3 must win.
// 3. That tick again: skipped as a duplicate. The next tick: a higher token.
// 4. S3 only: the fenced output carries that token in its metadata.
import { randomUUID } from 'node:crypto'
import { resolve } from 'node:path'
import { pathToFileURL } from 'node:url'

const [bundle, kind, name] = process.argv.slice(2)
if (!bundle || !name || (kind !== 's3' && kind !== 'dynamodb')) {
  console.error('usage: node invoke.mjs BUNDLE s3|dynamodb BUCKET_OR_TABLE')
  process.exit(2)
}
const variable = kind === 's3' ? 'LAMBDA_SINGLETON_BUCKET' : 'LAMBDA_SINGLETON_TABLE'

function fail(message, cause) {
  console.error(`invoke: ${message}`)
  if (cause) console.error(cause)
  process.exit(1)
}

const context = () => ({
  functionName: 'consumer-check',
  functionVersion: '$LATEST',
  awsRequestId: randomUUID(),
  getRemainingTimeInMillis: () => 30_000,
})
const tick = (scheduledTime) => ({ source: 'lambda-singleton.scheduler', schedule: 'nightly', scheduledTime })
const skipped = (result) => result !== null && typeof result === 'object' && result.skipped === true

for (const unset of ['LAMBDA_SINGLETON_BUCKET', 'LAMBDA_SINGLETON_TABLE', 'LAMBDA_SINGLETON_STORE']) {
  delete process.env[unset]
}
// The library's old variable, pointed nowhere: the SDK's own AWS_ENDPOINT_URL_S3 must win.
process.env.S3_ENDPOINT = 'http://127.0.0.1:9'

let handler
try {
  ;({ handler } = await import(pathToFileURL(resolve(bundle)).href))
} catch (error) {
  fail(`importing ${bundle} without ${variable} threw`, error)
}
if (typeof handler !== 'function') fail(`${bundle} exports no handler function`)

const early = await handler(tick('2026-01-01T03:00:00Z'), context()).then(
  (result) => fail(`an invocation without ${variable} answered ${JSON.stringify(result)}`),
  (error) => error,
)
if (early?.name !== 'LockOptionsError' || !String(early.message).includes(variable)) {
  fail(`an invocation without ${variable} must reject with a LockOptionsError naming it`, early)
}

await createStore()
process.env[variable] = name
process.env.OUTPUT_BUCKET = name

const first = tick('2026-01-01T03:00:00Z')
const pair = await Promise.all([handler(first, context()), handler(first, context())])
const ran = pair.filter((result) => !skipped(result))
// The second finds the lock held, or, if the first is already done, the tick done.
if (ran.length !== 1 || !(ran[0].token > 0) || !['held', 'duplicate'].includes(pair.find(skipped)?.reason)) {
  fail(`two deliveries of one tick: expected one run with a token and one skip, got ${JSON.stringify(pair)}`)
}
const again = await handler(first, context())
if (!skipped(again) || again.reason !== 'duplicate') {
  fail(`a tick that completed ran again: ${JSON.stringify(again)}`)
}
const next = await handler(tick('2026-01-01T04:00:00Z'), context())
// Tokens follow the store's clock: the next run's is higher, not necessarily by one.
if (!(next?.token > ran[0].token))
  fail(`the next tick should run with a higher token, got ${JSON.stringify(next)}`)
if (kind === 's3') await checkFencedOutput(next.token)
console.log(`invoke: ${kind} ok: ${JSON.stringify({ pair, again, next })}`)

async function createStore() {
  if (kind === 's3') {
    const { S3Client, CreateBucketCommand } = await import('@aws-sdk/client-s3')
    const s3 = new S3Client({})
    await s3.send(new CreateBucketCommand({ Bucket: name }))
    s3.destroy()
    return
  }
  const { DynamoDBClient, CreateTableCommand } = await import('@aws-sdk/client-dynamodb')
  const dynamodb = new DynamoDBClient({})
  await dynamodb.send(
    new CreateTableCommand({
      TableName: name,
      AttributeDefinitions: [{ AttributeName: 'pk', AttributeType: 'S' }],
      KeySchema: [{ AttributeName: 'pk', KeyType: 'HASH' }],
      BillingMode: 'PAY_PER_REQUEST',
    }),
  )
  dynamodb.destroy()
}

async function checkFencedOutput(token) {
  const { S3Client, HeadObjectCommand } = await import('@aws-sdk/client-s3')
  const s3 = new S3Client({})
  const head = await s3.send(new HeadObjectCommand({ Bucket: name, Key: 'consumer-check/output' }))
  s3.destroy()
  if (head.Metadata?.['fencing-token'] !== String(token)) {
    fail(`the fenced output should carry token ${token}, has ${JSON.stringify(head.Metadata)}`)
  }
}
