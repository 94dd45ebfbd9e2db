// The task construct's metric filters, as synthesized, against the lines `lambda-singleton exec`
// really prints, run as the task runs it (the construct's own exec arguments) on S3 (Ceph). A
// field renamed on either side, or a line that stops carrying what a filter reads, fails here.
import { randomUUID } from 'node:crypto'
import { Duration } from 'aws-cdk-lib'
import { Template } from 'aws-cdk-lib/assertions'
import * as ecs from 'aws-cdk-lib/aws-ecs'
import { ScheduleExpression } from 'aws-cdk-lib/aws-scheduler'
import { describe, expect, it } from 'vitest'
import { LockBucket, ScheduledSingletonTask } from '../../infra/index.js'
import { ExitCode } from '../../lib/cli/main.js'
import { testStack } from '../infra/support.js'
import { runCliProgram } from '../support/cli.js'
import { s3ProgramEnv } from '../support/cli-engines.js'
import { JobLog, RunningExec, until } from '../support/exec.js'
import { matches, parseFilterPattern, valueAt } from '../support/filter-pattern.js'
import { freshBucket, testS3Client } from '../support/s3.js'

const s3 = testS3Client()
const bucket = await freshBucket(s3, 'exec-filters')
s3.destroy()

/** The task as a stack declares it; its ttl short so that a lease can expire within the test. */
function synthesized() {
  const stack = testStack()
  const task = new ScheduledSingletonTask(stack, 'Job', {
    image: ecs.ContainerImage.fromRegistry('public.ecr.aws/docker/library/node:24-slim'),
    command: ['node', 'job.js'],
    lockBucket: new LockBucket(stack, 'Locks'),
    schedules: [{ name: 'hourly', expression: ScheduleExpression.rate(Duration.hours(1)) }],
    ttl: Duration.seconds(4),
    alarms: { maxRunTime: Duration.minutes(5) }, // every lifecycle metric: completed, held, paused
  })
  const template = Template.fromStack(stack).toJSON() as {
    Resources: Record<string, { Type: string; Properties: Record<string, unknown> }>
  }
  const resources = Object.values(template.Resources)
  const filters = resources
    .filter((resource) => resource.Type === 'AWS::Logs::MetricFilter')
    .map(({ Properties }) => {
      const [transformation] = Properties.MetricTransformations as {
        MetricName: string
        MetricValue: string
        Dimensions: { Key: string; Value: string }[]
      }[]
      if (!transformation) throw new Error('a metric filter without its transformation')
      return { pattern: parseFilterPattern(Properties.FilterPattern as string), ...transformation }
    })
  const definition = resources.find((resource) => resource.Type === 'AWS::ECS::TaskDefinition')
  const [container] = (definition?.Properties.ContainerDefinitions ?? []) as { Command: unknown[] }[]
  const command = container?.Command ?? []
  // exec's own arguments, up to `--`, with the stack's bucket (a reference) made the test's.
  const args = command.slice(command.indexOf('exec') + 1, command.indexOf('--'))
  const bucketAt = args.indexOf('--bucket') + 1
  return { filters, args: args.map((arg, at) => (at === bucketAt ? bucket : arg)) as string[], task }
}

const { filters, args } = synthesized()
const engineEnv = () => s3ProgramEnv()

/** What each metric filter makes of `stderr`'s JSON lines: the values it records, by metric. */
function metrics(stderr: string): Record<string, number[]> {
  const counted: Record<string, number[]> = Object.fromEntries(filters.map((f) => [f.MetricName, []]))
  const lines = stderr
    .split('\n')
    .filter((line) => line.startsWith('{'))
    .map((line) => JSON.parse(line) as unknown)
  for (const filter of filters) {
    for (const line of lines.filter((each) => matches(filter.pattern, each))) {
      // A line without the dimension's field is not counted by CloudWatch: no metric at all.
      for (const dimension of filter.Dimensions) {
        expect(valueAt(line, dimension.Value.slice(2).split('.')), dimension.Key).toBeTypeOf('string')
      }
      const value = filter.MetricValue === '1' ? 1 : valueAt(line, filter.MetricValue.slice(2).split('.'))
      expect(value, `${filter.MetricName}'s value ${filter.MetricValue}`).toBeTypeOf('number')
      counted[filter.MetricName]?.push(value as number)
    }
  }
  return counted
}

