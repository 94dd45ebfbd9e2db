import { createHash } from 'node:crypto'
import { PutObjectCommand, type S3Client } from '@aws-sdk/client-s3'
import { describe, expect, it } from 'vitest'
import { fencedPut } from '../../lib/s3/index.js'

/**
 * One object in memory behind `send`, as S3 keeps it: the etag is the body's MD5, so the same bytes
 * keep it. `lose` names the PutObjects (by count) whose answer is lost after they land.
 */
function stubS3(lose: ReadonlySet<number> = new Set()) {
  let object: { body: string; etag: string; token: string } | undefined
  const sent: string[] = []
  let puts = 0
  const client = {
    async send(command: { constructor: { name: string }; input: Record<string, unknown> }) {
      const name = command.constructor.name.replace(/Command$/, '')
      sent.push(name)
      const input = command.input as {
        Body?: string
        IfMatch?: string
        IfNoneMatch?: string
        Metadata?: Record<string, string>
      }
      if (name === 'HeadObject') {
        if (!object)
          throw Object.assign(new Error('NotFound'), { name: 'NotFound', $metadata: { httpStatusCode: 404 } })
        return { ETag: `"${object.etag}"`, Metadata: { 'fencing-token': object.token } }
      }
      const fails = input.IfNoneMatch ? object !== undefined : input.IfMatch !== object?.etag
      if (fails) {
        throw Object.assign(new Error('PreconditionFailed'), {
          name: 'PreconditionFailed',
          $metadata: { httpStatusCode: 412 },
        })
      }
      const body = String(input.Body)
      object = {
        body,
        etag: createHash('md5').update(body).digest('hex'),
        token: input.Metadata?.['fencing-token'] ?? '',
      }
      if (lose.has(++puts)) throw Object.assign(new Error('socket hang up'), { code: 'ECONNRESET' })
      return { ETag: `"${object.etag}"` }
    },
  }
  return { s3: client as unknown as S3Client, sent, current: () => object }
}

/** A stale holder's PUT (token 200) conditional on `etag`, which it read before: it lands while the object shows that etag. */
function staleWrite(s3: S3Client, etag: string | undefined) {
  return s3.send(
    new PutObjectCommand({
      Bucket: 'b',
      Key: 'k',
      Body: 'stale',
      IfMatch: etag,
      Metadata: { 'fencing-token': '200' },
    }),
  )
}

