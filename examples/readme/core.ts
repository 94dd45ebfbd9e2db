// The core lock, without Lambda or Middy: a container task, a cron host, a script.
import { keepAlive, LockLostError } from 'lambda-singleton'
import { S3Lock } from 'lambda-singleton/s3'

const lock = new S3Lock({ bucket: 'my-locks', key: 'locks/rebuild-index', ttlMs: 60_000 })

type Work = (token: number, signal: AbortSignal) => Promise<void>

// lock.runExclusive: acquire, renew every 20 s, abort the signal the moment the lease is lost, release.
export async function rebuildIndex(work: Work) {
  const result = await lock.runExclusive(async (lease) => work(await lease.fencingToken(), lease.signal), {
    heartbeatMs: 20_000,
  })
  if (result.status === 'held') console.log(`busy: held by ${result.holder.owner}`)
}

// The same steps by hand, waiting up to 30 s for the lock.
export async function rebuildIndexByHand(work: Work) {
  const acquisition = await lock.tryAcquire({ waitMs: 30_000 })
  if (acquisition.status !== 'acquired') return
  const { lease } = acquisition
  const stop = keepAlive(lease, { everyMs: 20_000, clock: lock.clock })
  try {
    // The token is ready once the store's clock has passed it: awaited where work needs it.
    await work(await lease.fencingToken(), lease.signal) // the signal aborts when the lease is lost or runs out
  } finally {
    stop()
    await lease.release().catch((error: unknown) => {
      if (error instanceof LockLostError) console.error('lease was lost mid-run', error.current)
      else throw error
    })
  }
}
