import { createHash } from 'node:crypto'
import { S3Client, type S3ClientConfig } from '@aws-sdk/client-s3'
import { FENCING_TOKEN_METADATA } from '../../lib/s3/fenced-put.js'
import { DEFAULT_READ_VALIDITY_MS, settleDelayMs } from '../../lib/s3/read-validity.js'
import type { StoreFaults } from './sim-store.js'
import type { Random, SimProcess, World } from './world.js'

/**
 * The objects that runs write with `fencedPut`, as S3 keeps them: the etag is the MD5 of the
 * body (so identical bytes keep it), and the writer's token rides in user metadata. Each process
 * gets a real `S3Client` whose request handler is this model, so the whole SDK stack runs,
 * `fencedPut`'s read-validity guard included, on simulated time.
 */
export interface OutputObject {
  readonly body: string
  readonly etag: string
  readonly token: number | undefined
  /** When the write that left it landed (the store's clock, which is true time here). */
  readonly modifiedAt: number
}

/** One PUT the model applied, for the oracle and the trace. */
export interface OutputWrite {
  readonly at: number
  readonly by: string
  readonly key: string
  readonly token: number | undefined
  readonly body: string
}

interface Request {
  readonly method: string
  readonly path: string
  readonly headers: Record<string, string>
  readonly body?: unknown
}

interface Response {
  readonly statusCode: number
  readonly headers: Record<string, string>
  readonly body: Uint8Array
}

const LATENCY_MS = 15
const SLOW_MS = 1_500
const BUCKET = 'sim-outputs'
/** In a world whose network is ever slow, the chance that it holds any conditional PUT (`#heldUntil`). */
const HELD_PUT = 0.3

export class SimS3 {
  readonly bucket = BUCKET
  readonly #objects = new Map<string, OutputObject>()
  readonly log: OutputWrite[] = []
  onWrite: (write: OutputWrite) => void = () => {}
  onFreeze: (process: SimProcess, forMs: number) => void = () => {}
  onHold: (process: SimProcess, forMs: number, superseded: boolean) => void = () => {}
  /**
   * Whether a newer lease than the one `token` came with was written at the lock store: the
   * network, as an adversary, holds such a writer's conditional PUTs (`#heldUntil`).
   */
  superseded: (token: number) => boolean = () => false
  /** The `readValidityMs` (R) every writer of the outputs uses: `fencedPut`'s default. */
  readonly readValidityMs = DEFAULT_READ_VALIDITY_MS
  /** When each process sent its HEADs of each key (true time), for `#heldUntil`. */
  readonly #heads = new Map<string, number[]>()

  constructor(
    readonly world: World,
    readonly faults: () => StoreFaults,
    /** Chance that a process is frozen as an answer reaches it. */
    readonly freezeOnAnswer = 0,
    /**
     * Draws which PUTs the network holds, and for how long (`#heldUntil`): a stream of its own,
     * seeded from the world's seed, so that the world's draws stay as they were until a PUT is
     * held. Without it, nothing is held.
     */
    readonly holds?: Random,
  ) {}

  peek(key: string): OutputObject | undefined {
    return this.#objects.get(key)
  }

  /**
   * A real S3 client for `process`, whose requests cross the simulated network to this model.
   * The SDK's own pipeline runs outside the world, on real async turns (its first request reads
   * the shared config files): from `send` until the request reaches the network, and from the
   * answer until `send` settles, the world waits for it (`World.outsideBegins`), or real time
   * would decide how many events fire meanwhile.
   */
  client(process: SimProcess): S3Client {
    const { world } = this
    const client = new S3Client({
      region: 'us-east-1',
      endpoint: 'http://sim-s3.invalid',
      forcePathStyle: true,
      credentials: { accessKeyId: 'sim', secretAccessKey: 'sim' },
      maxAttempts: 1,
      requestHandler: {
        handle: (request: Request, options?: { abortSignal?: AbortSignal }) => {
          world.outsideEnds()
          return this.#handle(process, request, options?.abortSignal).finally(() => world.outsideBegins())
        },
      },
    } as S3ClientConfig)
    const send = client.send.bind(client) as (...args: unknown[]) => Promise<unknown>
    client.send = ((...args: unknown[]) => {
      world.outsideBegins()
      try {
        return send(...args).finally(() => world.outsideEnds())
      } catch (error) {
        world.outsideEnds()
        throw error
      }
    }) as S3Client['send']
    return client
  }

