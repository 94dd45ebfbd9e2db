import { hostname, userInfo } from 'node:os'
import type { S3Client } from '@aws-sdk/client-s3'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { ExitCode } from '../../lib/cli/main.js'
import { S3Lock } from '../../lib/s3/index.js'
import pkg from '../../package.json' with { type: 'json' }
import { RunningCli, runCliProgram } from '../support/cli.js'
import { s3ProgramEnv } from '../support/cli-engines.js'
import { leaseOf } from '../support/lease-of.js'
import { freshBucket, getRecord, putRaw, testS3Client } from '../support/s3.js'

let s3: S3Client
let bucket: string

beforeAll(async () => {
  s3 = testS3Client()
  bucket = await freshBucket(s3, 'cli-program')
})

afterAll(() => s3.destroy())

/** The environment an operator's shell gives: the SDK's own variables, nothing of this repository's. */
const awsEnv = s3ProgramEnv

describe('lambda-singleton as a program, on a real S3 engine', () => {
  it('prints its version, and help on stdout', async () => {
    expect(await runCliProgram(['--version'], {})).toEqual({
      code: 0,
      stdout: `${pkg.version}\n`,
      stderr: '',
    })
    const help = await runCliProgram(['help', 'watch'], {})
    expect(help).toMatchObject({ code: 0, stdout: expect.stringMatching(/^usage: lambda-singleton watch /) })
  })

  it('reads the endpoint from AWS_ENDPOINT_URL_S3, as the SDK does', async () => {
    await leaseOf(new S3Lock({ s3, bucket, key: 'locks/program', owner: 'job/2' }).tryAcquire())
    const { code, stdout } = await runCliProgram(
      ['inspect', '--bucket', bucket, '--key', 'locks/program', '--json'],
      awsEnv(),
    )
    expect(code).toBe(ExitCode.Ok)
    expect(JSON.parse(stdout)).toMatchObject({ key: 'locks/program', owner: 'job/2', held: true })
  })

  it('shows an owner that holds terminal escapes as text on stdout, and the lock as held', async () => {
    await leaseOf(new S3Lock({ s3, bucket, key: 'locks/escapes', ttlMs: 600_000 }).tryAcquire())
    const record = await getRecord(s3, bucket, 'locks/escapes')
    const owner = '\x1b[2K\r\x1b[32mstate  free (released)\x1b[0m'
    await putRaw(s3, bucket, 'locks/escapes', JSON.stringify({ ...record, owner }))
    const { code, stdout } = await runCliProgram(
      ['inspect', '--bucket', bucket, '--key', 'locks/escapes'],
      awsEnv(),
    )
    expect(code).toBe(ExitCode.Ok)
    expect(stdout).not.toContain('\x1b')
    expect(stdout).toMatch(/^state +held$/m)
    expect(stdout).toContain('\\x1b[2K\\r\\x1b[32mstate  free (released)\\x1b[0m')
  })

  it('writes the real host name and user into a force-released record by default', async () => {
    const stuck = await leaseOf(new S3Lock({ s3, bucket, key: 'locks/by-host', ttlMs: 600_000 }).tryAcquire())
    expect(stuck?.isHeld).toBe(true)
    const { code } = await runCliProgram(['force-release', '--bucket', bucket, '--key', 'locks/by-host'], {
      ...awsEnv(),
      HOSTNAME: 'not-the-host-name',
    })
    expect(code).toBe(ExitCode.Ok)
    expect(await getRecord(s3, bucket, 'locks/by-host')).toMatchObject({
      owner: `force-released by ${userInfo().username}@${hostname()}`,
    })
  })

  it('names a missing region or missing credentials as configuration, not as a store that kept failing', async () => {
    const { AWS_REGION: _region, ...noRegion } = awsEnv()
    const args = ['inspect', '--bucket', bucket, '--key', 'locks/program']
    const region = await runCliProgram(args, noRegion)
    expect(region).toMatchObject({ code: ExitCode.Configuration, stdout: '' })
    expect(region.stderr).toMatch(/^ConfigurationError: no AWS region: set AWS_REGION/)
    const { AWS_ACCESS_KEY_ID: _id, AWS_SECRET_ACCESS_KEY: _secret, ...noCredentials } = awsEnv()
    const credentials = await runCliProgram(args, noCredentials)
    expect(credentials).toMatchObject({ code: ExitCode.Configuration, stdout: '' })
    expect(credentials.stderr).toMatch(/^ConfigurationError: no AWS credentials \(.+\): set AWS_PROFILE/)
    expect(region.stderr + credentials.stderr).not.toMatch(/kept failing/)
  })

  it('watches until Ctrl-C, then exits 0', async () => {
    await leaseOf(new S3Lock({ s3, bucket, key: 'watched/x', owner: 'job/x' }).tryAcquire())
    const watch = new RunningCli(
      ['watch', '--bucket', bucket, '--prefix', 'watched/', '--interval', '0.2'],
      awsEnv(),
    )
    await watch.waitFor(/watched\/x +held +job\/x [\s\S]*watched\/x +held +job\/x /)
    expect(await watch.stop('SIGINT')).toBe(ExitCode.Ok)
    expect(watch.stdout).toMatch(new RegExp(`^s3://${bucket}/watched/\\*: 1 lock, `))
    expect(watch.stderr).toBe('')
  })
})
