import { addAbortSignal, Readable } from 'node:stream'

/**
 * Reads an S3 body as UTF-8, stopping after `maxBytes`: a lock key may hold anything, and a
 * stray multi-gigabyte object must not be pulled into a Lambda's memory to learn it is no lock.
 * `signal` ends a body that stalls: the read then rejects, and the connection is closed.
 */
export async function readCapped(body: unknown, maxBytes: number, signal?: AbortSignal): Promise<string> {
  if (body === undefined || body === null) return ''
  if (typeof (body as AsyncIterable<Uint8Array>)[Symbol.asyncIterator] !== 'function') {
    const transform = (body as { transformToString?: () => Promise<string> }).transformToString
    if (typeof transform === 'function') return (await transform.call(body)).slice(0, maxBytes)
    throw new TypeError('S3 body is neither a stream nor transformable to a string')
  }
  if (signal && body instanceof Readable) addAbortSignal(signal, body)
  const chunks: Uint8Array[] = []
  let size = 0
  for await (const chunk of body as AsyncIterable<Uint8Array>) {
    chunks.push(chunk)
    size += chunk.byteLength
    if (size >= maxBytes) break // leaving the loop destroys the stream
  }
  return Buffer.concat(chunks).subarray(0, maxBytes).toString('utf8')
}
