import { afterEach, describe, expect, it, vi } from 'vitest'
import { consoleLogger, silentLogger } from '../../lib/extend.js'
import { withSingleton } from '../../lib/index.js'
import { MemoryLockStore } from '../../lib/memory/index.js'
import { lambdaContext } from '../support/lambda-context.js'

describe('consoleLogger', () => {
  afterEach(() => {
    vi.restoreAllMocks()
  })

  it.each([
    ['info', 'INFO'],
    ['warn', 'WARN'],
    ['error', 'ERROR'],
  ] as const)(
    'writes %s as one JSON line on console.%s, with its level, message and fields',
    (method, level) => {
      const write = vi.spyOn(console, method).mockImplementation(() => undefined)
      consoleLogger[method]('lock acquired', { key: 'k', token: 3 })
      expect(write).toHaveBeenCalledTimes(1)
      expect(JSON.parse(write.mock.calls[0]?.[0])).toEqual({
        level,
        message: 'lock acquired',
        key: 'k',
        token: 3,
      })
    },
  )

  it('writes an error as its name and message', () => {
    const write = vi.spyOn(console, 'error').mockImplementation(() => undefined)
    const error = new TypeError('bad')
    consoleLogger.error('failed', { error, nested: { at: 1 } })
    expect(JSON.parse(write.mock.calls[0]?.[0])).toEqual({
      level: 'ERROR',
      message: 'failed',
      error: { name: 'TypeError', message: 'bad' },
      nested: { at: 1 },
    })
  })
})

describe('silentLogger', () => {
  it('writes nothing', () => {
    const writes = (['info', 'warn', 'error'] as const).map((method) =>
      vi.spyOn(console, method).mockImplementation(() => undefined),
    )
    silentLogger.info('m', {})
    silentLogger.warn('m', {})
    silentLogger.error('m', {})
    expect(writes.every((write) => write.mock.calls.length === 0)).toBe(true)
    vi.restoreAllMocks()
  })
})

describe('logger: false', () => {
  afterEach(() => {
    vi.restoreAllMocks()
  })

  it('says nothing on the console, as metrics: false writes no metric, and the run goes on', async () => {
    const writes = (['log', 'info', 'warn', 'error'] as const).map((method) =>
      vi.spyOn(console, method).mockImplementation(() => undefined),
    )
    const handler = withSingleton(async () => 'ran', {
      store: new MemoryLockStore(),
      key: 'quiet',
      logger: false,
      metrics: false,
    })
    expect(await handler({}, lambdaContext())).toBe('ran')
    for (const write of writes) expect(write).not.toHaveBeenCalled()
  })

  it('refuses a logger that is neither a logger nor false', () => {
    expect(() =>
      withSingleton(async () => 1, { store: new MemoryLockStore(), logger: true as unknown as false }),
    ).toThrow(/logger must be a SingletonLogger \(info, warn, error\) or false/)
  })
})
