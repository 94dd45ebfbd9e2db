import { createServer, type Server, type Socket } from 'node:net'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { LockStoreError } from '../../lib/core/errors.js'
import {
  canListKeys,
  type LockStore,
  ReadStatus,
  type WriteResult,
  WriteStatus,
} from '../../lib/core/store.js'
import { BodyFault, BrokenBodyServer } from '../support/broken-server.js'

/**
 * What a store under test offers the contract suite. Every call of `store()` gives a store on
 * the same namespace (bucket, table), as separate processes would have.
 */
export interface ContractTarget {
  store(): LockStore
  /** Writes a body at `key` unconditionally, bypassing the library, as an operator or a foreign writer would. */
  putRaw(key: string, body: string): Promise<void>
  /** Deletes whatever is at `key`, bypassing the library. */
  deleteRaw(key: string): Promise<void>
  /**
   * A store of this kind whose requests go to `endpoint` (to fake outages), with this request
   * timeout. Absent for stores without a network (the memory store).
   */
  storeAt?(endpoint: string, requestTimeoutMs: number): LockStore
  /**
   * What `replace` may answer for a key with no object: `absent`, or also `precondition-failed`
   * for engines that answer so (Ceph 16 answers 412 to an If-Match on a missing key).
   * @default [absent]
   */
  replaceOfMissing?: readonly WriteResult['status'][]
  /**
   * Whether losers of a race of replaces may fail with a retryable `LockStoreError` instead of
   * `precondition-failed` (Ceph 16 answers them 500). The core settles such failures by reading.
   * @default false
   */
  raceLosersMayError?: boolean
  /** Whether a body written by `putRaw` reads back byte for byte (not only as equal JSON). @default true */
  outsideBodiesVerbatim?: boolean
  close?(): Promise<void> | void
}

export interface ContractOptions {
  /** Rounds of each 50-writer race. @default 20 */
  readonly raceRounds?: number
}

const CONTENDERS = 50
/** How far a reported server date may be from this machine's clock (same host: small). */
const SERVER_DATE_TOLERANCE_MS = 5_000

let keys = 0
const freshKey = (label: string): string => `contract/${label}-${process.pid}-${++keys}-${Date.now()}`

const record = (fields: Record<string, unknown> = {}): string =>
  JSON.stringify({ v: 1, token: 1, expires_at: 1740151473.206, owner: 'contract/owner', ...fields })

