/**
 * The soak's fault-injecting HTTP proxy in front of radosgw. Every worker talks to S3 through it;
 * a small share of requests meets a fault, drawn at random by the configured rates. While
 * radosgw restarts, requests fail as they would against a dead endpoint (connection reset).
 */
import {
  Agent,
  createServer,
  request as httpRequest,
  type IncomingMessage,
  type Server,
  type ServerResponse,
} from 'node:http'
import type { AddressInfo, Socket } from 'node:net'
import { FaultKind } from './events.js'
import { between, type Random } from './random.js'

/** Faults the proxy injects into single requests. */
export type ProxyFault =
  | typeof FaultKind.Reset
  | typeof FaultKind.SlowDown
  | typeof FaultKind.Internal
  | typeof FaultKind.Delay
  | typeof FaultKind.NoDate
  | typeof FaultKind.LoseResponse
  | typeof FaultKind.CutBody

/** The chance of each fault per request (cut-body applies to GETs only). */
export type FaultRates = Readonly<Partial<Record<ProxyFault, number>>>

export interface ProxyOptions {
  readonly upstream: string
  readonly rates: FaultRates
  readonly random: Random
  /** A delay fault holds the request this long (ms) before forwarding it, client gone or not. */
  readonly delayMs: readonly [number, number]
  /** Called for every fault injected, with the request's method and path. */
  readonly onFault: (kind: ProxyFault, target: string) => void
}

const S3_ERRORS = {
  [FaultKind.SlowDown]: { status: 503, code: 'SlowDown' },
  [FaultKind.Internal]: { status: 500, code: 'InternalError' },
} as const

export class SoakProxy {
  #server: Server | undefined
  #stripDatesUntil = 0
  readonly #agent = new Agent({ keepAlive: true, maxSockets: 64 })
  /** Requests forwarded or answered, and those that found radosgw down. */
  requests = 0
  upstreamFailures = 0

  constructor(private readonly options: ProxyOptions) {}

  async start(): Promise<string> {
    const server = createServer((req, res) => void this.#handle(req, res))
    this.#server = server
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
    return `http://127.0.0.1:${(server.address() as AddressInfo).port}`
  }

  async stop(): Promise<void> {
    this.#server?.closeAllConnections()
    await new Promise<void>((resolve) => (this.#server ? this.#server.close(() => resolve()) : resolve()))
    this.#agent.destroy()
  }

  /** Strips `Date` from every answer for `ms`: contenders that learned no store time must refuse to judge. */
  stripDatesFor(ms: number): void {
    this.#stripDatesUntil = Date.now() + ms
  }

  #draw(method: string): ProxyFault | undefined {
    let roll = this.options.random()
    for (const [kind, rate] of Object.entries(this.options.rates) as [ProxyFault, number][]) {
      if (kind === FaultKind.CutBody && method !== 'GET') continue
      if (roll < rate) return kind
      roll -= rate
    }
    return undefined
  }

  async #handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    this.requests++
    const method = req.method ?? 'GET'
    const target = `${method} ${req.url ?? '/'}`
    const body = await readAll(req).catch(() => undefined)
    if (!body) return cut(req.socket)
    const drawn = this.#draw(method)
    const fault = drawn ?? (Date.now() < this.#stripDatesUntil ? FaultKind.NoDate : undefined)
    if (drawn) this.options.onFault(drawn, target)
    if (fault === FaultKind.Reset) return cut(req.socket)
    if (fault === FaultKind.SlowDown || fault === FaultKind.Internal) {
      const { status, code } = S3_ERRORS[fault]
      res.writeHead(status, { 'content-type': 'application/xml' })
      res.end(
        `<?xml version="1.0" encoding="UTF-8"?><Error><Code>${code}</Code><Message>soak</Message></Error>`,
      )
      return
    }
    if (fault === FaultKind.Delay) {
      const [low, high] = this.options.delayMs
      await new Promise((resolve) => setTimeout(resolve, between(this.options.random, low, high)))
    }
    this.#forward(req, res, body, fault)
  }

  #forward(req: IncomingMessage, res: ServerResponse, body: Buffer, fault: ProxyFault | undefined): void {
    const url = new URL(req.url ?? '/', this.options.upstream)
    const upstream = httpRequest(
      url,
      { method: req.method, headers: req.headers, agent: this.#agent },
      (answer) => {
        if (fault === FaultKind.LoseResponse) {
          answer.resume()
          answer.on('end', () => cut(req.socket))
          return
        }
        const headers = { ...answer.headers }
        if (fault === FaultKind.NoDate) {
          delete headers.date
          // Node would add a Date of its own to an answer that has none.
          res.sendDate = false
        }
        if (res.destroyed) return void answer.resume()
        res.writeHead(answer.statusCode ?? 502, headers)
        if (fault === FaultKind.CutBody) {
          answer.once('data', (chunk: Buffer) => {
            answer.destroy()
            res.write(chunk.subarray(0, Math.ceil(chunk.length / 2)))
            setTimeout(() => cut(req.socket), 10)
          })
          answer.once('end', () => cut(req.socket))
          return
        }
        answer.pipe(res)
      },
    )
    upstream.on('error', () => {
      this.upstreamFailures++
      cut(req.socket)
    })
    upstream.end(body)
  }
}

/**
 * Cuts a client's connection: with a TCP reset (ECONNRESET on the client) while nothing is
 * pending on it, else with a plain close. A reset of a socket that is already shutting down is
 * refused by libuv and left the process spinning at exit.
 */
function cut(socket: Socket): void {
  if (socket.destroyed) return
  if (socket.writableEnded || socket.writableLength > 0) socket.destroy()
  else socket.resetAndDestroy()
}

async function readAll(stream: IncomingMessage): Promise<Buffer> {
  const chunks: Buffer[] = []
  for await (const chunk of stream) chunks.push(chunk as Buffer)
  return Buffer.concat(chunks)
}