describe('fencedPut settling a write that left the etag unchanged (in memory)', () => {
  it('still waits and looks again when the answer to that write was lost and the next round finds its own token', async () => {
    const stub = stubS3(new Set([2]))
    await fencedPut({ s3: stub.s3, bucket: 'b', key: 'k', body: 'same', token: 100 })
    stub.sent.length = 0
    const began = Date.now()
    await fencedPut({ s3: stub.s3, bucket: 'b', key: 'k', body: 'same', token: 300, readValidityMs: 200 })
    expect(stub.sent).toEqual(['HeadObject', 'PutObject', 'HeadObject', 'PutObject', 'HeadObject'])
    expect(Date.now() - began).toBeGreaterThanOrEqual(270)
    expect(stub.current()?.token).toBe('300')
  })

  it('waits and looks again after any write over an object that cannot be told quiet (no Last-Modified or Date)', async () => {
    const stub = stubS3()
    await fencedPut({ s3: stub.s3, bucket: 'b', key: 'k', body: 'same', token: 7 })
    stub.sent.length = 0
    await fencedPut({ s3: stub.s3, bucket: 'b', key: 'k', body: 'other', token: 7, readValidityMs: 50 })
    expect(stub.sent).toEqual(['HeadObject', 'PutObject', 'HeadObject'])
  })

  it('waits out a stale write conditional on bytes it brings back (X, Y, X), and writes over it', async () => {
    const stub = stubS3()
    await fencedPut({ s3: stub.s3, bucket: 'b', key: 'k', body: 'X', token: 100 })
    const etagOfX = stub.current()?.etag
    await fencedPut({ s3: stub.s3, bucket: 'b', key: 'k', body: 'Y', token: 300, readValidityMs: 200 })
    const newer = fencedPut({
      s3: stub.s3,
      bucket: 'b',
      key: 'k',
      body: 'X',
      token: 300,
      readValidityMs: 200,
    })
    await new Promise((resolve) => setTimeout(resolve, 50))
    // Token 200 read X under token 100 before token 300 came; its PUT, sent within its read
    // validity, lands now: X's etag is back, so If-Match lets it through.
    await staleWrite(stub.s3, etagOfX)
    expect(stub.current()?.token).toBe('200')
    await newer
    expect(stub.current()).toMatchObject({ body: 'X', token: '300' })
  })

  it('waits out a settle it owes, and writes back over a stale write, even when its signal aborts meanwhile (the lease ended)', async () => {
    const stub = stubS3()
    await fencedPut({ s3: stub.s3, bucket: 'b', key: 'k', body: 'X', token: 100 })
    const etagOfX = stub.current()?.etag
    await fencedPut({ s3: stub.s3, bucket: 'b', key: 'k', body: 'Y', token: 300, readValidityMs: 200 })
    const lease = new AbortController()
    const newer = fencedPut({
      s3: stub.s3,
      bucket: 'b',
      key: 'k',
      body: 'X',
      token: 300,
      readValidityMs: 200,
      signal: lease.signal,
    })
    await new Promise((resolve) => setTimeout(resolve, 50))
    await staleWrite(stub.s3, etagOfX)
    // Abandoned here, token 200 would stay over the Y that token 300's earlier call returned with.
    lease.abort(new Error('lease ended'))
    await newer
    expect(stub.current()).toMatchObject({ body: 'X', token: '300' })
  })

  it('waits out a settle it owes even past timeoutMs: else a call again would owe it again, and fail for good', async () => {
    const stub = stubS3()
    await fencedPut({ s3: stub.s3, bucket: 'b', key: 'k', body: 'same', token: 100 })
    stub.sent.length = 0
    const began = Date.now()
    const options = { s3: stub.s3, bucket: 'b', key: 'k', body: 'same', token: 300 }
    await fencedPut({ ...options, readValidityMs: 200, timeoutMs: 150 })
    expect(Date.now() - began).toBeGreaterThanOrEqual(270)
    expect(stub.sent).toEqual(['HeadObject', 'PutObject', 'HeadObject'])
    expect(stub.current()?.token).toBe('300')
  })

  it('says, when a stale write landed while it settled and its time is out, that it may be overwritten: call again', async () => {
    const stub = stubS3()
    await fencedPut({ s3: stub.s3, bucket: 'b', key: 'k', body: 'same', token: 100 })
    const etag = stub.current()?.etag
    const cut = fencedPut({
      s3: stub.s3,
      bucket: 'b',
      key: 'k',
      body: 'same',
      token: 300,
      readValidityMs: 200,
      timeoutMs: 150,
    })
    await new Promise((resolve) => setTimeout(resolve, 50))
    await staleWrite(stub.s3, etag)
    await expect(cut).rejects.toMatchObject({
      name: 'LockStoreError',
      retryable: true,
      message: expect.stringMatching(/waiting out stale writes.*call again/),
    })
    await fencedPut({ s3: stub.s3, bucket: 'b', key: 'k', body: 'same', token: 300, readValidityMs: 200 })
    expect(stub.current()).toMatchObject({ body: 'same', token: '300' })
  })

  it.each([0, -1, Number.NaN])(
    'refuses a readValidityMs of %s before any request',
    async (readValidityMs) => {
      const stub = stubS3()
      await expect(
        fencedPut({ s3: stub.s3, bucket: 'b', key: 'k', body: 'x', token: 1, readValidityMs }),
      ).rejects.toMatchObject({ name: 'LockOptionsError' })
      expect(stub.sent).toEqual([])
    },
  )
})

describe('fencedPut given the lease (in memory)', () => {
  it('awaits the lease’s token, then writes with it; timeoutMs counts from then', async () => {
    const stub = stubS3()
    const asked: string[] = []
    const lease = {
      fencingToken: async () => {
        asked.push('fencingToken')
        await new Promise((resolve) => setTimeout(resolve, 150)) // the wait for the store's clock
        stub.sent.length = 0
        return 42
      },
    }
    await fencedPut({ s3: stub.s3, bucket: 'b', key: 'k', body: 'x', lease, timeoutMs: 100 })
    expect(asked).toEqual(['fencingToken'])
    expect(stub.sent).toEqual(['HeadObject', 'PutObject'])
    expect(stub.current()?.token).toBe('42')
  })

  it('rejects, writing nothing, when the lease refuses its token (lost)', async () => {
    const stub = stubS3()
    const lost = Object.assign(new Error('lost'), { name: 'LockLostError' })
    const lease = { fencingToken: () => Promise.reject(lost) }
    await expect(fencedPut({ s3: stub.s3, bucket: 'b', key: 'k', body: 'x', lease })).rejects.toBe(lost)
    expect(stub.sent).toEqual([])
  })

  it('says what to pass when given neither a lease nor a token (a handler still reading context.singleton.token)', async () => {
    const stub = stubS3()
    const options = { s3: stub.s3, bucket: 'b', key: 'k', body: 'x', token: undefined as unknown as number }
    await expect(fencedPut(options)).rejects.toThrow(/got undefined \(pass lease: context\.singleton/)
    expect(stub.sent).toEqual([])
  })
})
