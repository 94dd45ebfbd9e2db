// exec's supervision on a fake process group and a manual clock: no real process, no real timer.
import { describe, expect, it } from 'vitest'
import { ExitCode } from '../../lib/cli/exit-codes.js'
import { LockLostError, LostReason } from '../../lib/core/errors.js'
import { EXEC_ENV, type SupervisedLease } from '../../lib/exec/command-env.js'
import { type Ended, type SupervisedCommand, supervise } from '../../lib/exec/supervise.js'
import { ManualClock, settle } from '../support/sim-clock.js'
import { FakeGroup, FakeSignals, type GroupShape } from './fake-group.js'

const KILL_AFTER_MS = 10_000

interface Started {
  readonly group: FakeGroup
  readonly ended: Promise<Ended>
  readonly clock: ManualClock
  readonly signals: FakeSignals
  readonly lines: Record<string, unknown>[]
  /** The environment the command was started with. */
  readonly env: () => NodeJS.ProcessEnv
  loseLease(reason: LostReason): void
  /** Whether supervision is over, i.e. the lock may be released. */
  done(): boolean
}

function lease(controller: AbortController): SupervisedLease {
  return {
    key: 'jobs/nightly',
    token: 17,
    expiresAt: new Date('2027-01-15T03:01:00.000Z'),
    signal: controller.signal,
    lease: { owner: 'ops@host-1234-abcd' },
  }
}

function start(
  shape: GroupShape = {},
  options: {
    notStarted?: NodeJS.ErrnoException
    lostBefore?: LostReason
    tick?: string
    /** What the wrapper's own environment holds besides PATH and HOME. */
    inherited?: NodeJS.ProcessEnv
  } = {},
): Started {
  const clock = new ManualClock()
  const signals = new FakeSignals()
  const controller = new AbortController()
  const loseLease = (reason: LostReason) =>
    controller.abort(new LockLostError('lost', { key: 'jobs/nightly', reason, token: 17 }))
  if (options.lostBefore) loseLease(options.lostBefore)
  const lines: Record<string, unknown>[] = []
  let group: FakeGroup | undefined
  let env: NodeJS.ProcessEnv = {}
  const command: SupervisedCommand = {
    argv: ['./nightly.sh', '--all'],
    killAfterMs: KILL_AFTER_MS,
    tick: options.tick,
  }
  const ended = supervise(lease(controller), command, {
    start: (_argv, given) => {
      env = given
      group = new FakeGroup(clock, shape, options.notStarted)
      return group
    },
    signals,
    clock,
    env: { PATH: '/usr/bin', HOME: '/home/ops', ...options.inherited },
    err: (text) => lines.push(JSON.parse(text) as Record<string, unknown>),
  })
  let over = false
  void ended.finally(() => {
    over = true
  })
  if (!group) throw new Error('supervise did not start the command')
  return { group, ended, clock, signals, lines, env: () => env, loseLease, done: () => over }
}

function errnoError(code: string, message: string): NodeJS.ErrnoException {
  return Object.assign(new Error(message), { code })
}

