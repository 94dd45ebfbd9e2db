import { readFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { describe, expect, it } from 'vitest'

const root = fileURLToPath(new URL('../..', import.meta.url))
const readme = readFileSync(`${root}README.md`, 'utf8')

/** Every TypeScript block of the README, with the file it says it comes from. */
const blocks = [...readme.matchAll(/```ts\n\/\/ (\S+)( \(excerpt\))?\n([\s\S]*?)```/g)].map((match) => ({
  path: match[1] ?? '',
  excerpt: match[2] !== undefined,
  code: match[3] ?? '',
}))

describe('README', () => {
  it('has exactly two set-up commands at the top: the demo and npm test', () => {
    const first = readme.match(/```sh\n([\s\S]*?)```/)?.[1] ?? ''
    const commands = first
      .split('\n')
      .map((line) => line.replace(/#.*/, '').trim())
      .filter(Boolean)
    expect(commands).toEqual(['bash scripts/demo.sh', 'npm test'])
  })

  it('tells a CDK user to install esbuild, which cdk synth needs to bundle a ScheduledSingletonFunction', () => {
    const install = readme.slice(
      readme.indexOf('## Install'),
      readme.indexOf('\n## ', readme.indexOf('## Install') + 1),
    )
    const commands = install.match(/```sh\n([\s\S]*?)```/)?.[1] ?? ''
    expect(commands).toMatch(/^npm install (--save-dev|-D) esbuild\b/m)
    expect(install).toMatch(/`cdk synth`[^.]*esbuild/)
  })

  it('shows TypeScript only from files the type check covers', () => {
    expect(blocks.length).toBeGreaterThanOrEqual(5)
    const untraced = [...readme.matchAll(/```ts\n(?!\/\/ \S+)/g)]
    expect(untraced).toHaveLength(0)
  })

  it.each(blocks.map((block) => [block.path, block] as const))('shows %s as it is', (path, block) => {
    const source = readFileSync(`${root}${path}`, 'utf8')
    if (block.excerpt) expect(source).toContain(block.code)
    else expect(block.code).toBe(source)
  })
})
