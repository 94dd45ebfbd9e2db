import type { S3Client } from '@aws-sdk/client-s3'
import { LockStoreError } from '../../lib/core/errors.js'
import type { FencingTokenSource } from '../../lib/core/lease.js'
import { fencedPut } from '../../lib/s3/fenced-put.js'
import type { Stage } from './actors.js'
import { CallEnd } from './oracle.js'
import type { SimProcess } from './world.js'

/** The one object every run writes its output to. */
export const OUTPUT_KEY = 'out/report.json'

/** The bytes a run writes: mostly the same report (what an unchanged report is), else its own. */
const SAME_BYTES = 'report: unchanged'

const clients = new WeakMap<SimProcess, S3Client>()

/** `lease`, telling the oracle of every token it hands out (I2). */
export function reportingTokens(
  stage: Stage,
  process: SimProcess,
  lease: FencingTokenSource,
  label: string,
): FencingTokenSource {
  return {
    fencingToken: async (options) => {
      const token = await lease.fencingToken(options)
      stage.oracle.tokenHandedOut(token, label, process.drift)
      stage.trace(`${label} was handed token ${token}`)
      return token
    },
  }
}

/**
 * A run writes its output with `fencedPut`, as the docs show: given the lease (`fencedPut` awaits
 * its token) or a token it awaited itself, with the lease's signal or (a zombie that does not
 * listen) without. A stale holder's write is refused with `FencedWriteRejectedError`; one that
 * returns tells the oracle, which then holds the object to that token or higher (I3).
 */
export async function writeOutput(
  stage: Stage,
  process: SimProcess,
  lease: FencingTokenSource,
  label: string,
  signal: AbortSignal | undefined,
): Promise<void> {
  const { world, s3 } = stage
  let s3Client = clients.get(process)
  if (!s3Client) {
    s3Client = s3.client(process)
    clients.set(process, s3Client)
  }
  // One draw for both, so that runs that do not report progress first draw as they always did.
  const draw = world.random.next()
  const body = draw < 0.7 ? SAME_BYTES : `report of ${label}`
  // Half the runs (all writing the unchanged report) write a progress report first: their two
  // writes bring back, within moments, the bytes the object held before the run (X, Y, X), which
  // a stale holder may have read, its PUT still on its way (`SimS3`'s holds).
  const progressFirst = draw < 0.5
  const listens = signal !== undefined && world.random.chance(0.5)
  let token = Number.NaN
  // The oracle knows which calls are under way (I3 admits W4 while the call whose write a stale
  // PUT landed over has not returned): from the token on, until the call returns, throws or its
  // process dies.
  let ended: (how: CallEnd) => void = () => {}
  const underway = () => {
    const call = stage.oracle.fencing(OUTPUT_KEY, token, process.name)
    ended = call
    process.onCrash(() => call(CallEnd.Abandoned))
  }
  const source = reportingTokens(stage, process, lease, label)
  const tokens: FencingTokenSource = {
    fencingToken: async (options) => {
      token = await source.fencingToken(options)
      underway()
      return token
    },
  }
  const common = {
    s3: s3Client,
    bucket: s3.bucket,
    key: OUTPUT_KEY,
    body,
    clock: process.clock,
    ...(listens && { signal }),
  }
  const first = progressFirst ? { ...common, body: `progress of ${label}` } : common
  try {
    if (world.random.chance(0.5)) await fencedPut({ ...first, lease: tokens })
    else await fencedPut({ ...first, token: await tokens.fencingToken(listens ? { signal } : {}) })
  } catch (error) {
    ended(endOf(error))
    throw error
  }
  ended(CallEnd.Returned)
  stage.oracle.fenced(OUTPUT_KEY, token, process.name)
  stage.trace(`${process.name} fencedPut token ${token} returned`)
  const writeAgain = async (again: string) => {
    underway()
    try {
      await fencedPut({ ...common, body: again, token })
    } catch (error) {
      ended(endOf(error))
      throw error
    }
    ended(CallEnd.Returned)
    stage.oracle.fenced(OUTPUT_KEY, token, process.name)
    stage.trace(`${process.name} fencedPut token ${token} returned again`)
  }
  if (progressFirst) await writeAgain(body)
  // Some runs write their output again at once, a progress report and then the report: the
  // bytes the object held before come back (X, Y, X), which a stale holder may have read.
  if (!world.random.chance(0.3)) return
  for (const again of [`progress of ${label}`, body]) await writeAgain(again)
}

/**
 * How a run uses its token: most fence after some work, some at once (before the work), some
 * never (a job that wants one run at a time and writes nothing fenced).
 */
export const TokenUse = { AtOnce: 'at-once', AfterWork: 'after-work', Never: 'never' } as const
export type TokenUse = (typeof TokenUse)[keyof typeof TokenUse]

export function tokenUse(stage: Stage): TokenUse {
  const draw = stage.world.random.next()
  return draw < 0.25 ? TokenUse.AtOnce : draw < 0.8 ? TokenUse.AfterWork : TokenUse.Never
}

/**
 * How a call that threw ended, for the oracle: one that gave up at its timeout while it settled
 * (it says a stale write may land over it: call again) left its settle unfinished, as a holder
 * that died does (W4); any other throw ended it, and excuses nothing.
 */
function endOf(error: unknown): CallEnd {
  const gaveUp = error instanceof LockStoreError && /while waiting out stale writes/.test(error.message)
  return gaveUp ? CallEnd.Abandoned : CallEnd.Ended
}
