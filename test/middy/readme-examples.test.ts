import { HeadObjectCommand, PutObjectCommand, type S3Client } from '@aws-sdk/client-s3'
import { afterAll, beforeAll, describe, expect, inject, it, vi } from 'vitest'
import type { SkipResult } from '../../lib/middy/index.js'
import { lambdaContext, schedulerEvent } from '../support/lambda-context.js'
import { freshBucket, getRecord, testS3Client } from '../support/s3.js'

/**
 * The handlers of the README and docs/api.md, run as they are over several ticks on the S3 engine: a checkpoint
 * pattern must redo its work on every tick (a first version resumed from a checkpoint that was
 * never cleared, so every tick after the first wrote nothing), and a cursor pattern must carry
 * on from where the last tick stopped.
 */
let s3: S3Client
let bucket: string
let readme: typeof import('../../examples/readme/handler.js')
let cursor: typeof import('../../examples/readme/cursor.js')
let replace: typeof import('../../examples/readme/replace.js')

beforeAll(async () => {
  s3 = testS3Client()
  bucket = await freshBucket(s3, 'readme')
  const target = inject('s3')
  // The examples build their S3 clients from the environment, as they would in Lambda.
  vi.stubEnv('AWS_ENDPOINT_URL_S3', target.endpoint)
  vi.stubEnv('AWS_REGION', target.region)
  vi.stubEnv('AWS_ACCESS_KEY_ID', target.accessKeyId)
  vi.stubEnv('AWS_SECRET_ACCESS_KEY', target.secretAccessKey)
  vi.stubEnv('LAMBDA_SINGLETON_BUCKET', bucket)
  vi.stubEnv('OUTPUT_BUCKET', bucket)
  vi.stubEnv('INBOX_BUCKET', bucket)
  vi.stubEnv('PRICES_BUCKET', bucket)
  vi.stubEnv('LAMBDA_SINGLETON_METRICS_NAMESPACE', '')
  readme = await import('../../examples/readme/handler.js')
  cursor = await import('../../examples/readme/cursor.js')
  replace = await import('../../examples/readme/replace.js')
}, 60_000)

afterAll(() => {
  vi.unstubAllEnvs()
  s3?.destroy()
})

const quiet = () => vi.spyOn(console, 'info').mockImplementation(() => undefined)

/** The fencing token each of `keys` carries, in order. */
async function tokensOf(keys: string[]): Promise<number[]> {
  return Promise.all(
    keys.map(async (key) => {
      const head = await s3.send(new HeadObjectCommand({ Bucket: bucket, Key: key }))
      return Number(head.Metadata?.['fencing-token'])
    }),
  )
}

/** Writes `key` unconditionally, as another system would; with a token, as a newer writer's. */
async function putOutside(key: string, token?: number): Promise<void> {
  const metadata = token === undefined ? undefined : { 'fencing-token': String(token) }
  await s3.send(new PutObjectCommand({ Bucket: bucket, Key: key, Body: 'outside', Metadata: metadata }))
}

const parts = Array.from({ length: 10 }, (_, i) => `parts/${i}`)
const lockOf = (key: string) => getRecord(s3, bucket, `locks/${key}`)

