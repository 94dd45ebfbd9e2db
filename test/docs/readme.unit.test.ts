import { readFileSync } from 'node:fs'
import { describe, expect, it } from 'vitest'
import { Lease } from '../../lib/core/lease.js'
import * as core from '../../lib/index.js'
import * as middy from '../../lib/middy/index.js'
import { root, tsBlocks, typeChecked, untracedTsBlocks } from './support/code-blocks.js'

const readme = readFileSync(`${root}README.md`, 'utf8')
const consumerCheck = readFileSync(`${root}scripts/consumer-check/run.sh`, 'utf8')

/** Every TypeScript block of the README, with the file it says it comes from. */
const blocks = tsBlocks(readme)

/** The text of one `## ` section of the README, its heading included. */
const section = (heading: string) => {
  const start = readme.indexOf(`## ${heading}\n`)
  expect(start, `the README has no section "${heading}"`).toBeGreaterThanOrEqual(0)
  const end = readme.indexOf('\n## ', start + 1)
  return readme.slice(start, end === -1 ? undefined : end)
}

describe('README', () => {
  it('stays short: at most 450 lines, the rest is in docs/', () => {
    expect(readme.split('\n').length - (readme.endsWith('\n') ? 1 : 0)).toBeLessThanOrEqual(450)
  })

  it('leads with the promise, the handler, the choice of API and install, then the two commands', () => {
    const headings = [...readme.matchAll(/^## (.+)$/gm)].map((m) => m[1])
    expect(headings.slice(0, 4)).toEqual([
      'Use it in a Lambda',
      'Which one do I use',
      'Install',
      'Run the demo and the tests',
    ])
  })

  it('has exactly two set-up commands: the demo and npm test', () => {
    const first = section('Run the demo and the tests').match(/```sh\n([\s\S]*?)```/)?.[1] ?? ''
    const commands = first
      .split('\n')
      .map((line) => line.replace(/#.*/, '').trim())
      .filter(Boolean)
    expect(commands).toEqual(['bash scripts/demo.sh', 'npm test'])
  })

  it('tells a CDK user to install esbuild, which cdk synth needs to bundle a ScheduledSingletonFunction', () => {
    const install = section('Install')
    const commands = install.match(/```sh\n([\s\S]*?)```/)?.[1] ?? ''
    expect(commands).toMatch(/^npm install (--save-dev|-D) esbuild\b/m)
    expect(install).toMatch(/`cdk synth`[^.]*esbuild/)
  })

  it("tells a cdk init user that the app has esbuild already, as the consumer check's cdk init app shows", () => {
    expect(section('Install')).toMatch(/A `cdk init` app has it: its `tsx` brings esbuild along/)
    // The check's cdk init app is installed without esbuild, and its synth bundles the handler.
    const appInstall = consumerCheck.match(/^\s*install "\$app"(?:.*\\\n)*.*$/m)?.[0]
    expect(appInstall, 'the consumer check installs its cdk init app').toBeDefined()
    expect(appInstall).not.toMatch(/esbuild/)
  })

  it("names the type packages Middy's declarations need with skipLibCheck off, the ones the consumer check adds", () => {
    const packages = ['@types/aws-lambda', '@aws/durable-execution-sdk-js']
    expect(section('Install')).toContain(`npm install --save-dev ${packages.join(' ')}`)
    // The check that type-checks a Middy handler with skipLibCheck off installs exactly these.
    const bundlerInstall = consumerCheck.match(/^\s*install "\$bundler"(?:.*\\\n)*.*$/m)?.[0] ?? ''
    for (const name of packages) expect(bundlerInstall).toContain(`"${name}@`)
    expect(consumerCheck).toMatch(/tsc -p tsconfig\.json --skipLibCheck false/)
  })

  it('says which way to use the library, naming only functions and methods that exist', () => {
    const table = section('Which one do I use')
      .split('\n')
      .filter((line) => line.startsWith('| ') && !line.startsWith('| ---'))
      .slice(1)
    expect(table.length).toBeGreaterThanOrEqual(4)
    const named = table.flatMap((row) => [...(row.split(' | ')[1] ?? '').matchAll(/`(\w+)(?:\.(\w+))?\(/g)])
    const exported: Record<string, unknown> = { ...core, ...middy }
    const instances: Record<string, object> = { lock: core.Lock.prototype, lease: Lease.prototype }
    for (const [call, owner = '', method] of named) {
      if (method === undefined) expect(typeof exported[owner], `${call}: no such export`).toBe('function')
      else expect(method in (instances[owner] ?? {}), `${call}: no such method`).toBe(true)
    }
    // One way per job: each of them has its row.
    const calls = named.map((m) => m[2] ?? m[1])
    for (const way of ['singleton', 'withSingleton', 'runExclusive', 'tryAcquire', 'acquire']) {
      expect(calls).toContain(way)
    }
  })

  it('shows TypeScript only from files the type check covers', () => {
    expect(blocks.length).toBeGreaterThanOrEqual(4)
    expect(untracedTsBlocks(readme)).toBe(0)
    for (const block of blocks) expect(typeChecked(block.path), block.path).toBe(true)
  })

  it.each(blocks.map((block) => [block.path, block] as const))('shows %s as it is', (path, block) => {
    const source = readFileSync(`${root}${path}`, 'utf8')
    if (block.excerpt) expect(source).toContain(block.code)
    else expect(block.code).toBe(source)
  })
})