  /**
   * The request reaches the model after one latency, unless the client gave up first (its
   * connection closed before the request was whole: nothing lands); the answer comes back after
   * another, unless lost. A request or answer lost ends only with the client's own timeout. A
   * conditional PUT may be held on the way (`#heldUntil`).
   */
  #handle(
    process: SimProcess,
    request: Request,
    signal: AbortSignal | undefined,
  ): Promise<{ response: Response }> {
    const { world } = this
    const { random } = world
    const faults = this.faults()
    const latency = () => random.int(1, random.chance(faults.slow) ? SLOW_MS : LATENCY_MS)
    return new Promise((resolve, reject) => {
      const abortError = () => Object.assign(new Error('Request aborted'), { name: 'AbortError' })
      if (signal?.aborted) return reject(abortError())
      let settled = false
      const onAbort = () => {
        if (settled) return
        settled = true
        reject(abortError())
      }
      signal?.addEventListener('abort', onAbort, { once: true })
      const answer = (response: Response) =>
        world.at(world.now + latency(), process, () => {
          if (settled) return
          settled = true
          signal?.removeEventListener('abort', onAbort)
          // Lambda freezes a process at any await: here, with a read in hand and a write to come.
          // The answer is taken up only at the thaw (a process event waits out the freeze).
          if (random.chance(this.freezeOnAnswer)) {
            const forMs = random.int(500, 20_000)
            process.freeze(forMs)
            this.onFreeze(process, forMs)
          }
          world.at(world.now, process, () => resolve({ response }))
        })
      const arrives = world.now + latency()
      const reaches = this.#heldUntil(process, request, arrives)
      world.at(reaches, undefined, () => {
        // A held request whose process died meanwhile does not land: its connection was closed.
        if (settled || (reaches > arrives && !process.alive) || random.chance(faults.lostRequest)) return
        if (random.chance(faults.unavailable)) return answer(this.#error(503, 'SlowDown'))
        if (request.method === 'PUT' && random.chance(faults.conflict)) {
          return answer(this.#error(409, 'ConditionalRequestConflict'))
        }
        const response = this.#apply(process, request)
        if (random.chance(faults.lostAnswer)) return
        answer(random.chance(faults.missingDate) ? response : this.#dated(response))
      })
    })
  }

  /**
   * When a request sent now, due at S3 at `arrives`, reaches it: a PUT conditional on an etag
   * (`If-Match`) may be held on its way, in a world whose network is ever slow. The network holds
   * one such PUT in three for a time drawn at random (a congested connection whose client still
   * waits), and, as an adversary would, every PUT of a holder that a newer lease at the lock store
   * superseded, as long as it may: that is the PUT that can stay on its way across a newer
   * holder's two writes (X, Y, X) and land over the bytes its `If-Match` names again, which the
   * newer holder's `fencedPut` must wait out and write back.
   *
   * Held no longer than `fencedPut` promises to cover: it sends a PUT within R (`readValidityMs`)
   * of the HEAD the PUT is conditioned on and abandons it when R runs out, and settles by waiting
   * 1.1 R + 50 ms, the 10 % and 50 ms for clock rates and a PUT still on its way as its client
   * gives up. So a held PUT reaches S3 at most R after that HEAD on true time (an adversary's 5 ms
   * short of it, so that a client whose clock runs fast has not given up yet), and it does not
   * land once its client gave up or its process died: a request the network holds past its
   * client's abandonment is not promised. The HEAD is the earliest this process sent on the key
   * within 1.1 R + 50 ms, no later than the one the PUT is conditioned on.
   */
  #heldUntil(process: SimProcess, request: Request, arrives: number): number {
    const { world, holds } = this
    if (!holds) return arrives
    const key = `${process.name} ${request.path}`
    const heads = (this.#heads.get(key) ?? []).filter(
      (at) => at >= world.now - settleDelayMs(this.readValidityMs),
    )
    if (request.method === 'HEAD') {
      this.#heads.set(key, [...heads, world.now])
      return arrives
    }
    this.#heads.set(key, heads)
    const headers = lowerCased(request.headers)
    const readAt = heads[0]
    if (request.method !== 'PUT' || headers['if-match'] === undefined || readAt === undefined) return arrives
    if (!(this.faults().slow > 0)) return arrives
    const latest = readAt + this.readValidityMs
    const stale = this.superseded(Number(headers[`x-amz-meta-${FENCING_TOKEN_METADATA}`]))
    if (!stale && !holds.chance(HELD_PUT)) return arrives
    const reaches = stale ? latest - 5 : holds.int(arrives, latest)
    if (reaches <= arrives) return arrives
    this.onHold(process, reaches - world.now, stale)
    return reaches
  }

  #apply(process: SimProcess, request: Request): Response {
    const key = decodeURIComponent(request.path.replace(`/${BUCKET}/`, ''))
    const headers = lowerCased(request.headers)
    const object = this.#objects.get(key)
    const checks = !this.faults().ignoreConditions
    if (request.method === 'HEAD') {
      if (!object) return { statusCode: 404, headers: {}, body: new Uint8Array() }
      return {
        statusCode: 200,
        headers: {
          etag: `"${object.etag}"`,
          'content-length': String(object.body.length),
          // S3's Last-Modified, in whole seconds: dated anywhere from the PUT's start to its landing.
          'last-modified': new Date(object.modifiedAt - (object.modifiedAt % 1_000)).toUTCString(),
          // A broken engine (`ignoreConditions`) also drops user metadata: nothing fences at all.
          ...(object.token !== undefined &&
            checks && { [`x-amz-meta-${FENCING_TOKEN_METADATA}`]: String(object.token) }),
        },
        body: new Uint8Array(),
      }
    }
    if (request.method !== 'PUT') return this.#error(405, 'MethodNotAllowed')
    const ifMatch = headers['if-match']
    if (checks && headers['if-none-match'] === '*' && object) return this.#error(412, 'PreconditionFailed')
    if (checks && ifMatch !== undefined) {
      if (!object) {
        return this.faults().absentAsPreconditionFailed
          ? this.#error(412, 'PreconditionFailed')
          : this.#error(404, 'NoSuchKey')
      }
      if (ifMatch.replaceAll('"', '') !== object.etag) return this.#error(412, 'PreconditionFailed')
    }
    const body = bodyText(request.body)
    const raw = headers[`x-amz-meta-${FENCING_TOKEN_METADATA}`]
    const token = raw === undefined ? undefined : Number(raw)
    const etag = createHash('md5').update(body).digest('hex')
    this.#objects.set(key, { body, etag, token, modifiedAt: this.world.now })
    const write = { at: this.world.now, by: process.name, key, token, body }
    this.log.push(write)
    this.onWrite(write)
    return { statusCode: 200, headers: { etag: `"${etag}"` }, body: new Uint8Array() }
  }

  #error(statusCode: number, code: string): Response {
    const xml = `<?xml version="1.0" encoding="UTF-8"?><Error><Code>${code}</Code><Message>simulated ${code}</Message></Error>`
    return {
      statusCode,
      headers: { 'content-type': 'application/xml' },
      body: new TextEncoder().encode(statusCode === 404 && code === 'NotFound' ? '' : xml),
    }
  }

  /** S3's `Date`: the store's clock (true time), in whole seconds. */
  #dated(response: Response): Response {
    const date = new Date(this.world.now - (this.world.now % 1_000)).toUTCString()
    return { ...response, headers: { ...response.headers, date } }
  }
}

function lowerCased(headers: Record<string, string>): Record<string, string> {
  return Object.fromEntries(Object.entries(headers).map(([name, value]) => [name.toLowerCase(), value]))
}

function bodyText(body: unknown): string {
  if (typeof body === 'string') return body
  if (body instanceof Uint8Array) return new TextDecoder().decode(body)
  throw new Error(`sim-s3: a PUT body the model cannot read: ${Object.prototype.toString.call(body)}`)
}
