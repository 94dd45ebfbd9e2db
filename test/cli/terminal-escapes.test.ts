import type { S3Client } from '@aws-sdk/client-s3'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { ExitCode } from '../../lib/cli/main.js'
import { S3Lock } from '../../lib/s3/index.js'
import { keepHistory } from '../../lib/schedule/history.js'
import { cliIn } from '../support/cli.js'
import { leaseOf } from '../support/lease-of.js'
import { freshBucket, getRecord, putRaw, testS3Client } from '../support/s3.js'

let s3: S3Client
let bucket: string

beforeAll(async () => {
  s3 = testS3Client()
  bucket = await freshBucket(s3, 'escapes')
})

afterAll(() => s3.destroy())

const cli = (...argv: string[]) => cliIn(argv, { s3 })
const at = (key: string) => ['--bucket', bucket, '--key', key]

/** Erase the line, go back to its start, and print a lie in green: what an owner string can do raw. */
const FORGED = '\x1b[2K\r\x1b[32mstate  free (released)\x1b[0m'
/** Right-to-left override: reorders what follows on screen (Trojan Source). */
const REORDERED = 'job\u202e1/boj'

/** What a terminal acts on instead of printing: ESC and the other controls but newline, and bidi overrides. */
function activeIn(text: string): string[] {
  return [...text].filter((char) => {
    const code = char.charCodeAt(0)
    return (
      (code < 0x20 && code !== 0x0a) ||
      (code >= 0x7f && code <= 0x9f) ||
      (code >= 0x202a && code <= 0x202e) ||
      (code >= 0x2066 && code <= 0x2069)
    )
  })
}

/**
 * A lock whose record holds strings anyone who can write the object can put there: a held lease
 * with a forged owner, a tick and a pause note with escapes, and a run in its history.
 */
async function forgedLock(key: string): Promise<Record<string, unknown>> {
  await leaseOf(new S3Lock({ s3, bucket, key, ttlMs: 600_000, recordRun: keepHistory(10) }).tryAcquire())
  const record = await getRecord(s3, bucket, key)
  const forged = {
    ...record,
    owner: FORGED,
    last_run: `2026-11-21T03:00:00Z${FORGED}`,
    paused: { by: REORDERED, at: record.acquired_at, note: `why\nstate  free${FORGED}` },
    history: [
      {
        token: 1,
        tick: `tick${FORGED}`,
        owner: REORDERED,
        started: record.acquired_at,
        ended: record.acquired_at,
        outcome: 'completed',
      },
    ],
  }
  await putRaw(s3, bucket, key, JSON.stringify(forged))
  return forged
}

describe('a terminal shows what is true, whatever strings a record holds', () => {
  it('inspect shows a held lock as held: strings from the record are escaped, one field per line', async () => {
    const key = 'locks/escapes-inspect'
    await forgedLock(key)
    const { code, out } = await cli('inspect', ...at(key))
    expect(code).toBe(ExitCode.Ok)
    expect(activeIn(out)).toEqual([])
    expect(out).toMatch(/^state +held, paused$/m)
    expect(out).not.toMatch(/^state +free/m)
    expect(out).toContain('holder    \\x1b[2K\\r\\x1b[32mstate  free (released)\\x1b[0m')
    expect(out).toContain('job\\u202e1/boj')
  })

  it('list and history escape them too', async () => {
    const key = 'locks/escapes-list'
    await forgedLock(key)
    const listed = await cli('list', '--bucket', bucket, '--prefix', 'locks/escapes-list')
    expect(listed.code).toBe(ExitCode.Ok)
    expect(activeIn(listed.out)).toEqual([])
    expect(listed.out).toContain('\\x1b[2K')
    const history = await cli('history', ...at(key))
    expect(history.code).toBe(ExitCode.Ok)
    expect(activeIn(history.out)).toEqual([])
    expect(history.out).toContain('job\\u202e1/boj')
  })

  it('--json stays exact: the strings as the record holds them', async () => {
    const key = 'locks/escapes-json'
    const forged = await forgedLock(key)
    const { code, out } = await cli('inspect', ...at(key), '--json')
    expect(code).toBe(ExitCode.Ok)
    const shown = JSON.parse(out)
    expect(shown.owner).toBe(FORGED)
    expect(shown.record.paused).toEqual(forged.paused)
  })

  it('exec refused an object that is not a lock shows its bytes escaped, as inspect does; --json keeps them exact', async () => {
    const key = 'locks/escapes-exec'
    await putRaw(s3, bucket, key, FORGED)
    const shown = await cli('exec', ...at(key), '--', 'true')
    expect(shown.code).toBe(ExitCode.Corrupted)
    expect(activeIn(shown.err)).toEqual([])
    expect(shown.err).toContain('raw object: \\x1b[2K\\r\\x1b[32mstate  free (released)\\x1b[0m')
    const json = await cli('exec', ...at(key), '--json', '--', 'true')
    expect(json.code).toBe(ExitCode.Corrupted)
    expect(activeIn(json.err)).toEqual([])
    // The error comes last, after the lines exec logged on its way.
    expect(JSON.parse(json.err.split('\n').at(-1) ?? '').error.raw).toBe(FORGED)
  })

  it('an operator command that names the holder escapes it as well', async () => {
    const key = 'locks/escapes-force'
    await forgedLock(key)
    const { code, out, err } = await cli('force-release', ...at(key))
    expect(code).toBe(ExitCode.Ok)
    expect(activeIn(`${out}\n${err}`)).toEqual([])
  })
})
