import { afterEach, describe, expect, it, vi } from 'vitest'
import type { LockStore } from '../../lib/extend.js'
import { LockOptionsError, type SingletonOptions, withSingleton } from '../../lib/index.js'
import { MemoryLockStore } from '../../lib/memory/index.js'
import { lambdaContext } from '../support/lambda-context.js'
import { ManualClock } from '../support/sim-clock.js'

const memory = new MemoryLockStore()

describe('options refused when the handler is made', () => {
  it.each<[string, SingletonOptions]>([
    ['a key that is neither a string nor a function', { key: 42 as unknown as string }],
    ['a store without read', { store: { ...storeOf(memory), read: undefined } as unknown as LockStore }],
    ['a store without create', { store: { ...storeOf(memory), create: undefined } as unknown as LockStore }],
    [
      'a store without replace',
      { store: { ...storeOf(memory), replace: undefined } as unknown as LockStore },
    ],
    [
      'a store that is a function',
      { store: Object.assign(() => undefined, storeOf(memory)) as unknown as LockStore },
    ],
    ['a tickId that is not a function', { tickId: 'scheduledTime' as unknown as false }],
  ])('%s', (_, options) => {
    expect(() => withSingleton(async () => 'ran', options)).toThrow(LockOptionsError)
  })

  it.each<[string, SingletonOptions]>([
    ['a store with the three operations', { store: storeOf(memory) }],
    ['tickId false', { tickId: false }],
    ['a tickId function', { tickId: () => 'tick' }],
  ])('takes %s', (_, options) => {
    expect(() => withSingleton(async () => 'ran', options)).not.toThrow()
  })
})

describe('defaults', () => {
  afterEach(() => {
    vi.restoreAllMocks()
    delete process.env.LAMBDA_SINGLETON_KEY_PREFIX
  })

  it('log one JSON line per outcome on the console', async () => {
    const info = vi.spyOn(console, 'info').mockImplementation(() => undefined)
    const clock = new ManualClock()
    const handler = withSingleton(async () => 'ran', {
      store: new MemoryLockStore({ clock, clockResolutionMs: 1_000 }),
      clock,
    })
    await clock.run(handler({}, lambdaContext({ clock })))
    expect(info.mock.calls.map(([line]) => JSON.parse(line))).toMatchObject([
      { level: 'INFO', outcome: 'acquired' },
      { level: 'INFO', outcome: 'released' },
    ])
  })

  it('prefix keys with LAMBDA_SINGLETON_KEY_PREFIX when set, else with locks/', async () => {
    const clock = new ManualClock()
    const store = new MemoryLockStore({ clock, clockResolutionMs: 1_000 })
    const options = { store, clock, logger: { info() {}, warn() {}, error() {} } }
    process.env.LAMBDA_SINGLETON_KEY_PREFIX = 'env/'
    await clock.run(withSingleton(async () => 'ran', options)({}, lambdaContext({ clock })))
    delete process.env.LAMBDA_SINGLETON_KEY_PREFIX
    await clock.run(withSingleton(async () => 'ran', options)({}, lambdaContext({ clock })))
    expect(JSON.parse(store.peek('env/nightly-report') ?? 'null')).toMatchObject({ run: 1, expires_at: 0 })
    expect(JSON.parse(store.peek('locks/nightly-report') ?? 'null')).toMatchObject({ run: 1, expires_at: 0 })
  })
})

describe('the key prefix of the store the environment names', () => {
  afterEach(() => {
    vi.unstubAllEnvs()
  })

  it('refuses a leading slash for a bucket, accepts it for a table, whichever variables are set', () => {
    vi.stubEnv('LAMBDA_SINGLETON_BUCKET', 'locks-bucket')
    expect(() => withSingleton(async () => 'ran', { keyPrefix: '/jobs/' })).toThrow(
      /S3 keys have no leading slash/,
    )
    // Both named, the table chosen: the slash is a table's to keep.
    vi.stubEnv('LAMBDA_SINGLETON_TABLE', 'locks-table')
    vi.stubEnv('LAMBDA_SINGLETON_STORE', 'dynamodb')
    expect(() => withSingleton(async () => 'ran', { keyPrefix: '/jobs/' })).not.toThrow()
    vi.stubEnv('LAMBDA_SINGLETON_STORE', 's3')
    expect(() => withSingleton(async () => 'ran', { keyPrefix: '/jobs/' })).toThrow(
      /S3 keys have no leading slash/,
    )
  })
})

/** The three operations of a store, as a plain object. */
function storeOf(store: LockStore): LockStore {
  return {
    clockResolutionMs: store.clockResolutionMs,
    read: (...args) => store.read(...args),
    create: (...args) => store.create(...args),
    replace: (...args) => store.replace(...args),
  }
}
