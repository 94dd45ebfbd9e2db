import { GetObjectCommand, HeadObjectCommand, PutObjectCommand, type S3Client } from '@aws-sdk/client-s3'
import { describe, expect, it } from 'vitest'
import { WriteStatus } from '../../lib/extend.js'
import { classifyS3Error, S3ErrorKind } from '../../lib/s3/errors.js'
import { S3LockStore } from '../../lib/s3/index.js'

/**
 * A stand-in for an S3 endpoint that, unlike Ceph 16, accepts only quoted etags in If-Match:
 * enough to drive the store's quoting detection, which a single real engine cannot show both ways.
 */
function quotedOnlyEndpoint() {
  const objects = new Map<string, { body: string; etag: string }>()
  let version = 0
  const fail = (name: string, status: number) =>
    Object.assign(new Error(name), { name, $metadata: { httpStatusCode: status } })
  const sent: string[] = []
  const s3 = {
    async send(command: unknown) {
      if (command instanceof GetObjectCommand || command instanceof HeadObjectCommand) {
        sent.push(command.constructor.name)
        const object = objects.get(command.input.Key ?? '')
        if (!object) throw fail('NoSuchKey', 404)
        return { ETag: `"${object.etag}"`, Body: { transformToString: async () => object.body } }
      }
      if (command instanceof PutObjectCommand) {
        const { Key = '', IfMatch, IfNoneMatch, Body } = command.input
        sent.push(`PutObject ${IfMatch ?? IfNoneMatch}`)
        const object = objects.get(Key)
        if (IfNoneMatch === '*' && object) throw fail('PreconditionFailed', 412)
        if (IfMatch !== undefined && (!object || IfMatch !== `"${object.etag}"`))
          throw fail('PreconditionFailed', 412)
        const etag = `e${++version}`
        objects.set(Key, { body: String(Body), etag })
        return { ETag: `"${etag}"` }
      }
      throw new Error('unexpected command')
    },
  }
  return { s3: s3 as unknown as S3Client, sent }
}

describe('S3LockStore', () => {
  it('switches to quoted etags when a 412 comes back for an object that still has the etag it sent', async () => {
    const { s3, sent } = quotedOnlyEndpoint()
    const store = new S3LockStore({ s3, bucket: 'b' })
    const created = await store.create('k', '{}')
    const etag = created.status === WriteStatus.Written ? created.etag : ''
    const replaced = await store.replace('k', '{"n":1}', etag)
    expect(replaced.status).toBe(WriteStatus.Written)
    expect(sent).toEqual(['PutObject *', `PutObject ${etag}`, 'HeadObjectCommand', `PutObject "${etag}"`])
    // Once learned, quoted etags go out first time.
    const next = replaced.status === WriteStatus.Written ? replaced.etag : ''
    sent.length = 0
    await store.replace('k', '{"n":2}', next)
    expect(sent).toEqual([`PutObject "${next}"`])
  })

  it('does not switch quoting when the 412 was a real lost race', async () => {
    const { s3, sent } = quotedOnlyEndpoint()
    const store = new S3LockStore({ s3, bucket: 'b' })
    await store.create('k', '{}')
    const result = await store.replace('k', '{"n":1}', 'someone-elses-etag')
    expect(result.status).toBe(WriteStatus.PreconditionFailed)
    expect(sent).toEqual(['PutObject *', 'PutObject someone-elses-etag', 'HeadObjectCommand'])
  })

  it.each([
    [{ name: 'PreconditionFailed', $metadata: { httpStatusCode: 412 } }, S3ErrorKind.PreconditionFailed],
    [{ name: 'PreconditionFailed', $metadata: { httpStatusCode: 400 } }, S3ErrorKind.PreconditionFailed],
    [{ name: 'Unknown', $metadata: { httpStatusCode: 412 } }, S3ErrorKind.PreconditionFailed],
    [{ name: 'ConditionalRequestConflict', $metadata: { httpStatusCode: 409 } }, S3ErrorKind.Conflict],
    [{ name: 'NoSuchKey', $metadata: { httpStatusCode: 404 } }, S3ErrorKind.NotFound],
    [{ name: 'NoSuchBucket', $metadata: { httpStatusCode: 404 } }, S3ErrorKind.Fatal],
    [{ name: 'AccessDenied', $metadata: { httpStatusCode: 403 } }, S3ErrorKind.Denied],
    [{ name: 'RequestTimeTooSkewed', $metadata: { httpStatusCode: 403 } }, S3ErrorKind.Transient],
    [{ name: 'InvalidRequest', $metadata: { httpStatusCode: 400 } }, S3ErrorKind.Fatal],
    [{ name: 'SlowDown', $metadata: { httpStatusCode: 503 } }, S3ErrorKind.Transient],
    [{ name: 'Whatever', $metadata: { httpStatusCode: 502 } }, S3ErrorKind.Transient],
    [{ name: 'NotImplemented', $metadata: { httpStatusCode: 501 } }, S3ErrorKind.Fatal],
    [{ name: 'TooManyRequestsException', $metadata: { httpStatusCode: 429 } }, S3ErrorKind.Transient],
    [Object.assign(new Error('socket hang up'), { code: 'ECONNRESET' }), S3ErrorKind.Transient],
  ])('classifies %o as %s', (error, kind) => {
    expect(classifyS3Error(error)).toBe(kind)
  })
})
