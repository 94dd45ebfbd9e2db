import { describe, expect, it } from 'vitest'
import {
  LockConflictError,
  LockCorruptedError,
  LockError,
  LockHeldError,
  LockLostError,
  LockOptionsError,
  LockStoreError,
  LockTimeoutError,
} from '../../lib/index.js'

describe('errors', () => {
  // Made inside each test: an error built while the file loads would make its class's mutants
  // "static" for Stryker, re-run against the whole suite.
  const HOLDER = { v: 1, token: 1, owner: 'other', expires_at: 0 } as const
  it.each([
    ['LockError', () => new LockError('m')],
    ['LockOptionsError', () => new LockOptionsError('m')],
    ['LockConflictError', () => new LockConflictError('m', { key: 'k', reason: 'changed' })],
    ['LockLostError', () => new LockLostError('m', { key: 'k', reason: 'expired', token: 1 })],
    ['LockTimeoutError', () => new LockTimeoutError('m', { key: 'k', waitedMs: 1, holder: HOLDER })],
    ['LockCorruptedError', () => new LockCorruptedError('m', { key: 'k', raw: '' })],
    ['LockStoreError', () => new LockStoreError('m', { retryable: false })],
    ['LockHeldError', () => new LockHeldError('m', { key: 'k', holder: HOLDER })],
  ])('%s says its name, and is a LockError', (name, make) => {
    const error = make()
    expect(error.name).toBe(name)
    expect(String(error)).toBe(`${name}: m`)
    expect(error).toBeInstanceOf(LockError)
  })

  it('keeps a cause when given one, and has none otherwise', () => {
    const cause = new Error('503')
    expect(new LockStoreError('m', { retryable: true, cause }).cause).toBe(cause)
    expect('cause' in new LockStoreError('m', { retryable: true })).toBe(false)
  })
})
