import { HeadObjectCommand, type S3Client } from '@aws-sdk/client-s3'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { FencedWriteRejectedError, fencedPut } from '../../lib/s3/index.js'
import { freshBucket, getRaw, testS3Client } from '../support/s3.js'

let s3: S3Client
let bucket: string

beforeAll(async () => {
  s3 = testS3Client()
  bucket = await freshBucket(s3, 'fenced-aba')
})

afterAll(() => s3.destroy())

/** Where a held PUT waits: in the SDK's stack before it is sent, or on the wire after the last check. */
type Hold = 'before-send' | 'on-the-wire'

/** A client whose PutObjects wait until `open()`: a holder paused between its HEAD and its PUT. */
function pausedWriter(where: Hold) {
  const client = testS3Client()
  let open = () => {}
  const opened = new Promise<void>((resolve) => {
    open = resolve
  })
  let reached = () => {}
  const held = new Promise<void>((resolve) => {
    reached = resolve
  })
  if (where === 'before-send') {
    client.middlewareStack.add(
      (next, context) => async (args) => {
        if (context.commandName === 'PutObjectCommand') {
          reached()
          await opened
        }
        return next(args)
      },
      { step: 'build', name: 'testPauseBeforeSend' },
    )
  } else {
    const handler = client.config.requestHandler as { handle: (...args: never[]) => Promise<unknown> }
    const handle = handler.handle.bind(handler)
    handler.handle = async (...args: never[]) => {
      if ((args[0] as unknown as { method?: string }).method === 'PUT') {
        reached()
        await opened
      }
      return handle(...args)
    }
  }
  return { client, held, open }
}

