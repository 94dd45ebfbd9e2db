import type { Context } from 'aws-lambda'
import { beforeAll, describe, expect, it } from 'vitest'
import { LOCK_ENV } from '../../lib/config.js'
import { schedulerEvent } from '../support/lambda-context.js'

// The handlers build their middleware at import, and it needs a bucket: give it one first.
let nightly: typeof import('../../functions/nightly-report.js')
let sync: typeof import('../../functions/tenant-sync.js')
beforeAll(async () => {
  process.env[LOCK_ENV.bucket] ??= 'example-locks'
  nightly = await import('../../functions/nightly-report.js')
  sync = await import('../../functions/tenant-sync.js')
})

const tick = (schedule: string) => schedulerEvent('2026-11-21T03:00:00Z', schedule)

describe('example handlers', () => {
  it('export a Lambda handler', () => {
    expect(typeof nightly.handler).toBe('function')
    expect(typeof sync.handler).toBe('function')
  })

  it('nightly-report names the report after the day before the tick', () => {
    expect(nightly.reportDate('2026-11-21T03:00:00Z')).toBe('2026-11-20')
    expect(nightly.reportDate('2026-03-01T03:00:00Z')).toBe('2026-02-28')
    expect(() => nightly.reportDate('yesterday')).toThrow(/not a time/)
  })

  it('tenant-sync locks per tenant, the tenant being the schedule name', () => {
    expect(sync.lockKeyOf(tick('acme'), {} as Context)).toBe('tenant-sync/acme')
    for (const bad of ['../etc', 'a/b', '', 'ACME', ' acme']) {
      expect(() => sync.tenantOf(tick(bad))).toThrow(/no valid tenant/)
    }
  })
})
