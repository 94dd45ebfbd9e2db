/**
 * What a fault-injecting proxy does to one request once it has chosen the request's fault (or
 * none): answer in the engine's place, cut the connection, or forward it to the real engine and
 * spoil the answer. Shared by the engine tests' `FaultProxy` (faults by rule) and the soak's
 * proxy (faults at random).
 */
import { type Agent, request as httpRequest, type IncomingMessage, type ServerResponse } from 'node:http'
import type { Socket } from 'node:net'

/** What happens to one request instead of forwarding it untouched. */
export type Fault =
  /** Answer with this status and S3 error code, without forwarding. */
  | { readonly kind: 'status'; readonly status: number; readonly code: string }
  /** Hold the request this long before forwarding (client timeouts). */
  | { readonly kind: 'delay'; readonly ms: number }
  /** Close the connection without an answer, without forwarding. */
  | { readonly kind: 'reset' }
  /** Forward it (so a write lands), then close the connection instead of answering. */
  | { readonly kind: 'lose-response' }
  /** Forward it, send the answer's headers and the first bytes of its body, then reset the connection. */
  | { readonly kind: 'cut-body' }
  /** Forward it, send the answer's headers and the first bytes of its body, then send nothing more. */
  | { readonly kind: 'stall-body' }
  /** Forward it, and answer without the `Date` header (as some proxies do). */
  | { readonly kind: 'no-date' }

export interface ForwardOptions {
  /** The real engine's endpoint. */
  readonly upstream: string
  readonly agent?: Agent
  /** Called when the engine cannot be reached (it is restarting); the client's connection is cut. */
  readonly onUpstreamError?: () => void
}

/** Serves `req` (whose body was read already) with `fault`, or forwards it untouched. */
export async function serveWithFault(
  req: IncomingMessage,
  res: ServerResponse,
  body: Buffer,
  fault: Fault | undefined,
  options: ForwardOptions,
): Promise<void> {
  if (fault?.kind === 'status') {
    res.writeHead(fault.status, { 'content-type': 'application/xml' })
    res.end(
      `<?xml version="1.0" encoding="UTF-8"?><Error><Code>${fault.code}</Code><Message>injected</Message></Error>`,
    )
    return
  }
  if (fault?.kind === 'reset') return cut(req.socket)
  if (fault?.kind === 'delay') await new Promise((resolve) => setTimeout(resolve, fault.ms))
  const url = new URL(req.url ?? '/', options.upstream)
  const upstream = httpRequest(
    url,
    { method: req.method, headers: req.headers, agent: options.agent },
    (answer) => {
      if (fault?.kind === 'lose-response') {
        answer.resume()
        answer.on('end', () => cut(req.socket))
        return
      }
      const { date: _, ...undated } = answer.headers
      // Node dates every answer itself unless told not to.
      if (fault?.kind === 'no-date') res.sendDate = false
      if (res.destroyed) return void answer.resume()
      res.writeHead(answer.statusCode ?? 502, fault?.kind === 'no-date' ? undated : answer.headers)
      if (fault?.kind === 'cut-body' || fault?.kind === 'stall-body') {
        answer.once('data', (chunk: Buffer) => {
          answer.destroy()
          res.write(chunk.subarray(0, Math.ceil(chunk.length / 2)))
          if (fault.kind === 'cut-body') setTimeout(() => cut(req.socket), 10)
        })
        if (fault.kind === 'cut-body') answer.once('end', () => cut(req.socket))
        return
      }
      answer.pipe(res)
    },
  )
  upstream.on('error', () => {
    options.onUpstreamError?.()
    cut(req.socket)
  })
  upstream.end(body)
}

/**
 * Cuts a client's connection: with a TCP reset (ECONNRESET on the client) while nothing is
 * pending on it, else with a plain close. A reset of a socket that is already shutting down is
 * refused by libuv and left the process spinning at exit.
 */
export function cut(socket: Socket): void {
  if (socket.destroyed) return
  if (socket.writableEnded || socket.writableLength > 0) socket.destroy()
  else socket.resetAndDestroy()
}

export async function readAll(stream: IncomingMessage): Promise<Buffer> {
  const chunks: Buffer[] = []
  for await (const chunk of stream) chunks.push(chunk as Buffer)
  return Buffer.concat(chunks)
}