async function tokenOf(key: string): Promise<string | undefined> {
  const head = await s3.send(new HeadObjectCommand({ Bucket: bucket, Key: key }))
  return head.Metadata?.['fencing-token']
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

/**
 * Long enough for an object written with readValidityMs 300 or 1000 to be quiet (`isQuiet`: its
 * `Date` a second and two settle delays past its `Last-Modified`, both in whole seconds).
 */
const QUIET_MS = 4_500

describe('fencedPut when a newer holder writes the bytes the object already holds (etag unchanged)', () => {
  it.each([
    ['different bytes', 'stale output'],
    ['the same bytes', 'report: unchanged'],
  ])(
    'refuses a stale holder paused between its read and its write, writing %s: the token stays 300',
    async (_, staleBody) => {
      const key = `out/aba-${staleBody.length}.json`
      await fencedPut({ s3, bucket, key, body: 'report: unchanged', token: 100 })
      const stale = pausedWriter('before-send')
      try {
        const staleWrite = fencedPut({
          s3: stale.client,
          bucket,
          key,
          body: staleBody,
          token: 200,
          readValidityMs: 300,
        }).catch((error: unknown) => error)
        await stale.held // token 200 read the object (token 100) and is about to write
        await fencedPut({ s3, bucket, key, body: 'report: unchanged', token: 300, readValidityMs: 300 })
        await sleep(400) // the stale holder stays paused longer than its read is valid
        stale.open()
        const error = await staleWrite
        expect(error).toBeInstanceOf(FencedWriteRejectedError)
        expect(error).toMatchObject({ token: 200, currentToken: 300 })
        expect(await tokenOf(key)).toBe('300')
        expect((await getRaw(s3, bucket, key)).body).toBe('report: unchanged')
      } finally {
        stale.client.destroy()
      }
    },
  )

  it('does not return before a stale write already on its way has landed, and writes its bytes back over it', async () => {
    const key = 'out/aba-in-flight.json'
    await fencedPut({ s3, bucket, key, body: 'report: unchanged', token: 100 })
    const stale = pausedWriter('on-the-wire')
    try {
      const staleWrite = fencedPut({
        s3: stale.client,
        bucket,
        key,
        body: 'stale output',
        token: 200,
        readValidityMs: 1_000,
      }).catch((error: unknown) => error)
      await stale.held // the stale PUT passed every check and is on the wire
      const newer = fencedPut({
        s3,
        bucket,
        key,
        body: 'report: unchanged',
        token: 300,
        readValidityMs: 1_000,
      })
      await sleep(200)
      stale.open() // it lands after token 300's write: the window the fence admits
      await staleWrite
      const result = await newer
      expect(result.etag).not.toBe('')
      expect(await tokenOf(key)).toBe('300')
      expect((await getRaw(s3, bucket, key)).body).toBe('report: unchanged')
    } finally {
      stale.client.destroy()
    }
  })

  it('keeps a HEAD and a PUT for a write that changes the bytes of an object quiet for seconds, and adds one HEAD and the wait for one that does not, or that follows a write moments ago', async () => {
    const key = 'out/aba-cost.json'
    const counted = testS3Client()
    const sent: string[] = []
    counted.middlewareStack.add(
      (next, context) => async (args) => {
        sent.push(String(context.commandName).replace(/Command$/, ''))
        return next(args)
      },
      { step: 'initialize', name: 'testCount' },
    )
    try {
      await fencedPut({ s3: counted, bucket, key, body: 'a', token: 1, readValidityMs: 300 })
      await sleep(QUIET_MS)
      sent.length = 0
      await fencedPut({ s3: counted, bucket, key, body: 'b', token: 2, readValidityMs: 300 })
      expect(sent).toEqual(['HeadObject', 'PutObject'])
      sent.length = 0
      await fencedPut({ s3: counted, bucket, key, body: 'b', token: 2, readValidityMs: 300 })
      expect(sent, 'the same token rewriting its own bytes moments after').toEqual([
        'HeadObject',
        'PutObject',
        'HeadObject',
      ])
      await sleep(QUIET_MS)
      sent.length = 0
      await fencedPut({ s3: counted, bucket, key, body: 'b', token: 2, readValidityMs: 300 })
      expect(sent, 'the same token rewriting its own bytes, quiet for seconds').toEqual([
        'HeadObject',
        'PutObject',
      ])
      sent.length = 0
      const began = Date.now()
      await fencedPut({ s3: counted, bucket, key, body: 'b', token: 3, readValidityMs: 300 })
      expect(sent).toEqual(['HeadObject', 'PutObject', 'HeadObject'])
      expect(Date.now() - began).toBeGreaterThanOrEqual(380)
    } finally {
      counted.destroy()
    }
  })
})

describe('fencedPut when a newer holder brings back bytes the object held moments before (X, Y, X)', () => {
  it('does not return before a stale write on its way, conditional on the old bytes, has landed, and writes over it', async () => {
    const key = 'out/aba-x-y-x.json'
    await fencedPut({ s3, bucket, key, body: 'report: unchanged', token: 100, readValidityMs: 1_000 })
    await sleep(QUIET_MS)
    const stale = pausedWriter('on-the-wire')
    try {
      // Token 200 read the object (token 100, bytes X) and its PUT, conditional on X's etag, is on the wire.
      const staleWrite = fencedPut({
        s3: stale.client,
        bucket,
        key,
        body: 'stale output',
        token: 200,
        readValidityMs: 1_000,
      }).catch((error: unknown) => error)
      await stale.held
      // Token 300 writes Y, then X again: X's etag is back, and the stale PUT's If-Match passes.
      await fencedPut({ s3, bucket, key, body: 'report: running', token: 300, readValidityMs: 1_000 })
      const newer = fencedPut({
        s3,
        bucket,
        key,
        body: 'report: unchanged',
        token: 300,
        readValidityMs: 1_000,
      })
      await sleep(100)
      stale.open()
      await staleWrite
      await newer
      expect(await tokenOf(key)).toBe('300')
      expect((await getRaw(s3, bucket, key)).body).toBe('report: unchanged')
    } finally {
      stale.client.destroy()
    }
  })
})
