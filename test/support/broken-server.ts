import { createServer, type Server, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'

/** How the server breaks the body of every answer it starts. */
export const BodyFault = {
  /** Sends the headers and part of the body, then resets the connection. */
  Cut: 'cut',
  /** Sends the headers and part of the body, then nothing more, holding the connection open. */
  Stall: 'stall',
} as const
export type BodyFault = (typeof BodyFault)[keyof typeof BodyFault]

/** What the client is told it will get, and the part of it that is sent. */
const DECLARED_LENGTH = 4096
const PARTIAL_BODY = '{"v":1,"token":1,"expi'

/**
 * A real HTTP server that answers every request with a 200 whose body breaks off: the answer a
 * client sees when a connection drops or hangs after the response headers. The headers are
 * those of a good GetObject (an ETag, a Date), so that only the body can fail.
 */
export class BrokenBodyServer {
  readonly #server: Server
  readonly #open = new Set<ServerResponse>()
  /** Requests received, by method. */
  readonly seen: string[] = []

  private constructor(readonly fault: BodyFault) {
    this.#server = createServer((request, response) => {
      this.seen.push(request.method ?? '')
      request.resume()
      response.writeHead(200, {
        'content-type': 'application/json',
        'content-length': String(DECLARED_LENGTH),
        etag: '"0123456789abcdef0123456789abcdef"',
        date: new Date().toUTCString(),
      })
      response.write(PARTIAL_BODY)
      if (fault === BodyFault.Cut) setTimeout(() => response.socket?.resetAndDestroy(), 20)
      else this.#open.add(response)
    })
  }

  static async start(fault: BodyFault): Promise<BrokenBodyServer> {
    const server = new BrokenBodyServer(fault)
    await new Promise<void>((resolve) => server.#server.listen(0, '127.0.0.1', resolve))
    return server
  }

  get endpoint(): string {
    return `http://127.0.0.1:${(this.#server.address() as AddressInfo).port}`
  }

  async close(): Promise<void> {
    for (const response of this.#open) response.destroy()
    this.#server.closeAllConnections()
    await new Promise((resolve) => this.#server.close(resolve))
  }
}
