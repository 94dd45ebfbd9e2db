import type { S3Client } from '@aws-sdk/client-s3'
import { fencedPut } from '../../lib/s3/fenced-put.js'
import type { Stage } from './actors.js'
import type { SimProcess } from './world.js'

/** The one object every run writes its output to. */
export const OUTPUT_KEY = 'out/report.json'

/** The bytes a run writes: mostly the same report (what an unchanged report is), else its own. */
const SAME_BYTES = 'report: unchanged'

const clients = new WeakMap<SimProcess, S3Client>()

/**
 * A run writes its output with `fencedPut` and its token, as the docs show, with the lease's
 * signal or (a zombie that does not listen) without. A stale holder's write is refused with
 * `FencedWriteRejectedError`; one that returns tells the oracle, which then holds the object to
 * that token or higher (I3).
 */
export async function writeOutput(
  stage: Stage,
  process: SimProcess,
  token: number,
  signal: AbortSignal | undefined,
): Promise<void> {
  const { world, s3 } = stage
  let s3Client = clients.get(process)
  if (!s3Client) {
    s3Client = s3.client(process)
    clients.set(process, s3Client)
  }
  const body = world.random.chance(0.7) ? SAME_BYTES : `report of token ${token}`
  const listens = signal !== undefined && world.random.chance(0.5)
  await fencedPut({
    s3: s3Client,
    bucket: s3.bucket,
    key: OUTPUT_KEY,
    body,
    token,
    clock: process.clock,
    ...(listens && { signal }),
  })
  stage.oracle.fenced(OUTPUT_KEY, token, process.name)
  stage.trace(`${process.name} fencedPut token ${token} returned`)
}