const lockKey = () => `locks/filters-${randomUUID().slice(0, 8)}`
const exec = (key: string, command: readonly string[]) =>
  new RunningExec([...withKey(key), '--', ...command], engineEnv())
const withKey = (key: string) => args.map((arg, at) => (args[at - 1] === '--key' ? key : arg))

describe("the task's metric filters, on the lines exec writes", () => {
  it('reads the filters it knows of: failed runs, lost leases, completed runs, held time, paused', () => {
    expect(filters.map((f) => f.MetricName).sort()).toEqual(
      ['Completed', 'FailedRuns', 'HeldMs', 'Lost', 'Paused'].sort(),
    )
  })

  it('counts a command that exits 0 as a completed run, and its held time', async () => {
    const log = new JobLog()
    const run = exec(lockKey(), log.job('ok', { sleepMs: 300 }))
    expect((await run.exited()).code, run.stderr).toBe(0)
    const counted = metrics(run.stderr)
    expect(counted).toMatchObject({ FailedRuns: [], Lost: [], Completed: [1], Paused: [] })
    expect(counted.HeldMs).toHaveLength(1)
    expect(counted.HeldMs?.[0]).toBeGreaterThanOrEqual(300)
  })

  it('counts a command that exits 3 as a failed run, not a completed one', async () => {
    const log = new JobLog()
    const run = exec(lockKey(), log.job('three', { exitCode: 3 }))
    expect((await run.exited()).code, run.stderr).toBe(3)
    const counted = metrics(run.stderr)
    expect(counted).toMatchObject({ FailedRuns: [1], Lost: [], Completed: [], Paused: [] })
    expect(counted.HeldMs).toHaveLength(1) // released all the same
  })

  it('counts a command that is not found (127) as a failed run, though the lock was not taken', async () => {
    const run = exec(lockKey(), ['no-such-command-on-path'])
    expect((await run.exited()).code, run.stderr).toBe(ExitCode.CommandNotFound)
    expect(metrics(run.stderr)).toEqual({
      FailedRuns: [1],
      Lost: [],
      Completed: [],
      HeldMs: [],
      Paused: [],
    })
  })

  it('counts a tick of a paused job as paused, and nothing else', async () => {
    const key = lockKey()
    // A job that ran once (pause needs its lock), then paused by an operator.
    expect((await exec(key, new JobLog().job('once')).exited()).code).toBe(0)
    const paused = await runCliProgram(['pause', '--key', key, '--bucket', bucket], engineEnv())
    expect(paused.code, paused.stderr).toBe(0)
    const log = new JobLog()
    const run = exec(key, log.job('unrun'))
    expect((await run.exited()).code, run.stderr).toBe(0)
    expect(log.notes()).toEqual([])
    expect(metrics(run.stderr)).toEqual({
      FailedRuns: [],
      Lost: [],
      Completed: [],
      HeldMs: [],
      Paused: [1],
    })
  })

  it('counts a lease that expired under its run, and taken by the next, as a lost lease', async () => {
    const key = lockKey()
    const log = new JobLog()
    const first = exec(key, log.job('first', { sleepMs: 60_000 }))
    await log.waitFor((note) => note.id === 'first' && note.what === 'start')
    // The wrapper stops renewing (its command runs on): the lease expires, and the next run takes it.
    first.child.kill('SIGSTOP')
    try {
      const next = new RunningExec(
        [...withKey(key), '--on-held', 'wait', '--wait', '60s', '--', ...log.job('next')],
        engineEnv(),
      )
      expect((await next.exited()).code, next.stderr).toBe(0)
      expect(metrics(next.stderr)).toMatchObject({ Lost: [], FailedRuns: [], Completed: [1] })
    } finally {
      first.child.kill('SIGCONT')
    }
    const { code } = await first.exited()
    expect(code, first.stderr).toBe(ExitCode.Lost)
    const counted = metrics(first.stderr)
    expect(counted.Lost, first.stderr).toEqual([1])
    expect(counted.Completed).toEqual([])
    // Its command was stopped: it exited non-zero, a failed run too.
    expect(counted.FailedRuns).toEqual([1])
    await until(
      () => log.notes().some((note) => note.id === 'first' && note.what === 'SIGTERM'),
      5_000,
      'no SIGTERM',
    )
  })
})
