import { readFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { describe, expect, it } from 'vitest'
import { parseCommandLine } from '../../lib/cli/args.js'
import { ExitCode } from '../../lib/cli/exit-codes.js'

const read = (path: string) => readFileSync(fileURLToPath(new URL(`../../${path}`, import.meta.url)), 'utf8')
const readme = read('README.md')

// The README's Operate section has the commands at a glance; docs/cli.md has all of it.
const pages = [
  [
    "the README's Operate section",
    readme.slice(readme.indexOf('## Operate\n'), readme.indexOf('\n## ', readme.indexOf('## Operate\n') + 1)),
  ],
  ['docs/cli.md', read('docs/cli.md')],
] as const

describe.each(pages)('%s', (_, text) => {
  it('shows only command lines the CLI accepts', () => {
    const lines = [...text.matchAll(/^(?:\$ )?npx lambda-singleton (.*?)(?:\s+#.*)?$/gm)].map(
      (match) => match[1] ?? '',
    )
    expect(lines.length).toBeGreaterThanOrEqual(6)
    for (const line of lines) expect(parseCommandLine(line.split(/\s+/)).kind).toBe('run')
  })
})

describe('docs/cli.md', () => {
  it('lists every exit code as the CLI defines it', () => {
    const listed = [...read('docs/cli.md').matchAll(/^\| (\d+) \|/gm)].map((match) => Number(match[1]))
    expect(listed).toEqual(Object.values(ExitCode))
  })
})

describe("the README's Operate section", () => {
  it('leaves the exit codes to docs/cli.md, and links them there', () => {
    const [, operate = ''] = pages[0]
    expect(operate).not.toMatch(/^\| \d+ \|/m)
    expect(operate).toContain('(docs/cli.md#exit-codes)')
  })
})
