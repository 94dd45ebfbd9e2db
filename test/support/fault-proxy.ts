import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import { type Fault, readAll, serveWithFault } from './fault-forwarding.js'

export type { Fault } from './fault-forwarding.js'

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

  async #handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    this.seen.push(req.method ?? '')
    const index = this.#rules.findIndex((rule) => rule.method === req.method)
    const fault = index >= 0 ? this.#rules.splice(index, 1)[0]?.fault : undefined
    await serveWithFault(req, res, await readAll(req), fault, { upstream: this.upstream })
  }
}
