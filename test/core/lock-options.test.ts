import { hostname } from 'node:os'
import { describe, expect, it } from 'vitest'
import type { LockStore } from '../../lib/extend.js'
import { Lock, type LockOptions, LockOptionsError } from '../../lib/index.js'
import { MemoryLockStore } from '../../lib/memory/index.js'
import { leaseOf } from '../support/lease-of.js'

const store = new MemoryLockStore()
const refusal = (options: Partial<LockOptions>) => {
  try {
    new Lock({ store, key: 'k', ...options } as LockOptions)
  } catch (error) {
    return error
  }
  return undefined
}

describe('Lock options', () => {
  it.each([
    ['a key that is not a string', { key: 42 as unknown as string }],
    ['a key over 1024 bytes in UTF-8', { key: `${'é'.repeat(512)}a` }],
    ['no store', { store: undefined as unknown as LockStore }],
    ['an owner over 1024 characters', { owner: 'o'.repeat(1025) }],
    ['an owner that is not a string', { owner: 42 as unknown as string }],
    ['fractional retry attempts', { retry: { attempts: 1.5 } }],
  ])('refuses %s at construction, naming the key', (_, options: Partial<LockOptions>) => {
    const error = refusal(options)
    expect(error).toBeInstanceOf(LockOptionsError)
    expect(error).toMatchObject({ key: options.key ?? 'k' })
  })

  it.each([
    ['a key of exactly 1024 bytes', { key: 'é'.repeat(512) }],
    ['an owner of exactly 1024 characters', { owner: 'o'.repeat(1024) }],
    ['a single try per store call', { retry: { attempts: 1 } }],
  ])('takes %s', (_, options) => {
    expect(refusal(options)).toBeUndefined()
  })

  it('names itself after the host and process, uniquely per instance, when given no owner', () => {
    const a = new Lock({ store, key: 'k' })
    const b = new Lock({ store, key: 'k' })
    expect(a.owner).toBe(`${hostname()}/${process.pid}/${a.owner.slice(-8)}`)
    expect(a.owner.slice(-8)).toMatch(/^[0-9a-f]{8}$/)
    expect(a.owner).not.toBe(b.owner)
  })

  it('refuses a per-call owner that is empty, before any request', async () => {
    const counted = new MemoryLockStore()
    const lock = new Lock({ store: counted, key: 'k' })
    await expect(leaseOf(lock.tryAcquire({ owner: '' }))).rejects.toBeInstanceOf(LockOptionsError)
    expect(counted.requests.read).toBe(0)
  })

  it('refuses a negative wait, before any request', async () => {
    const counted = new MemoryLockStore()
    const lock = new Lock({ store: counted, key: 'k' })
    await expect(lock.tryAcquire({ waitMs: -1 })).rejects.toMatchObject({
      name: 'LockOptionsError',
      key: 'k',
    })
    expect(counted.requests.read).toBe(0)
  })

  it.each([
    ['a number', 42],
    ['an object', { at: '2026-11-21T03:00:00Z' }],
    ['over 1024 characters', 't'.repeat(1025)],
  ])(
    'refuses a tick that is %s, before any request: every reader would refuse the record it wrote',
    async (_, tick) => {
      const counted = new MemoryLockStore()
      const lock = new Lock({ store: counted, key: 'k' })
      await expect(lock.tryAcquire({ tick: tick as string })).rejects.toMatchObject({
        name: 'LockOptionsError',
        key: 'k',
        message: expect.stringMatching(/tick must be a string of at most 1024 characters/),
      })
      expect(counted.requests.read).toBe(0)
    },
  )

  it('takes a tick of exactly 1024 characters', async () => {
    const lock = new Lock({ store: new MemoryLockStore(), key: 'k' })
    const lease = await lock.acquire({ tick: 't'.repeat(1024), waitMs: 0 })
    await lease.release({ outcome: 'completed', tick: 't'.repeat(1024) })
    expect(lease.isReleased).toBe(true)
  })

  it('refuses a release whose tick is not a string, writing nothing: the lease stays held', async () => {
    const counted = new MemoryLockStore()
    const lock = new Lock({ store: counted, key: 'k' })
    const lease = await lock.acquire({ tick: '2026-11-21T03:00:00Z', waitMs: 0 })
    const before = counted.peek('k')
    await expect(
      lease.release({ outcome: 'completed', tick: 42 as unknown as string }),
    ).rejects.toBeInstanceOf(LockOptionsError)
    expect(counted.peek('k')).toBe(before)
    expect(lease.isHeld).toBe(true)
    await lease.release({ outcome: 'completed', tick: '2026-11-21T03:00:00Z' })
    expect(JSON.parse(counted.peek('k') ?? '{}')).toMatchObject({ expires_at: 0 })
  })
})
