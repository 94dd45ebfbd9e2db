import { chmodSync, mkdirSync, mkdtempSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { locateProgram } from '../../lib/exec/locate.js'

/** A folder with a runnable `job.sh`, a `notes.sh` that may not be run, and a folder `tool`. */
function bin(): string {
  const dir = mkdtempSync(join(tmpdir(), 'locate-'))
  writeFileSync(join(dir, 'job.sh'), '#!/bin/sh\n')
  chmodSync(join(dir, 'job.sh'), 0o755)
  writeFileSync(join(dir, 'notes.sh'), '#!/bin/sh\n', { mode: 0o644 })
  mkdirSync(join(dir, 'tool'))
  return dir
}

describe('finding the command before the lock is taken', () => {
  it('finds a program on PATH and one given by its path', async () => {
    const dir = bin()
    expect(await locateProgram('job.sh', { PATH: `/nonexistent:${dir}` })).toBeUndefined()
    expect(await locateProgram(join(dir, 'job.sh'), { PATH: '' })).toBeUndefined()
    expect(await locateProgram('sh')).toBeUndefined()
  })

  it('says ENOENT (exit 127) for a program that is nowhere, and for a folder of that name', async () => {
    const dir = bin()
    expect(await locateProgram('nothing.sh', { PATH: dir })).toMatchObject({
      code: 'ENOENT',
      message: 'nothing.sh: not found in PATH',
    })
    expect(await locateProgram('tool', { PATH: dir })).toMatchObject({ code: 'ENOENT' })
    expect(await locateProgram(join(dir, 'nothing.sh'))).toMatchObject({
      code: 'ENOENT',
      message: `${join(dir, 'nothing.sh')}: no such file`,
    })
  })

  it('says EACCES (exit 126) for a file that is there but may not be run, unless a runnable one comes later on PATH', async () => {
    const dir = bin()
    const other = bin()
    writeFileSync(join(other, 'notes.sh'), '#!/bin/sh\n', { mode: 0o755 })
    chmodSync(join(other, 'notes.sh'), 0o755)
    expect(await locateProgram('notes.sh', { PATH: dir })).toMatchObject({ code: 'EACCES' })
    expect(await locateProgram('notes.sh', { PATH: `${dir}:${other}` })).toBeUndefined()
  })
})
