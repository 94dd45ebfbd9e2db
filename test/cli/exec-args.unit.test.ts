import { describe, expect, it } from 'vitest'
import { parseCommandLine } from '../../lib/cli/args.js'
import { durationMs } from '../../lib/cli/exec-args.js'
import { UsageError } from '../../lib/cli/exit-codes.js'
import { commandHelp, usageLine } from '../../lib/cli/help.js'

const store = ['--bucket', 'b', '--key', 'locks/job']

describe('exec on the command line', () => {
  it('takes the command after --, untouched, with the defaults', () => {
    const line = parseCommandLine(['exec', ...store, '--', 'node', 'job.js', '--help', 'list', '--key', 'x'])
    expect(line).toMatchObject({
      kind: 'run',
      command: 'exec',
      key: 'locks/job',
      exec: {
        argv: ['node', 'job.js', '--help', 'list', '--key', 'x'],
        ttlMs: 60_000,
        onHeld: 'skip',
        waitMs: 0,
        tick: undefined,
        maxTickAgeMs: undefined,
        pauseAfterFailures: undefined,
        killAfterMs: 10_000,
      },
    })
  })

  it('reads its options and durations', () => {
    const line = parseCommandLine([
      'exec',
      ...store,
      '--ttl',
      '2m',
      '--on-held',
      'fail',
      '--wait',
      '90',
      '--tick',
      '2026-11-21T03:00:00Z',
      '--kill-after',
      '1500ms',
      '--max-tick-age',
      '10m',
      '--pause-after-failures',
      '3',
      '--',
      'true',
    ])
    expect(line).toMatchObject({
      exec: {
        ttlMs: 120_000,
        onHeld: 'fail',
        waitMs: 90_000,
        tick: '2026-11-21T03:00:00Z',
        maxTickAgeMs: 600_000,
        pauseAfterFailures: 3,
        killAfterMs: 1_500,
      },
    })
    expect(durationMs('1.5h', '--ttl')).toBe(5_400_000)
  })

  it("reads --on-held wait, the former name of fail with --wait, as fail: one word for one behaviour, as the handler's onHeld", () => {
    const line = parseCommandLine(['exec', ...store, '--on-held', 'wait', '--wait', '10m', '--', 'true'])
    expect(line).toMatchObject({ exec: { onHeld: 'fail', waitMs: 600_000 } })
  })

  it.each([
    [['exec', ...store], /needs the command to run after "--"/],
    [['exec', ...store, '--'], /needs the command to run after "--"/],
    [['exec', ...store, 'node', 'job.js'], /unexpected argument "node"/],
    [['exec', '--key', 'k', '--', 'true'], /give one of --bucket/],
    [['exec', '--bucket', 'b', '--', 'true'], /exec needs --key/],
    [['exec', ...store, '--on-held', 'throw', '--', 'true'], /--on-held must be skip, fail or replace/],
    [['exec', ...store, '--on-held', 'wait', '--', 'true'], /--on-held wait needs --wait/],
    [['exec', ...store, '--ttl', '10x', '--', 'true'], /--ttl must be a duration/],
    // Refused in --ttl's own terms, before the store is opened: exec has no option for the margin.
    [['exec', ...store, '--ttl', '0', '--', 'true'], /^--ttl must be at least 3001ms: .*, got "0"$/],
    [['exec', ...store, '--ttl', '2s', '--', 'true'], /^--ttl must be at least 3001ms: .*, got "2s"$/],
    [['exec', ...store, '--ttl', '3s', '--', 'true'], /^--ttl must be at least 3001ms: .*, got "3s"$/],
    [['exec', ...store, '--kill-after', '-1', '--', 'true'], /--kill-after needs a value/],
    [['exec', ...store, '--wait', '8d', '--', 'true'], /--wait must be a duration/],
    [['exec', ...store, '--on-held', 'replace', '--', 'true'], /--on-held replace needs --tick/],
    [['exec', ...store, '--max-tick-age', '1h', '--', 'true'], /--max-tick-age needs --tick/],
    [
      ['exec', ...store, '--tick', 't', '--max-tick-age', '0s', '--', 'true'],
      /--max-tick-age must be a finite number of ms above 0/,
    ],
    [
      ['exec', ...store, '--pause-after-failures', '0', '--', 'true'],
      /--pause-after-failures must be a whole number/,
    ],
    [
      ['exec', ...store, '--pause-after-failures', '1.5', '--', 'true'],
      /--pause-after-failures must be a whole number/,
    ],
    [['inspect', ...store, '--', 'true'], /unexpected argument "true"/],
    [['inspect', ...store, '--ttl', '5s'], /inspect does not take --ttl/],
  ])('refuses %j', (argv, message) => {
    expect(() => parseCommandLine(argv)).toThrow(UsageError)
    expect(() => parseCommandLine(argv)).toThrow(message)
  })

  it('takes the shortest --ttl whose renewals fit in the lease', () => {
    expect(parseCommandLine(['exec', ...store, '--ttl', '3001ms', '--', 'true'])).toMatchObject({
      exec: { ttlMs: 3_001 },
    })
  })

  it('shows --json among its own options, before --: after it, --json would go to the command', () => {
    expect(commandHelp('exec').split('\n')[0]).toMatch(/ \[--json\] -- COMMAND \[ARG\.\.\.\]$/)
    expect(usageLine('exec').split('\n')[0]).toMatch(/ \[--json\] -- COMMAND \[ARG\.\.\.\]$/)
    expect(parseCommandLine(['exec', ...store, '--json', '--', 'echo', 'hi'])).toMatchObject({
      json: true,
      exec: { argv: ['echo', 'hi'] },
    })
  })

  it('--help before -- is the help of exec; after it, the command’s', () => {
    expect(parseCommandLine(['exec', '--help'])).toEqual({ kind: 'help', command: 'exec' })
    expect(parseCommandLine(['exec', ...store, '--', 'node', '--help']).kind).toBe('run')
    expect(commandHelp('exec')).toMatch(/LAMBDA_SINGLETON_TOKEN/)
  })
})
