import { expect, it } from 'vitest'
import { ExitCode } from '../../lib/cli/main.js'
import { Lock, LockLostError } from '../../lib/index.js'
import type { CliEngine } from '../support/cli-engines.js'
import { leaseOf } from '../support/lease-of.js'

/** pause and resume against a real engine: what they write, print and exit with. */
export function pauseSuite(engine: () => CliEngine): void {
  const lock = (key: string, owner: string, ttlMs = 600_000) =>
    new Lock({ store: engine().store(), key, owner, ttlMs })

  it('pauses with a note, shows it in inspect and list, and resumes', async () => {
    const { cli, stored, where } = engine()
    await (await leaseOf(lock('locks/p1', 'job/1').tryAcquire()))?.release()
    const before = await stored('locks/p1')
    const paused = await cli('pause', '--key', 'locks/p1', '--note', 'migrating', '--owner', 'alice')
    expect(paused).toEqual({
      code: ExitCode.Ok,
      out: `paused ${where('locks/p1')} ("migrating"): runs skip from the next one`,
      err: '',
    })
    const record = await stored('locks/p1')
    expect(record).toMatchObject({ ...before, v: 2, paused: { by: 'alice', note: 'migrating' } })
    const inspect = await cli('inspect', '--key', 'locks/p1')
    expect(inspect.out).toMatch(/^state +free, paused$/m)
    expect(inspect.out).toMatch(/^paused +since \d{4}-\d\d-\d\dT[\d:.]+Z by alice: migrating$/m)
    const json = JSON.parse((await cli('inspect', '--key', 'locks/p1', '--json')).out)
    expect(json).toMatchObject({
      paused: {
        by: 'alice',
        at: new Date((record?.paused?.at ?? 0) * 1000).toISOString(),
        note: 'migrating',
      },
      record: { v: 2 },
    })
    const list = await cli('list', '--prefix', 'locks/p1')
    expect(list.out).toMatch(/^locks\/p1 +free, paused +job\/1 /m)
    expect(JSON.parse((await cli('list', '--prefix', 'locks/p1', '--json')).out).locks[0]).toMatchObject({
      paused: { by: 'alice' },
    })
    const resumed = await cli('resume', '--key', 'locks/p1', '--owner', 'bob')
    expect(resumed.code).toBe(ExitCode.Ok)
    expect(resumed.out).toMatch(
      new RegExp(
        `^resumed ${where('locks/p1').replace(/[.*+?^${}()|[\]\\/]/g, '\\$&')}: it was paused by alice at .* \\("migrating"\\); the next run runs$`,
      ),
    )
    expect(await stored('locks/p1')).toEqual(before)
    expect(await cli('resume', '--key', 'locks/p1')).toEqual({
      code: ExitCode.Ok,
      out: `${where('locks/p1')} is not paused; nothing changed`,
      err: '',
    })
  })

  it('leaves a held lock to its holder, whose release keeps the pause; --json says so', async () => {
    const { cli, stored } = engine()
    const lease = await leaseOf(lock('locks/p2', 'job/2').tryAcquire())
    const { code, out } = await cli('pause', '--key', 'locks/p2', '--json', '--owner', 'alice')
    expect(code).toBe(ExitCode.Ok)
    expect(JSON.parse(out)).toMatchObject({
      key: 'locks/p2',
      paused: true,
      wasHeld: true,
      endedLease: false,
      previousOwner: 'job/2',
      record: { v: 2, token: lease?.record.token, paused: { by: 'alice' } },
    })
    await lease?.renew()
    await lease?.release()
    expect(await stored('locks/p2')).toMatchObject({
      v: 2,
      expires_at: 0,
      token: lease?.record.token,
      paused: { by: 'alice' },
    })
    const again = await cli('pause', '--key', 'locks/p2', '--owner', 'bob')
    expect(again.err).toMatch(/^note: it was already paused by alice at .*; replaced$/)
  })

  it('with --now, ends the held lease: its renewal is refused and its token is below the new one', async () => {
    const { cli, stored } = engine()
    const lease = await leaseOf(lock('locks/p3', 'job/3').tryAcquire())
    const { code, out } = await cli('pause', '--key', 'locks/p3', '--now', '--owner', 'alice')
    expect(code).toBe(ExitCode.Ok)
    const record = await stored('locks/p3')
    expect(out).toMatch(
      new RegExp(
        `: the lease of job/3 is over: token ${lease?.record.token} -> ${record?.token}, its fenced writes are refused$`,
      ),
    )
    expect(record).toMatchObject({ v: 2, expires_at: 0, owner: 'paused by alice' })
    await expect(lease?.renew()).rejects.toBeInstanceOf(LockLostError)
  })

  it('exits 3 for a missing key and 5 for a record it does not read, writing nothing', async () => {
    const { cli, where } = engine()
    const missing = await cli('pause', '--key', 'locks/none')
    expect(missing).toMatchObject({ code: ExitCode.NotFound, out: '' })
    expect(missing.err).toMatch(/^LockNotFoundError: no lock /)
    expect(missing.err).toContain(where('locks/none'))
    expect((await cli('resume', '--key', 'none')).code).toBe(ExitCode.NotFound)
    expect((await cli('resume', '--key', 'none')).err).toMatch(/try --key locks\/none/)
    const { store } = engine()
    const future = JSON.stringify({ v: 3, token: 1, expires_at: 0, owner: 'future' })
    const written = await store().create('locks/future', future)
    expect(written.status).toBe('written')
    expect((await cli('pause', '--key', 'locks/future')).code).toBe(ExitCode.Corrupted)
    expect((await cli('resume', '--key', 'locks/future')).code).toBe(ExitCode.Corrupted)
    const found = await store().read('locks/future')
    expect(found.status === 'found' && JSON.parse(found.body)).toEqual(JSON.parse(future))
  })

  it('runs as a program', async () => {
    const { program, stored } = engine()
    await (await leaseOf(lock('locks/p4', 'job/4').tryAcquire()))?.release()
    const paused = await program('pause', '--key', 'locks/p4', '--note', 'from the shell', '--json')
    expect(paused.code).toBe(ExitCode.Ok)
    expect(JSON.parse(paused.stdout)).toMatchObject({
      paused: true,
      record: { paused: { note: 'from the shell' } },
    })
    expect((await stored('locks/p4'))?.paused?.note).toBe('from the shell')
    const resumed = await program('resume', '--key', 'locks/p4', '--json')
    expect(JSON.parse(resumed.stdout)).toMatchObject({ resumed: true, lifted: { note: 'from the shell' } })
    expect((await stored('locks/p4'))?.v).toBe(1)
  })
}
