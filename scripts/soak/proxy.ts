/**
 * The soak's fault-injecting HTTP proxy in front of radosgw. Every worker talks to S3 through it;
 * a small share of requests meets a fault, drawn at random by the configured rates. While
 * radosgw restarts, requests fail as they would against a dead endpoint (connection reset).
 */
import { Agent, createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import { cut, type Fault, readAll, serveWithFault } from '../../test/support/fault-forwarding.js'
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

/** What each fault the soak draws does to its request. */
const FAULTS: Record<ProxyFault, (delayMs: () => number) => Fault> = {
  [FaultKind.Reset]: () => ({ kind: 'reset' }),
  [FaultKind.SlowDown]: () => ({ kind: 'status', status: 503, code: 'SlowDown' }),
  [FaultKind.Internal]: () => ({ kind: 'status', status: 500, code: 'InternalError' }),
  [FaultKind.Delay]: (delayMs) => ({ kind: 'delay', ms: delayMs() }),
  [FaultKind.NoDate]: () => ({ kind: 'no-date' }),
  [FaultKind.LoseResponse]: () => ({ kind: 'lose-response' }),
  [FaultKind.CutBody]: () => ({ kind: 'cut-body' }),
}

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
    const body = await readAll(req).catch(() => undefined)
    if (!body) return cut(req.socket)
    const drawn = this.#draw(method)
    if (drawn) this.options.onFault(drawn, `${method} ${req.url ?? '/'}`)
    const kind = drawn ?? (Date.now() < this.#stripDatesUntil ? FaultKind.NoDate : undefined)
    const [low, high] = this.options.delayMs
    const fault = kind && FAULTS[kind](() => between(this.options.random, low, high))
    await serveWithFault(req, res, body, fault, {
      upstream: this.options.upstream,
      agent: this.#agent,
      onUpstreamError: () => this.upstreamFailures++,
    })
  }
}
