// The core lock, without Lambda or Middy: a container task, a cron host, a script.
import { LockLostError, S3Lock } from 'lambda-singleton'

const lock = new S3Lock({ bucket: 'my-locks', key: 'locks/rebuild-index', ttlMs: 60_000 })

export async function rebuildIndex(work: (token: number, signal: AbortSignal) => Promise<void>) {
  const lease = await lock.tryAcquire()
  if (!lease) {
    console.log(`busy: held by ${lock.lastSeen?.owner ?? 'another run'}`)
    return
  }
  const heartbeat = setInterval(() => lease.renew().catch(() => undefined), 20_000)
  try {
    await work(lease.token, lease.signal) // the signal aborts when a renew finds the lease lost
  } finally {
    clearInterval(heartbeat)
    await lease.release().catch((error: unknown) => {
      if (error instanceof LockLostError) console.error('lease was lost mid-run', error.current)
      else throw error
    })
  }
}

export async function waitForTheLock() {
  const lease = await lock.acquire({ waitMs: 30_000 }) // LockTimeoutError after 30 s
  const info = await lock.inspect() // { token, expiresAt, owner, held, etag, record }
  await lease.release()
  return info
}
