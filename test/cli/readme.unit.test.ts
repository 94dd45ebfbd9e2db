import { readFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { describe, expect, it } from 'vitest'
import { parseCommandLine } from '../../lib/cli/args.js'
import { ExitCode } from '../../lib/cli/exit-codes.js'

const readme = readFileSync(fileURLToPath(new URL('../../README.md', import.meta.url)), 'utf8')
const operate = readme.slice(
  readme.indexOf('## Operate\n'),
  readme.indexOf('\n## ', readme.indexOf('## Operate\n') + 1),
)

describe("the README's Operate section", () => {
  it('shows only command lines the CLI accepts', () => {
    const lines = [...operate.matchAll(/^(?:\$ )?npx lambda-singleton (.*?)(?:\s+#.*)?$/gm)].map(
      (match) => match[1] ?? '',
    )
    expect(lines.length).toBeGreaterThanOrEqual(6)
    for (const line of lines) expect(parseCommandLine(line.split(/\s+/)).kind).toBe('run')
  })

  it('lists every exit code as the CLI defines it', () => {
    const listed = [...operate.matchAll(/^\| (\d+) \|/gm)].map((match) => Number(match[1]))
    expect(listed).toEqual(Object.values(ExitCode))
  })
})