describe('exec supervision', () => {
  it('starts the command with the lease in its environment, on top of what the wrapper had', () => {
    const { env } = start({}, { tick: '2027-01-15T03:00:00Z' })
    expect(env()).toEqual({
      PATH: '/usr/bin',
      HOME: '/home/ops',
      [EXEC_ENV.token]: '17',
      [EXEC_ENV.key]: 'jobs/nightly',
      [EXEC_ENV.owner]: 'ops@host-1234-abcd',
      [EXEC_ENV.expiresAt]: '2027-01-15T03:01:00.000Z',
      [EXEC_ENV.tick]: '2027-01-15T03:00:00Z',
    })
  })

  it('leaves the tick out of the environment when there is none', () => {
    const { env } = start()
    expect(env()).not.toHaveProperty(EXEC_ENV.tick)
  })

  it("removes a tick the wrapper inherited when there is none: the command must not take another run's tick for its own", () => {
    // An exec in another exec's command, or a variable left in a shell.
    const { env } = start({}, { inherited: { [EXEC_ENV.tick]: '2027-01-15T02:00:00Z' } })
    expect(env()).not.toHaveProperty(EXEC_ENV.tick)
  })

  it("replaces the lease's variables the wrapper inherited with its own", () => {
    const inherited = { [EXEC_ENV.token]: '3', [EXEC_ENV.key]: 'jobs/outer', [EXEC_ENV.tick]: 'outer-tick' }
    const { env } = start({}, { inherited, tick: '2027-01-15T03:00:00Z' })
    expect(env()).toMatchObject({
      [EXEC_ENV.token]: '17',
      [EXEC_ENV.key]: 'jobs/nightly',
      [EXEC_ENV.tick]: '2027-01-15T03:00:00Z',
    })
  })

  it('says the command started, with its pid, as soon as its group is started', () => {
    const { lines } = start()
    expect(lines).toEqual([
      { level: 'INFO', message: 'command started', key: 'jobs/nightly', token: 17, pid: 4242 },
    ])
  })

  it('reports the command status, not lost, when the command ran to its end', async () => {
    const { group, ended } = start()
    group.exit(3)
    await expect(ended).resolves.toEqual({ status: 3, lost: false })
  })

  it('keeps the lock until the last process of the group is gone, after the command itself exited', async () => {
    const { group, ended, lines, done } = start({ children: [[]] })
    group.exit(0)
    await settle()
    expect(done()).toBe(false)
    expect(lines).toContainEqual({
      level: 'INFO',
      message: 'command exited; processes it started still run, and keep the lock until they end',
      key: 'jobs/nightly',
      status: 0,
      pgid: 4242,
    })
    group.childrenExit()
    await expect(ended).resolves.toEqual({ status: 0, lost: false })
  })

  it('sends SIGTERM to the group when the lease is lost, and SIGKILL killAfterMs later when the group ignores it', async () => {
    const { group, ended, clock, loseLease } = start({ leaderIgnores: ['SIGTERM'] })
    const lostAt = clock.now()
    loseLease(LostReason.TakenOver)
    await clock.advance(KILL_AFTER_MS - 1)
    expect(group.received).toEqual([{ signal: 'SIGTERM', at: lostAt }])
    await clock.advance(1)
    expect(group.received).toEqual([
      { signal: 'SIGTERM', at: lostAt },
      { signal: 'SIGKILL', at: lostAt + KILL_AFTER_MS },
    ])
    await expect(ended).resolves.toEqual({ status: 128 + 9, lost: true })
  })

  it('kills the processes the command started that ignore SIGTERM, though the command obeyed it', async () => {
    const { group, ended, clock, loseLease } = start({ children: [['SIGTERM']] })
    loseLease(LostReason.Expired)
    await clock.advance(KILL_AFTER_MS)
    expect(group.received.map((r) => r.signal)).toEqual(['SIGTERM', 'SIGKILL'])
    await expect(ended).resolves.toEqual({ status: 128 + 15, lost: true })
  })

  it('sends nothing more once the group is gone', async () => {
    const { group, ended, clock, loseLease } = start()
    loseLease(LostReason.TakenOver)
    await expect(ended).resolves.toEqual({ status: 128 + 15, lost: true })
    await clock.advance(KILL_AFTER_MS * 2)
    expect(group.received.map((r) => r.signal)).toEqual(['SIGTERM'])
    expect(clock.pending).toBe(0)
  })

  it('passes a forwarded signal on to the group, and starts the kill timer once', async () => {
    const { group, ended, clock, signals } = start({ leaderIgnores: ['SIGTERM', 'SIGINT'] })
    const firstAt = clock.now()
    signals.send('SIGTERM')
    await clock.advance(3_000)
    signals.send('SIGINT')
    await clock.advance(KILL_AFTER_MS)
    expect(group.received).toEqual([
      { signal: 'SIGTERM', at: firstAt },
      { signal: 'SIGINT', at: firstAt + 3_000 },
      { signal: 'SIGKILL', at: firstAt + KILL_AFTER_MS },
    ])
    // Stopped by the operator, not by a loss: the lease was not lost.
    await expect(ended).resolves.toEqual({ status: 128 + 9, lost: false })
  })

  it("leaves no kill timer behind when a second signal stops the group before the first one's SIGKILL", async () => {
    const { group, ended, clock, signals } = start({ leaderIgnores: ['SIGTERM'] })
    signals.send('SIGTERM')
    await clock.advance(3_000)
    signals.send('SIGINT')
    await expect(ended).resolves.toEqual({ status: 128 + 2, lost: false })
    await clock.advance(KILL_AFTER_MS * 2)
    expect(group.received.map((r) => r.signal)).toEqual(['SIGTERM', 'SIGINT'])
    expect(clock.pending).toBe(0)
  })

  it('reports lost when the lease was lost while the command ran, whatever the command exits with', async () => {
    const { group, ended, lines, loseLease } = start({ leaderIgnores: ['SIGTERM'] })
    loseLease(LostReason.TakenOver)
    group.exit(0)
    await expect(ended).resolves.toEqual({ status: 0, lost: true })
    expect(lines).toEqual([
      { level: 'INFO', message: 'command started', key: 'jobs/nightly', token: 17, pid: 4242 },
      {
        level: 'ERROR',
        message: 'stopping the command: the lease was lost',
        key: 'jobs/nightly',
        token: 17,
        pid: 4242,
        killAfterMs: KILL_AFTER_MS,
      },
    ])
  })

  it.each([
    [LostReason.Replaced, 'replaced by a run of a newer tick'],
    [LostReason.ReleasedByOperator, 'released by an operator'],
  ])('warns, not errs, when the lease was %s on purpose', async (reason, what) => {
    const { group, ended, lines, loseLease } = start()
    loseLease(reason)
    await ended
    expect(group.received.map((r) => r.signal)).toEqual(['SIGTERM'])
    expect(lines[1]).toMatchObject({ level: 'WARN', message: `stopping the command: the lease was ${what}` })
  })

  it('stops the command at once when the lease was lost before it started', async () => {
    const { group, ended } = start({}, { lostBefore: LostReason.Expired })
    expect(group.received.map((r) => r.signal)).toEqual(['SIGTERM'])
    await expect(ended).resolves.toEqual({ status: 128 + 15, lost: true })
  })

  it.each([
    ['ENOENT', ExitCode.CommandNotFound],
    ['EACCES', ExitCode.CannotRun],
  ])('gives the exit code for a command that could not start (%s)', async (code, exitCode) => {
    const error = errnoError(code, `spawn ./nightly.sh ${code}`)
    const { ended, lines } = start({}, { notStarted: error })
    await expect(ended).resolves.toEqual({ status: exitCode, lost: false })
    expect(lines).toEqual([
      {
        level: 'ERROR',
        message: `cannot run ./nightly.sh: spawn ./nightly.sh ${code}`,
        key: 'jobs/nightly',
        code,
      },
    ])
  })

  it('stops passing signals on, and lets the group stand down, once supervision is over', async () => {
    const { group, ended, signals } = start()
    expect(signals.subscribed).toBe(1)
    group.exit(0)
    await ended
    expect(signals.subscribed).toBe(0)
    expect(group.closed).toBe(true)
    signals.send('SIGTERM')
    expect(group.received).toEqual([])
  })

  it('stops listening for the loss of the lease once supervision is over', async () => {
    const { group, ended, lines, loseLease } = start()
    group.exit(0)
    await ended
    loseLease(LostReason.Released)
    expect(group.received).toEqual([])
    expect(lines).toEqual([
      { level: 'INFO', message: 'command started', key: 'jobs/nightly', token: 17, pid: 4242 },
    ])
  })
})
