import { createServer, request as httpRequest, type IncomingMessage, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'

/** What the proxy does to one matching request instead of forwarding it untouched. */
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

interface Rule {
  readonly method: string
  readonly fault: Fault
}

/**
 * An HTTP proxy in front of the real S3 engine that injects faults into chosen requests, so the
 * store's error paths are driven through the real SDK and its real error parsing.
 */
export class FaultProxy {
  readonly #rules: Rule[] = []
  #server: Server | undefined
  /** Requests seen, by method. */
  readonly seen: string[] = []

  constructor(private readonly upstream: string) {}

  async start(): Promise<string> {
    const server = createServer((req, res) => void this.#handle(req, res))
    this.#server = server
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
    return this.endpoint
  }

  /** Where clients send requests through the proxy, once started. */
  get endpoint(): string {
    const address = this.#server?.address() as AddressInfo | undefined
    if (!address) throw new Error('the proxy is not started')
    return `http://127.0.0.1:${address.port}`
  }

  async stop(): Promise<void> {
    this.#server?.closeAllConnections()
    await new Promise<void>((resolve) => this.#server?.close(() => resolve()) ?? resolve())
  }

  /** The next `times` requests with this method get `fault`. */
  inject(method: 'GET' | 'PUT' | 'HEAD', fault: Fault, times = 1): void {
    for (let i = 0; i < times; i++) this.#rules.push({ method, fault })
  }

  clear(): void {
    this.#rules.length = 0
  }

  async #handle(req: IncomingMessage, res: import('node:http').ServerResponse): Promise<void> {
    this.seen.push(req.method ?? '')
    const index = this.#rules.findIndex((rule) => rule.method === req.method)
    const fault = index >= 0 ? this.#rules.splice(index, 1)[0]?.fault : undefined
    const body = await readAll(req)
    if (fault?.kind === 'status') {
      res.writeHead(fault.status, { 'content-type': 'application/xml', date: new Date().toUTCString() })
      res.end(
        `<?xml version="1.0" encoding="UTF-8"?><Error><Code>${fault.code}</Code><Message>injected</Message></Error>`,
      )
      return
    }
    if (fault?.kind === 'reset') {
      req.socket.destroy()
      return
    }
    if (fault?.kind === 'delay') await new Promise((resolve) => setTimeout(resolve, fault.ms))
    const url = new URL(req.url ?? '/', this.upstream)
    const upstream = httpRequest(url, { method: req.method, headers: req.headers }, (answer) => {
      if (fault?.kind === 'lose-response') {
        answer.resume()
        answer.on('end', () => req.socket.destroy())
        return
      }
      const { date: _, ...undated } = answer.headers
      // Node dates every answer itself unless told not to.
      if (fault?.kind === 'no-date') res.sendDate = false
      res.writeHead(answer.statusCode ?? 502, fault?.kind === 'no-date' ? undated : answer.headers)
      if (fault?.kind === 'cut-body' || fault?.kind === 'stall-body') {
        answer.once('data', (chunk: Buffer) => {
          answer.destroy()
          res.write(chunk.subarray(0, Math.ceil(chunk.length / 2)))
          if (fault.kind === 'cut-body') setTimeout(() => req.socket.resetAndDestroy(), 20)
        })
        return
      }
      answer.pipe(res)
    })
    upstream.on('error', () => req.socket.destroy())
    upstream.end(body)
  }
}

async function readAll(stream: IncomingMessage): Promise<Buffer> {
  const chunks: Buffer[] = []
  for await (const chunk of stream) chunks.push(chunk as Buffer)
  return Buffer.concat(chunks)
}
