// The deployment examples of docs/without-cdk.md pass their own tools' validation: the Terraform
// module `terraform validate` against the AWS provider it names, the SAM template `cfn-lint`.
// Each test needs its tool on the machine, and says plainly in its name when it skips for lack of it.
import { execFile, spawnSync } from 'node:child_process'
import { copyFileSync, existsSync, mkdtempSync, writeFileSync } from 'node:fs'
import { homedir, tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { promisify } from 'node:util'
import { describe, expect, it } from 'vitest'

const run = promisify(execFile)
const examples = fileURLToPath(new URL('../../examples/without-cdk/', import.meta.url))

const installed = (command: string, versionFlag: string) =>
  spawnSync(command, [versionFlag], { stdio: 'ignore' }).status === 0

/**
 * A folder holding `registry.terraform.io/hashicorp/aws/<version>/…`, for an offline
 * `terraform init`: `TF_PROVIDER_MIRROR`, or where this project's machine image puts it.
 */
const mirror = [
  process.env.TF_PROVIDER_MIRROR,
  '/opt/tf-plugins',
  join(homedir(), '.terraform.d/plugins'),
  '/usr/share/terraform/plugins',
].find((path) => path !== undefined && existsSync(join(path, 'registry.terraform.io/hashicorp/aws')))

const terraformSkip = !installed('terraform', '-version')
  ? 'terraform is not installed'
  : mirror === undefined
    ? 'no local mirror of the AWS provider (set TF_PROVIDER_MIRROR to a folder holding registry.terraform.io/hashicorp/aws)'
    : undefined
const cfnLintSkip = installed('cfn-lint', '--version') ? undefined : 'cfn-lint is not installed'
const named = (title: string, skip: string | undefined) => (skip ? `${title} (skipped: ${skip})` : title)

describe('the deployment examples, validated by their own tools', () => {
  it.skipIf(terraformSkip !== undefined)(
    named('examples/without-cdk/main.tf passes terraform validate with the provider it names', terraformSkip),
    async () => {
      const dir = mkdtempSync(join(tmpdir(), 'lambda-singleton-tf-'))
      copyFileSync(join(examples, 'main.tf'), join(dir, 'main.tf'))
      // Offline: providers come from the local mirror only, never from the registry.
      const config = join(dir, 'cli.tfrc')
      writeFileSync(
        config,
        `provider_installation {\n  filesystem_mirror {\n    path = ${JSON.stringify(mirror)}\n  }\n}\n`,
      )
      const env = {
        ...process.env,
        TF_CLI_CONFIG_FILE: config,
        TF_IN_AUTOMATION: '1',
        CHECKPOINT_DISABLE: '1',
      }
      const terraform = (...args: string[]) => run('terraform', args, { cwd: dir, env })
      await terraform('init', '-backend=false', '-input=false', '-no-color')
      const { stdout } = await terraform('validate', '-json', '-no-color').catch(
        (error: { stdout?: string }) => ({ stdout: error.stdout ?? '{}' }),
      )
      const result = JSON.parse(stdout) as {
        valid: boolean
        diagnostics: { summary: string; detail?: string }[]
      }
      expect(result.diagnostics.map((d) => `${d.summary}: ${d.detail ?? ''}`)).toEqual([])
      expect(result.valid).toBe(true)
    },
    60_000,
  )

  it.skipIf(cfnLintSkip !== undefined)(
    named('examples/without-cdk/template.yaml passes cfn-lint', cfnLintSkip),
    async () => {
      const { stdout } = await run('cfn-lint', [
        '--format',
        'parseable',
        join(examples, 'template.yaml'),
      ]).catch((error: { stdout?: string }) => ({ stdout: error.stdout ?? 'cfn-lint failed' }))
      expect(stdout.trim()).toBe('')
    },
    60_000,
  )
})