describe('README: the checkpoint handler (examples/readme/handler.ts)', () => {
  it('writes all ten parts with its own token on every tick, and leaves no checkpoint behind', async () => {
    quiet()
    const key = 'compact' // the same key in the next spec: both write the same parts
    vi.stubEnv('LAMBDA_SINGLETON_KEY', key)
    const tokens: number[] = []
    for (const time of ['2026-11-21T03:00:00Z', '2026-11-21T04:00:00Z', '2026-11-21T05:00:00Z']) {
      const result = await readme.handler(schedulerEvent(time), lambdaContext())
      expect(result).toMatchObject({ parts: 10 })
      const { token } = result as { token: number }
      tokens.push(token)
      // Every part was written by this tick's run.
      expect(await tokensOf(parts)).toEqual(parts.map(() => token))
      const lock = await lockOf(key)
      expect(lock).toMatchObject({ token, expires_at: 0, last_run: time })
      expect(lock).not.toHaveProperty('state')
    }
    expect(tokens).toEqual([...tokens].sort((a, b) => a - b))
    expect(new Set(tokens).size).toBe(3)
  }, 180_000) // fencedPut waits out its read validity (~2.25 s) for each part rewritten with the same bytes

  it('resumes a failed run from its checkpoint on the retry, then starts afresh on the next tick', async () => {
    quiet()
    vi.spyOn(console, 'error').mockImplementation(() => undefined)
    const key = 'compact'
    vi.stubEnv('LAMBDA_SINGLETON_KEY', key)
    const first = await readme.handler(schedulerEvent('2026-11-22T03:00:00Z'), lambdaContext())
    const { token: before } = first as { token: number }
    // A newer writer's part 6 makes the next run fail there, after its checkpoint of part 5.
    await putOutside('parts/6', Number.MAX_SAFE_INTEGER)
    const tick = schedulerEvent('2026-11-23T03:00:00Z')
    await expect(readme.handler(tick, lambdaContext())).rejects.toMatchObject({
      name: 'FencedWriteRejectedError',
    })
    expect(await lockOf(key)).toMatchObject({ state: { done: 6 }, expires_at: 0 })
    const failedToken = (await lockOf(key)).token as number
    expect(failedToken).toBeGreaterThan(before)

    await putOutside('parts/6') // the obstacle is gone; Lambda retries the tick
    const retried = await readme.handler(tick, lambdaContext())
    const { token: retry } = retried as { token: number }
    expect(retry).toBeGreaterThan(failedToken)
    // Parts 0-5 are the failed run's; the retry took over at part 6.
    expect(await tokensOf(parts)).toEqual(parts.map((_, i) => (i < 6 ? failedToken : retry)))
    expect(await lockOf(key)).not.toHaveProperty('state')

    const next = await readme.handler(schedulerEvent('2026-11-24T03:00:00Z'), lambdaContext())
    const { token: after } = next as { token: number }
    expect(after).toBeGreaterThan(retry)
    expect(await tokensOf(parts)).toEqual(parts.map(() => after))
  }, 180_000) // fencedPut waits out its read validity (~2.25 s) for each part rewritten with the same bytes
})

describe('docs/api.md: the cursor handler (examples/readme/cursor.ts)', () => {
  it('takes in each file once over the ticks, a failed run included, carrying on where the last stopped', async () => {
    quiet()
    vi.spyOn(console, 'error').mockImplementation(() => undefined)
    const key = 'ingest'
    vi.stubEnv('LAMBDA_SINGLETON_KEY', key)
    const file = (n: number) => `inbox/${String(n).padStart(4, '0')}.json`
    const ingest = (time: string) => cursor.handler(schedulerEvent(time), lambdaContext())
    for (const n of [1, 2, 3]) await putOutside(file(n))

    expect(await ingest('2026-11-21T03:00:00Z')).toMatchObject({ ingested: 3 })
    expect(await ingest('2026-11-21T04:00:00Z')).toMatchObject({ ingested: 0 })
    for (const n of [4, 5, 6]) await putOutside(file(n))
    // A newer writer's output for file 5 fails the run after it took in file 4.
    await putOutside('ingested/0005.json', Number.MAX_SAFE_INTEGER)
    await expect(ingest('2026-11-21T05:00:00Z')).rejects.toMatchObject({ name: 'FencedWriteRejectedError' })
    expect(await lockOf(key)).toMatchObject({ cursor: file(4), expires_at: 0 })

    await putOutside('ingested/0005.json')
    const next = (await ingest('2026-11-21T06:00:00Z')) as { ingested: number } | SkipResult
    expect(next).toMatchObject({ ingested: 2 }) // files 5 and 6, not 4 again
    expect(await lockOf(key)).toMatchObject({ cursor: file(6) })
    const [first, , , fourth, , sixth] = await tokensOf(
      [1, 2, 3, 4, 5, 6].map((n) => `ingested/${file(n).slice(6)}`),
    )
    expect(fourth).toBeGreaterThan(first ?? Infinity)
    expect(sixth).toBeGreaterThan(fourth ?? Infinity)
  })
})

describe('docs/api.md: the replacing handler (examples/readme/replace.ts)', () => {
  it('writes its pages fenced by its token, under a renewed lease of 15 s', async () => {
    quiet()
    vi.stubEnv('LAMBDA_SINGLETON_KEY', 'prices')
    const run = replace.handler(schedulerEvent('2026-11-25T03:00:00Z'), lambdaContext())
    const result = (await run) as { pages: number; token: number }
    expect(result.pages).toBe(20)
    const tokens = await tokensOf(Array.from({ length: 20 }, (_, page) => `prices/page-${page}.json`))
    expect(new Set(tokens)).toEqual(new Set([result.token]))
    expect(await lockOf('prices')).toMatchObject({
      ttl_ms: 15_000,
      expires_at: 0,
      last_run: '2026-11-25T03:00:00Z',
    })
  })
})
