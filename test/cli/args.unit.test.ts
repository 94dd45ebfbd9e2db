import { describe, expect, expectTypeOf, it } from 'vitest'
import { type CommandLineOf, parseCommandLine } from '../../lib/cli/args.js'
import { COMMANDS } from '../../lib/cli/commands-spec.js'
import { UsageError } from '../../lib/cli/exit-codes.js'
import { EtagQuoting } from '../../lib/s3/etag.js'

const parse = (line: string) => parseCommandLine(line.split(' ').filter(Boolean))
const usageError = (line: string) => {
  try {
    parse(line)
  } catch (error) {
    expect(error).toBeInstanceOf(UsageError)
    return (error as UsageError).message
  }
  throw new Error(`"${line}" was accepted`)
}

describe('the command line', () => {
  it('reads a command, its store and the options it takes, no others', () => {
    expect(parse('inspect --bucket b --key locks/a')).toEqual({
      kind: 'run',
      command: 'inspect',
      target: { bucket: 'b', table: undefined, partitionKey: undefined, endpoint: undefined },
      key: 'locks/a',
      json: false,
    })
    expect(parse('exec --bucket b --key k -- true')).not.toHaveProperty('prefix')
    expect(parse('list --bucket b')).not.toHaveProperty('key')
    expectTypeOf<CommandLineOf<'list'>>().not.toHaveProperty('key')
    expectTypeOf<CommandLineOf<'exec'>['key']>().toEqualTypeOf<string>()
    expectTypeOf<CommandLineOf<'reset'>>().toHaveProperty('backToClock')
    expect(parse('pause --bucket b --key k --note deploy --now')).toMatchObject({
      command: 'pause',
      note: 'deploy',
      now: true,
    })
    expect(() => parse('resume --bucket b --key k --now')).toThrow(/resume does not take --now/)
    expect(() => parse('pause --bucket b --key k --note')).toThrow(/--note needs a value/)
    expect(parse('list --table t --partition-key id --prefix locks/ --json')).toMatchObject({
      command: 'list',
      target: { table: 't', partitionKey: 'id' },
      prefix: 'locks/',
      json: true,
    })
    expect(parse('reset --bucket b --key k --token 1000 --force --owner alice')).toMatchObject({
      token: 1000,
      force: true,
      owner: 'alice',
    })
    expect(parse('watch --bucket b --interval 0.5')).toMatchObject({ command: 'watch', intervalMs: 500 })
  })

  it('takes a token only as plain decimal digits', () => {
    for (const token of [
      '1e3',
      '0x10',
      '+5',
      '5.0',
      '-1',
      '1_000',
      ' 7',
      '',
      'Infinity',
      '9007199254740992',
    ]) {
      expect(() => parseCommandLine(['reset', '--bucket', 'b', '--key', 'k', `--token=${token}`])).toThrow(
        token === '' ? '--token needs a value' : /--token must be a plain decimal integer/,
      )
    }
    expect(usageError('reset --bucket b --key k --token -1')).toMatch(/--token needs a value/)
    expect(parse('reset --bucket b --key k --token 9007199254740991')).toMatchObject({
      token: Number.MAX_SAFE_INTEGER,
    })
    expect(parse('reset --bucket b --key k --token 0')).toMatchObject({ token: 0 })
  })

  it('refuses an option the command does not take', () => {
    expect(usageError('inspect --bucket b --key k --token 5')).toBe('inspect does not take --token')
    expect(usageError('inspect --bucket b --key k --force')).toBe('inspect does not take --force')
    expect(usageError('list --bucket b --key k')).toBe('list does not take --key')
    expect(usageError('watch --bucket b --owner me')).toBe('watch does not take --owner')
    expect(usageError('force-release --bucket b --key k --token 3')).toBe(
      'force-release does not take --token',
    )
    expect(usageError('list --bucket b --interval 3')).toBe('list does not take --interval')
  })

  it('refuses what it does not know, or cannot take exactly as meant', () => {
    expect(usageError('inspect --bucket b --key k --nope')).toBe('unknown option --nope')
    expect(usageError('explode --bucket b')).toBe('unknown command "explode"')
    expect(usageError('inspect list --bucket b --key k')).toBe('unexpected argument "list"')
    expect(usageError('inspect --bucket b --key k --key j')).toBe('--key given more than once')
    expect(usageError('inspect --bucket b --key=')).toBe('--key needs a value')
    expect(usageError('inspect --bucket b --key')).toBe(
      '--key needs a value (one that starts with "-" is written --key=-…)',
    )
    expect(usageError('inspect --bucket b --json=yes --key k')).toBe('--json takes no value')
    expect(usageError('--bucket b')).toBe('no command given')
    expect(usageError('')).toBe('no command given')
  })

  it('needs exactly one store, and the options that the command cannot do without', () => {
    expect(usageError('inspect --key k')).toMatch(/one of --bucket .* or --table/)
    expect(usageError('inspect --bucket b --table t --key k')).toMatch(/one of --bucket .* or --table/)
    expect(usageError('inspect --bucket b --partition-key id --key k')).toMatch(/goes with --table/)
    expect(usageError('inspect --bucket b')).toBe('inspect needs --key')
    expect(usageError('force-release --table t')).toBe('force-release needs --key')
    expect(usageError('reset --bucket b --key k')).toBe('reset needs --token or --back-to-clock')
  })

  it("takes a table's sort key as NAME=VALUE, only with --table", () => {
    expect(parse('list --table t --partition-key id --sort-key kind=lock')).toMatchObject({
      target: { table: 't', partitionKey: 'id', sortKey: { name: 'kind', value: 'lock' } },
    })
    // The value is what follows the first "=", and may hold more.
    expect(parse('inspect --table t --sort-key kind=a=b --key k')).toMatchObject({
      target: { sortKey: { name: 'kind', value: 'a=b' } },
    })
    expect(parse('inspect --table t --key k')).not.toHaveProperty('target.sortKey')
    expect(usageError('inspect --table t --sort-key kind --key k')).toMatch(/--sort-key takes NAME=VALUE/)
    expect(usageError('inspect --table t --sort-key =lock --key k')).toMatch(/--sort-key takes NAME=VALUE/)
    expect(usageError('inspect --bucket b --sort-key kind=lock --key k')).toMatch(/goes with --table/)
    expect(usageError('inspect --table t --partition-key id --sort-key id=x --key k')).toMatch(
      /--sort-key .*other than the partition key/,
    )
  })

  it('refuses a key attribute named like a field of the lock record, naming the clash', () => {
    expect(usageError('inspect --table t --partition-key owner --key k')).toMatch(
      /--partition-key cannot be "owner": "owner" is a field of the lock record/,
    )
    expect(usageError('inspect --table t --sort-key state=x --key k')).toMatch(
      /--sort-key cannot be "state": "state" is a field of the lock record/,
    )
    expect(usageError('inspect --table t --partition-key lock_version --key k')).toMatch(/"lock_version"/)
  })

  it("takes a request timeout in seconds, for either store, as the store's requestTimeoutMs", () => {
    expect(parse('inspect --bucket b --key k --request-timeout 2.5')).toMatchObject({
      target: { bucket: 'b', requestTimeoutMs: 2_500 },
    })
    expect(parse('list --table t --request-timeout 0.001')).toMatchObject({
      target: { table: 't', requestTimeoutMs: 1 },
    })
    expect(parse('exec --bucket b --key k --request-timeout 30 -- true')).toMatchObject({
      target: { requestTimeoutMs: 30_000 },
    })
    expect(parse('inspect --bucket b --key k')).not.toHaveProperty('target.requestTimeoutMs')
    for (const timeout of ['0', '0.0001', 'abc', '1e1', '3601', '-1', '.5', 'Infinity']) {
      expect(() =>
        parseCommandLine(['inspect', '--bucket', 'b', '--key', 'k', `--request-timeout=${timeout}`]),
      ).toThrow(/--request-timeout must be a number of seconds from 0.001 to 3600/)
    }
  })

  it("takes S3's etag quoting as one of EtagQuoting's values, only with --bucket", () => {
    for (const quoting of Object.values(EtagQuoting)) {
      expect(parse(`force-release --bucket b --key k --etag-quoting ${quoting}`)).toMatchObject({
        target: { bucket: 'b', etagQuoting: quoting },
      })
    }
    expect(parse('inspect --bucket b --key k')).not.toHaveProperty('target.etagQuoting')
    expect(usageError('inspect --bucket b --key k --etag-quoting Quoted')).toBe(
      '--etag-quoting takes auto, quoted or unquoted, got "Quoted"',
    )
    expect(usageError('inspect --table t --key k --etag-quoting quoted')).toMatch(
      /--etag-quoting is how S3 etags are sent: it goes with --bucket/,
    )
  })

  it('takes a reset back to the clock instead of a token, never both', () => {
    expect(parse('reset --bucket b --key k --back-to-clock')).toMatchObject({
      command: 'reset',
      backToClock: true,
      force: false,
    })
    expect(parse('reset --bucket b --key k --back-to-clock')).not.toHaveProperty('token')
    expect(parse('reset --table t --key k --back-to-clock --force --json')).toMatchObject({
      backToClock: true,
      force: true,
      json: true,
    })
    expect(usageError('reset --bucket b --key k --token 5 --back-to-clock')).toBe(
      'give only one of --token, --back-to-clock',
    )
    expect(usageError('reset --bucket b --key k --back-to-clock=yes')).toBe('--back-to-clock takes no value')
    expect(usageError('force-release --bucket b --key k --back-to-clock')).toBe(
      'force-release does not take --back-to-clock',
    )
  })

  it('takes an interval in seconds, within bounds', () => {
    for (const interval of ['0', '0.05', 'abc', '1e1', '7200', '-1', '.5']) {
      expect(() => parseCommandLine(['watch', '--bucket', 'b', `--interval=${interval}`])).toThrow(
        /--interval must be a number of seconds/,
      )
    }
    expect(parse('watch --bucket b --interval 3')).toMatchObject({ intervalMs: 3_000 })
  })

  it('answers help for the program or for a command, however asked', () => {
    expect(parse('help')).toEqual({ kind: 'help' })
    expect(parse('--help')).toEqual({ kind: 'help' })
    expect(parse('-h')).toEqual({ kind: 'help' })
    expect(parse('help reset')).toEqual({ kind: 'help', command: 'reset' })
    expect(parse('reset --help')).toEqual({ kind: 'help', command: 'reset' })
    // Help comes first: a command line being written is what help is asked for.
    expect(parse('force-release --bucket b --nope -h')).toEqual({ kind: 'help', command: 'force-release' })
    expect(usageError('help explode')).toBe('unknown command "explode"')
    expect(usageError('help inspect list')).toMatch(/at most one command/)
  })

  it('answers --version alone', () => {
    expect(parse('--version')).toEqual({ kind: 'version' })
    expect(usageError('--version inspect')).toMatch(/--version takes no command/)
    expect(usageError('--version --json')).toMatch(/--version takes no command/)
  })

  it('lets every command take --json', () => {
    for (const command of Object.keys(COMMANDS))
      expect(COMMANDS[command as keyof typeof COMMANDS].options).toContain('json')
  })
})
