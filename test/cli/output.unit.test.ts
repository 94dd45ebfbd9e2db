import { hostname, userInfo } from 'node:os'
import { describe, expect, it } from 'vitest'
import { COMMANDS, type CommandName } from '../../lib/cli/commands-spec.js'
import {
  ConfigurationError,
  ExitCode,
  exitCodeFor,
  LockNotFoundError,
  NotHeldError,
  UsageError,
} from '../../lib/cli/exit-codes.js'
import { duration, type LockView, lockTable } from '../../lib/cli/format.js'
import { commandHelp, programHelp } from '../../lib/cli/help.js'
import { defaultOperator, packageVersion } from '../../lib/cli/identity.js'
import {
  ConflictReason,
  LockConflictError,
  LockCorruptedError,
  LockOptionsError,
  LockStoreError,
} from '../../lib/index.js'

const held: LockView = {
  key: 'locks/a',
  held: true,
  token: 17,
  owner: 'job/1',
  expiresAt: '2026-01-01T00:01:00.000Z',
  released: false,
  expiresInMs: 42_300,
  lastRun: '2026-01-01T00:00:00Z',
}
const released: LockView = { ...held, key: 'locks/b', held: false, released: true, expiresInMs: undefined }

describe('what the CLI prints', () => {
  it('says how long until a lease ends the way an operator reads it', () => {
    expect([0, 999, 42_300, 245_000, 7_380_000, 273_600_000].map(duration)).toEqual([
      '0s',
      '0s',
      '42s',
      '4m 05s',
      '2h 03m',
      '3d 4h',
    ])
  })

  it('lists locks as a table: state, holder, token, expiry, last run', () => {
    const expired = { ...held, key: 'locks/c', held: false, expiresInMs: -200_000 }
    const lines = lockTable([held, released, expired])
    expect(lines[0]?.split(/\s{2,}/)).toEqual(['KEY', 'STATE', 'HOLDER', 'TOKEN', 'EXPIRES', 'LAST RUN'])
    expect(lines[1]?.split(/\s{2,}/)).toEqual([
      'locks/a',
      'held',
      'job/1',
      '17',
      'in 42s',
      '2026-01-01T00:00:00Z',
    ])
    expect(lines[2]?.split(/\s{2,}/)).toContain('released')
    expect(lines[3]?.split(/\s{2,}/)).toContain('expired 3m 20s ago')
  })

  it('adds a run column only when a record has a run counter', () => {
    const lines = lockTable([{ ...held, run: 42 }, released])
    expect(lines[0]?.split(/\s{2,}/)).toContain('RUN')
    expect(lines[1]?.split(/\s{2,}/)).toContain('42')
    expect(lines[2]?.split(/\s{2,}/)[4]).toBe('-')
  })

  it('lists a key it cannot read as unreadable, with the reason under the table', () => {
    const lines = lockTable([
      held,
      { key: 'locks/x', error: { name: 'LockCorruptedError', message: 'not JSON' } },
    ])
    expect(lines[2]).toMatch(/^locks\/x\s+unreadable/)
    expect(lines.at(-1)).toBe('locks/x: LockCorruptedError: not JSON')
  })
})

describe('exit codes', () => {
  it('gives each kind of outcome its own code', () => {
    expect(new Set(Object.values(ExitCode)).size).toBe(Object.keys(ExitCode).length)
    expect(exitCodeFor(new UsageError('x'))).toBe(ExitCode.Usage)
    expect(exitCodeFor(new LockOptionsError('x'))).toBe(ExitCode.Usage)
    expect(exitCodeFor(new LockNotFoundError('x', 'k'))).toBe(ExitCode.NotFound)
    expect(exitCodeFor(new NotHeldError('x'))).toBe(ExitCode.Refused)
    expect(exitCodeFor(new LockConflictError('x', { key: 'k', reason: ConflictReason.NotReleased }))).toBe(
      ExitCode.Refused,
    )
    expect(exitCodeFor(new LockCorruptedError('x', { key: 'k', raw: '' }))).toBe(ExitCode.Corrupted)
    expect(exitCodeFor(new ConfigurationError('x'))).toBe(ExitCode.Configuration)
    expect(exitCodeFor(new LockStoreError('x', { retryable: true }))).toBe(ExitCode.Failure)
    expect(exitCodeFor(new Error('a bug'))).toBeUndefined()
  })

  it('counts credentials the service refused as configuration, however deep the cause', () => {
    const refused = Object.assign(new Error('UnknownError'), { name: 'InvalidAccessKeyId' })
    const retried = new LockStoreError('kept failing', {
      retryable: true,
      cause: new LockStoreError('GetObject failed', { retryable: false, cause: refused }),
    })
    expect(exitCodeFor(retried)).toBe(ExitCode.Configuration)
    const denied = Object.assign(new Error('no'), { name: 'AccessDenied' })
    expect(exitCodeFor(new LockStoreError('x', { retryable: false, cause: denied }))).toBe(ExitCode.Failure)
  })
})

describe('help', () => {
  it('lists every command and every exit code', () => {
    const help = programHelp()
    for (const command of Object.keys(COMMANDS)) expect(help).toContain(`  ${command} `)
    for (const code of Object.values(ExitCode)) expect(help).toMatch(new RegExp(`^ +${code}  \\S`, 'm'))
  })

  it('gives each command its usage and every option it takes, and no other', () => {
    for (const [command, spec] of Object.entries(COMMANDS)) {
      const help = commandHelp(command as CommandName)
      expect(help).toMatch(new RegExp(`^usage: lambda-singleton ${command} `))
      const shown = [...help.matchAll(/^ {2}--([a-z-]+)/gm)].map((match) => match[1])
      expect(shown.sort()).toEqual([...spec.options].sort())
    }
    expect(commandHelp('reset')).toMatch(/--force +also replace an object that may be held/)
    expect(commandHelp('reset')).toMatch(/\(--token N \| --back-to-clock\)/)
    expect(commandHelp('reset')).toMatch(
      /--back-to-clock +instead of --token: a token from the store's clock, even\s+below\s+the\s+one\s+the\s+lock\s+shows/,
    )
    expect(commandHelp('reset').replace(/\s+/g, ' ')).toContain(
      "Objects that fencedPut wrote with a higher token then refuse every new holder's write until they are removed or rewritten",
    )
    expect(commandHelp('force-release')).toMatch(/--force +also raise the token of a lock that is not held/)
  })

  it("prints the package's version", async () => {
    const { default: pkg } = await import('../../package.json', { with: { type: 'json' } })
    expect(packageVersion()).toBe(pkg.version)
  })
})

describe('the operator name', () => {
  it('is the user at the real host name', () => {
    expect(defaultOperator({ HOSTNAME: 'not-this' })).toBe(`${userInfo().username}@${hostname()}`)
  })
})
