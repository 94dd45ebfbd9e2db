// singleton() options: per-tenant locks, a short lease with heartbeats, and metrics.
import middy from '@middy/core'
import { type SingletonContext, singleton } from 'lambda-singleton/middy'

interface TenantEvent {
  readonly tenant: string
}

export const handler = middy<TenantEvent, unknown, Error, SingletonContext>()
  .use(
    singleton<TenantEvent>({
      key: (event) => `tenant-sync/${event.tenant}`, // one lock per tenant
      ttlMs: 30_000, // a crashed run frees the lock within 30 s...
      heartbeatMs: 10_000, // ...because a live one renews every 10 s
      onHeld: 'fail', // LockHeldError: let the invoker retry later instead of skipping
      waitMs: 2_000, // but first wait up to 2 s for the holder to finish
      metrics: { namespace: 'TenantSync' }, // CloudWatch EMF lines: Acquired, Held, Lost, WaitMs...
    }),
  )
  .handler(async (event, context) => ({
    tenant: event.tenant,
    token: await context.singleton.fencingToken(),
  }))
