import { fileURLToPath } from 'node:url'
import { describe, expect, it } from 'vitest'
import { ExitCode } from '../../lib/cli/exit-codes.js'
import { runCliProgram } from '../support/cli.js'

const hidePackages = fileURLToPath(new URL('../support/hide-packages.mjs', import.meta.url))

/** The CLI as a program in a project where `packages` are not installed. */
const withoutPackages = (packages: string[], ...args: string[]) =>
  runCliProgram(args, {
    NODE_OPTIONS: `--import=${hidePackages}`,
    LAMBDA_SINGLETON_TEST_HIDDEN_PACKAGES: packages.join(','),
    AWS_REGION: 'us-east-1',
    AWS_ACCESS_KEY_ID: 'test',
    AWS_SECRET_ACCESS_KEY: 'test',
  })

describe('the CLI where the SDK of the store it is pointed at is not installed', () => {
  it('names the package to install in one line, with the configuration exit code (--table)', async () => {
    const { code, stdout, stderr } = await withoutPackages(
      ['@aws-sdk/client-dynamodb'],
      'list',
      '--table',
      'T',
    )
    expect(code).toBe(ExitCode.Configuration)
    expect(stdout).toBe('')
    expect(stderr.trimEnd().split('\n')).toEqual([
      'ConfigurationError: --table needs @aws-sdk/client-dynamodb, which is not installed: npm install @aws-sdk/client-dynamodb',
    ])
  })

  it('names the package to install in one line, with the configuration exit code (--bucket)', async () => {
    const { code, stderr } = await withoutPackages(
      ['@aws-sdk/client-s3'],
      'inspect',
      '--bucket',
      'B',
      '--key',
      'locks/job',
      '--json',
    )
    expect(code).toBe(ExitCode.Configuration)
    expect(JSON.parse(stderr)).toEqual({
      error: {
        name: 'ConfigurationError',
        message: '--bucket needs @aws-sdk/client-s3, which is not installed: npm install @aws-sdk/client-s3',
        exitCode: ExitCode.Configuration,
      },
    })
  })
})