/** The LockStore contract: what the lock core relies on, checked against a real engine. */
export function describeLockStoreContract(
  name: string,
  setup: () => Promise<ContractTarget> | ContractTarget,
  options: ContractOptions = {},
): void {
  const rounds = options.raceRounds ?? 20

  describe(`LockStore contract: ${name}`, () => {
    let target: ContractTarget
    let store: LockStore

    beforeAll(async () => {
      target = await setup()
      store = target.store()
    })
    afterAll(async () => {
      await target?.close?.()
    })

    const found = async (key: string, on: LockStore = store) => {
      const read = await on.read(key)
      if (read.status !== ReadStatus.Found)
        throw new Error(`expected an object at ${key}, got ${read.status}`)
      return read
    }
    /** Every store replaces `etag` at once; each one's outcome, a retryable failure as 'error'. */
    const replaceRace = async (stores: LockStore[], key: string, etag: string) => {
      const outcomes = await Promise.all(
        stores.map((each, i) =>
          each.replace(key, record({ token: 2, owner: `replacer-${i}` }), etag).then(
            (result) => result.status,
            (error: unknown) => {
              if (target.raceLosersMayError && error instanceof LockStoreError && error.retryable)
                return 'error'
              throw error
            },
          ),
        ),
      )
      for (const outcome of outcomes) {
        expect([WriteStatus.Written, WriteStatus.PreconditionFailed, 'error']).toContain(outcome)
      }
      return outcomes
    }
    const written = (result: WriteResult) => {
      if (result.status !== WriteStatus.Written) throw new Error(`expected a write, got ${result.status}`)
      return result
    }

    describe('reads', () => {
      it('reads a missing key as absent', async () => {
        const read = await store.read(freshKey('missing'))
        expect(read.status).toBe(ReadStatus.Absent)
      })

      it('names a written object by the etag a read returns', async () => {
        const key = freshKey('etag')
        const created = written(await store.create(key, record()))
        expect((await found(key)).etag).toBe(created.etag)
        const replaced = written(await store.replace(key, record({ token: 2 }), created.etag))
        expect((await found(key)).etag).toBe(replaced.etag)
        expect((await found(key, target.store())).etag).toBe(replaced.etag)
      })
    })

    describe('key listing (LockKeyListing, optional)', () => {
      it('lists the keys under a prefix, sorted, across pages, and none outside it', async (context) => {
        if (!canListKeys(store)) return context.skip()
        const prefix = `${freshKey('listed')}/`
        for (const key of [
          `${prefix}b`,
          `${prefix}a/nested`,
          `${prefix}a`,
          `${prefix.slice(0, -1)}-outside`,
        ]) {
          written(await store.create(key, record()))
        }
        const expected = [`${prefix}a`, `${prefix}a/nested`, `${prefix}b`]
        expect(await store.listKeys(prefix)).toEqual(expected)
        expect(await store.listKeys(prefix, { pageSize: 1 })).toEqual(expected)
        expect(await store.listKeys(`${prefix}zz`)).toEqual([])
        expect(await store.listKeys('')).toEqual(expect.arrayContaining(expected))
      })
    })

    describe('create-if-absent', () => {
      it('creates a missing key once and answers precondition-failed after, keeping the first body', async () => {
        const key = freshKey('create')
        const first = await store.create(key, record({ owner: 'first' }))
        expect(first.status).toBe(WriteStatus.Written)
        const second = await target.store().create(key, record({ owner: 'second' }))
        expect(second.status).toBe(WriteStatus.PreconditionFailed)
        expect((await found(key)).body).toBe(record({ owner: 'first' }))
      })

      it('refuses to create over an object an outsider wrote', async () => {
        const key = freshKey('create-outside')
        await target.putRaw(key, record({ owner: 'outsider' }))
        expect((await store.create(key, record())).status).toBe(WriteStatus.PreconditionFailed)
        expect(JSON.parse((await found(key)).body)).toEqual(JSON.parse(record({ owner: 'outsider' })))
      })

      it(`lets exactly one of ${CONTENDERS} concurrent creators write, ${rounds} rounds`, async () => {
        for (let round = 0; round < rounds; round++) {
          const key = freshKey('create-race')
          const stores = Array.from({ length: CONTENDERS }, () => target.store())
          const results = await Promise.all(
            stores.map((each, i) => each.create(key, record({ owner: `creator-${i}` }))),
          )
          const winners = results.flatMap((result, i) => (result.status === WriteStatus.Written ? [i] : []))
          expect(winners).toHaveLength(1)
          expect(results.filter((r) => r.status !== WriteStatus.Written).map((r) => r.status)).toEqual(
            Array(CONTENDERS - 1).fill(WriteStatus.PreconditionFailed),
          )
          expect((await found(key)).body).toBe(record({ owner: `creator-${winners[0]}` }))
        }
      })
    })

    describe('replace-if-etag', () => {
      it('replaces with the current etag, and the etag changes', async () => {
        const key = freshKey('replace')
        const created = written(await store.create(key, record()))
        const replaced = written(await store.replace(key, record({ token: 2 }), created.etag))
        expect(replaced.etag).not.toBe(created.etag)
        expect((await found(key)).body).toBe(record({ token: 2 }))
      })

      it('accepts an etag read by another store on the same namespace', async () => {
        const key = freshKey('replace-elsewhere')
        await store.create(key, record())
        const { etag } = await found(key, target.store())
        written(await target.store().replace(key, record({ token: 2 }), etag))
        expect((await found(key)).body).toBe(record({ token: 2 }))
      })

      it('answers precondition-failed to a replace with an old etag, and keeps the body', async () => {
        const key = freshKey('stale')
        const created = written(await store.create(key, record()))
        written(await store.replace(key, record({ token: 2 }), created.etag))
        const stale = await target.store().replace(key, record({ token: 3 }), created.etag)
        expect(stale.status).toBe(WriteStatus.PreconditionFailed)
        expect((await found(key)).body).toBe(record({ token: 2 }))
      })

      it('answers absent to a replace of a key that never existed, and writes nothing', async () => {
        const key = freshKey('replace-missing')
        const result = await store.replace(key, record(), 'no-such-etag')
        expect(target.replaceOfMissing ?? [WriteStatus.Absent]).toContain(result.status)
        expect((await store.read(key)).status).toBe(ReadStatus.Absent)
      })

      it('answers absent to a replace of a key deleted from outside, and writes nothing', async () => {
        const key = freshKey('replace-deleted')
        const created = written(await store.create(key, record()))
        await target.deleteRaw(key)
        const result = await store.replace(key, record({ token: 2 }), created.etag)
        expect(target.replaceOfMissing ?? [WriteStatus.Absent]).toContain(result.status)
        expect((await store.read(key)).status).toBe(ReadStatus.Absent)
      })

      it('changes the etag on an outside write, so that a replace with the old one fails', async () => {
        const key = freshKey('outside')
        const created = written(await store.create(key, record()))
        await target.putRaw(key, record({ owner: 'operator', expires_at: 0 }))
        const read = await found(key)
        expect(read.etag).not.toBe(created.etag)
        expect((await store.replace(key, record({ token: 2 }), created.etag)).status).toBe(
          WriteStatus.PreconditionFailed,
        )
        expect(JSON.parse((await found(key)).body)).toEqual(
          JSON.parse(record({ owner: 'operator', expires_at: 0 })),
        )
      })

      it('replaces an object an outsider wrote when given its etag', async () => {
        const key = freshKey('replace-outside')
        await target.putRaw(key, record({ owner: 'outsider' }))
        const { etag } = await found(key)
        written(await store.replace(key, record({ token: 2 }), etag))
        expect((await found(key)).body).toBe(record({ token: 2 }))
      })

      it(`lets exactly one of ${CONTENDERS} concurrent replacers of one etag write, ${rounds} rounds`, async () => {
        for (let round = 0; round < rounds; round++) {
          const key = freshKey('replace-race')
          const { etag } = written(await store.create(key, record()))
          const stores = Array.from({ length: CONTENDERS }, () => target.store())
          // Each store learns the object by reading it, as a contender on another machine would.
          await Promise.all(stores.map((each) => each.read(key)))
          const outcomes = await replaceRace(stores, key, etag)
          const winners = outcomes.flatMap((outcome, i) => (outcome === WriteStatus.Written ? [i] : []))
          expect(winners).toHaveLength(1)
          expect((await found(key)).body).toBe(record({ token: 2, owner: `replacer-${winners[0]}` }))
        }
      })

      it(`lets exactly one of ${CONTENDERS} concurrent replacers of an outsider's object write`, async () => {
        for (let round = 0; round < Math.max(1, Math.ceil(rounds / 4)); round++) {
          const key = freshKey('replace-outside-race')
          await target.putRaw(key, record({ owner: 'outsider' }))
          const { etag } = await found(key)
          const stores = Array.from({ length: CONTENDERS }, () => target.store())
          const outcomes = await replaceRace(stores, key, etag)
          const winners = outcomes.flatMap((outcome, i) => (outcome === WriteStatus.Written ? [i] : []))
          expect(winners).toHaveLength(1)
          expect((await found(key)).body).toBe(record({ token: 2, owner: `replacer-${winners[0]}` }))
        }
      })
    })

    describe('bodies', () => {
      const rich = JSON.stringify({
        v: 1,
        token: 9007199254740991,
        expires_at: 1740151473.206,
        owner: 'nightly-report/8f1c-ünïcödé-日本語-🦆',
        acquired_at: 1740151413.2,
        ttl_ms: 60000,
        last_run: '2026-11-21T03:00:00Z',
        state: {
          cursor: 'abc"\\\n\t\u0001',
          nested: {
            list: [1, 0.5, -3, 1e21, 1.5e-7, true, false, null, '', [], {}],
            deep: { a: { b: { c: [] } } },
          },
          empty: '',
        },
        future_field: { from: 'a newer writer', n: [0] },
        zero: 0,
      })

      it('returns a body byte for byte as it was created and replaced: unknown fields, nested state, unicode', async () => {
        const key = freshKey('body')
        const created = written(await store.create(key, rich))
        expect((await found(key)).body).toBe(rich)
        const other = rich.replace('"zero":0', '"zero":0,"added":"🦆"')
        written(await store.replace(key, other, created.etag))
        expect((await found(key, target.store())).body).toBe(other)
      })

      it('reads an outsider body as the same JSON', async () => {
        const key = freshKey('outside-body')
        await target.putRaw(key, rich)
        const read = await found(key)
        if (target.outsideBodiesVerbatim ?? true) expect(read.body).toBe(rich)
        expect(JSON.parse(read.body)).toEqual(JSON.parse(rich))
      })
    })

    describe('time', () => {
      it('carries the server date, close to the real time, on reads and on writes of every outcome', async () => {
        const key = freshKey('date')
        const answers = [
          await store.read(key),
          await store.create(key, record()),
          await store.create(key, record()),
          await store.replace(key, record(), 'stale-etag'),
        ]
        const read = await found(key)
        answers.push(read, await store.replace(key, record({ token: 2 }), read.etag))
        for (const answer of answers) {
          expect(answer.serverDate, `serverDate of a ${answer.status} answer`).toBeTypeOf('number')
          expect(Math.abs((answer.serverDate ?? 0) - Date.now())).toBeLessThan(
            SERVER_DATE_TOLERANCE_MS + store.clockResolutionMs,
          )
        }
      })

      it('answers a clock probe with its date, of a key that exists or not, and changes nothing', async () => {
        if (!store.probeDate) return // optional: a lock then probes with a read
        const key = freshKey('probe')
        const before = Date.now()
        expect(await store.probeDate(key)).toBeTypeOf('number')
        await store.create(key, record())
        const written = await found(key)
        const date = await store.probeDate(key)
        expect(Math.abs((date ?? 0) - before)).toBeLessThan(
          SERVER_DATE_TOLERANCE_MS + store.clockResolutionMs,
        )
        expect((date ?? 1) % store.clockResolutionMs).toBe(0) // no finer than its resolution
        const after = await found(key)
        expect(after.etag).toBe(written.etag)
        expect(after.body).toBe(written.body)
      })
    })

    describe('faults', () => {
      let silent: Server
      const hung = new Set<Socket>()
      let silentEndpoint: string
      let closedEndpoint: string

      beforeAll(async () => {
        // A server that accepts connections and never answers: a hung request.
        silent = createServer((socket) => hung.add(socket))
        await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve))
        silentEndpoint = `http://127.0.0.1:${(silent.address() as { port: number }).port}`
        const closed = createServer()
        await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve))
        closedEndpoint = `http://127.0.0.1:${(closed.address() as { port: number }).port}`
        await new Promise((resolve) => closed.close(resolve))
      })
      afterAll(async () => {
        for (const socket of hung) socket.destroy()
        await new Promise((resolve) => silent.close(resolve))
      })

      const expectRetryable = async (call: Promise<unknown>) => {
        const error = await call.then(
          () => undefined,
          (e: unknown) => e,
        )
        expect(error).toBeInstanceOf(LockStoreError)
        expect((error as LockStoreError).retryable).toBe(true)
      }

      it('fails every call with a retryable LockStoreError when the engine cannot be reached', async (context) => {
        if (!target.storeAt) return context.skip()
        const down = target.storeAt(closedEndpoint, 2_000)
        const key = freshKey('down')
        await expectRetryable(down.read(key))
        await expectRetryable(down.create(key, record()))
        await expectRetryable(down.replace(key, record(), 'etag'))
      })

      it('fails a call that gets no answer with a retryable LockStoreError after the request timeout', async (context) => {
        if (!target.storeAt) return context.skip()
        const hung = target.storeAt(silentEndpoint, 300)
        const key = freshKey('hung')
        const began = Date.now()
        await expectRetryable(hung.read(key))
        await expectRetryable(hung.create(key, record()))
        // Far above two 300 ms timeouts: only a call left to hang (until the test's timeout) breaks it.
        expect(Date.now() - began).toBeLessThan(20_000)
      })

      it('fails every call whose answer breaks off mid-body with a retryable LockStoreError', async (context) => {
        if (!target.storeAt) return context.skip()
        const server = await BrokenBodyServer.start(BodyFault.Cut)
        try {
          const cut = target.storeAt(server.endpoint, 2_000)
          const key = freshKey('cut')
          await expectRetryable(cut.read(key))
          await expectRetryable(cut.create(key, record()))
          await expectRetryable(cut.replace(key, record(), 'etag'))
          expect(server.seen.length).toBeGreaterThanOrEqual(3)
        } finally {
          await server.close()
        }
      })

      it('fails a call whose body stalls with a retryable LockStoreError after the request timeout', async (context) => {
        if (!target.storeAt) return context.skip()
        const server = await BrokenBodyServer.start(BodyFault.Stall)
        try {
          const stalled = target.storeAt(server.endpoint, 300)
          const key = freshKey('stalled')
          const began = Date.now()
          await expectRetryable(stalled.read(key))
          await expectRetryable(stalled.create(key, record()))
          // Far above two 300 ms timeouts: only a body left to stall breaks it.
          expect(Date.now() - began).toBeLessThan(20_000)
        } finally {
          await server.close()
        }
      })

      it("rejects with the caller's abort reason and writes nothing when the caller's signal is aborted", async () => {
        const key = freshKey('aborted')
        const reason = new Error('caller gave up')
        const signal = AbortSignal.abort(reason)
        await expect(store.create(key, record(), { signal })).rejects.toBe(reason)
        await expect(store.read(key, { signal })).rejects.toBe(reason)
        expect((await store.read(key)).status).toBe(ReadStatus.Absent)
      })
    })
  })
}
