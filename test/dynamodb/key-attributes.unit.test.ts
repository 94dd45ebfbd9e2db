import { describe, expect, it } from 'vitest'
import { keyAttributeClash } from '../../lib/dynamodb/key-attributes.js'

/** Every top-level field of the record format, as `LockRecord` declares them. */
const RECORD_FORMAT = [
  'v',
  'token',
  'run',
  'expires_at',
  'owner',
  'acquired_at',
  'ttl_ms',
  'last_run',
  'state',
  'cursor',
  'paused',
  'failures',
  'failed_run',
  'history',
  'running',
  'replaced',
  'ended_by',
]

describe('the names a lock table key attribute may not take', () => {
  it.each(RECORD_FORMAT)('refuses "%s", a field of the lock record', (name) => {
    expect(keyAttributeClash(name)).toBe(
      `"${name}" is a field of the lock record, which every lock item holds beside its key`,
    )
  })

  it.each(['lock_version', 'lock_body'])('refuses "%s", an attribute of the store', (name) => {
    expect(keyAttributeClash(name)).toMatch(
      new RegExp(`^"${name}" is an attribute the DynamoDB store writes`),
    )
  })

  it.each(['pk', 'PK', 'id', 'lock_id', 'lockKey', 'Owner', 'token_'])('takes "%s"', (name) => {
    expect(keyAttributeClash(name)).toBeUndefined()
  })
})
