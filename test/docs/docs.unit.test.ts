// The long-form docs (docs/*.md) and CONTRIBUTING.md: their TypeScript and configuration blocks
// are the files they name, their links lead somewhere, each page links back to the README, and
// their sequence diagrams only name participants they declare.
import { existsSync, readdirSync, readFileSync } from 'node:fs'
import { dirname, join, resolve } from 'node:path'
import { describe, expect, it } from 'vitest'
import { RunOutcome } from '../../lib/core/record.js'
import { mismatch, root, tsBlocks, untracedTsBlocks } from './support/code-blocks.js'

const docs = readdirSync(join(root, 'docs'))
  .filter((name) => name.endsWith('.md'))
  .map((name) => `docs/${name}`)
const read = (path: string) => readFileSync(join(root, path), 'utf8')

interface Block {
  readonly doc: string
  readonly lang: string
  readonly path: string | undefined
  readonly code: string
}
const blocks: Block[] = docs.flatMap((doc) =>
  [...read(doc).matchAll(/^```(\w+)(?: (\S+))?\n([\s\S]*?)^```$/gm)].map((m) => ({
    doc,
    lang: m[1] ?? '',
    path: m[2],
    code: m[3] ?? '',
  })),
)

/** GitHub's anchor for a heading: lower case, punctuation dropped, spaces as dashes. */
const slug = (heading: string) =>
  heading
    .toLowerCase()
    .replace(/[^\p{L}\p{N} _-]/gu, '')
    .replace(/ /g, '-')
const anchors = (path: string) =>
  new Set([...read(path).matchAll(/^#+ (.+)$/gm)].map((m) => slug(m[1] ?? '')))

describe('docs/', () => {
  it('names every outcome a run may have in the history, where the history is explained', () => {
    for (const doc of ['docs/cli.md', 'docs/api.md']) {
      for (const outcome of Object.values(RunOutcome))
        expect(read(doc), `${doc}: ${outcome}`).toContain(`\`${outcome}\``)
    }
  })

  it('has the pages the README links to', () => {
    const readme = read('README.md')
    expect(docs.length).toBeGreaterThanOrEqual(4)
    for (const doc of docs) expect(readme).toContain(`(${doc}`)
  })

  it('links every page back to the README, so that each stands alone', () => {
    for (const doc of docs) expect(read(doc), doc).toContain('](../README.md')
  })

  it('shows configuration only from files the tests check', () => {
    const config = blocks.filter((b) => ['json', 'yaml', 'hcl'].includes(b.lang) && b.path !== undefined)
    expect(config.length).toBeGreaterThanOrEqual(9)
    for (const block of config) expect(block.code, `${block.doc}: ${block.path}`).toBe(read(block.path ?? ''))
    // YAML and HCL are always configuration; a JSON block that names no file is an example of a
    // record, an event or a log line, and must at least be JSON.
    for (const block of blocks.filter((b) => b.path === undefined)) {
      expect(['yaml', 'hcl'], `a ${block.lang} block in ${block.doc} names no file`).not.toContain(block.lang)
      if (block.lang === 'json')
        expect(() => JSON.parse(block.code), `${block.doc}: ${block.code}`).not.toThrow()
    }
  })

  it('shows TypeScript only from files the type check covers, as they are', () => {
    const shown = docs.flatMap((doc) => tsBlocks(read(doc)).map((block) => ({ doc, ...block })))
    expect(shown.length).toBeGreaterThanOrEqual(8)
    for (const doc of docs) expect(untracedTsBlocks(read(doc)), `${doc}: a ts block names no file`).toBe(0)
    for (const block of shown) expect(mismatch(block), block.doc).toBeUndefined()
  })

  it.each([...docs, 'README.md', 'CONTRIBUTING.md'])(
    '%s links only to files and headings that exist',
    (doc) => {
      const links = [...read(doc).matchAll(/\]\(([^)\s]+)\)/g)].map((m) => m[1] ?? '')
      for (const link of links.filter((l) => !/^[a-z]+:/.test(l))) {
        const [target = '', anchor] = link.split('#')
        const path = target === '' ? doc : resolve(dirname(join(root, doc)), target).slice(root.length)
        expect(existsSync(join(root, path)), `${doc}: ${link}`).toBe(true)
        if (anchor) expect(anchors(path), `${doc}: ${link}`).toContain(anchor)
      }
    },
  )

  it('bundles by hand with the flags the consumer check runs (docs/without-cdk.md)', () => {
    const flags = (command: string) =>
      [...command.matchAll(/--[^\s=]+(?:=(?:"[^"]*"|'[^']*'|\S+))?/g)]
        .map((m) => m[0])
        .filter((flag) => !/^--(outfile|metafile|log-level)=/.test(flag))
        .sort()
    const page = /```sh\n(npx esbuild [\s\S]*?)```/.exec(read('docs/without-cdk.md'))?.[1] ?? ''
    const check = /^esm_bundle\(\) \{\n([\s\S]*?)^\}/m.exec(read('scripts/consumer-check/run.sh'))?.[1] ?? ''
    const checked =
      /npx --no-install (esbuild [\s\S]*?)\n\s*\n|npx --no-install (esbuild [\s\S]*?--log-level=\w+)/.exec(
        check,
      )
    const command = checked?.[1] ?? checked?.[2] ?? ''
    expect(flags(page).length).toBeGreaterThanOrEqual(9)
    expect(flags(page)).toEqual(flags(command))
  })

  it('draws sequence diagrams whose messages and notes name declared participants', () => {
    const diagrams = blocks.filter((b) => b.lang === 'mermaid')
    expect(diagrams.length).toBeGreaterThanOrEqual(4)
    for (const { code } of diagrams) {
      const [first, ...lines] = code
        .trim()
        .split('\n')
        .map((line) => line.trim())
      expect(first).toBe('sequenceDiagram')
      const declared = new Set<string>()
      for (const line of lines) {
        const participant = /^participant (\w+)(?: as .+)?$/.exec(line)
        const message = /^(\w+)\s*-?->>\s*(\w+): .+$/.exec(line)
        const note = /^Note (?:over|left of|right of) (\w+)(?:,(\w+))?: .+$/.exec(line)
        if (participant) declared.add(participant[1] ?? '')
        else if (message || note) {
          const named = (message ?? note)?.slice(1).filter(Boolean) ?? []
          for (const name of named) expect(declared, line).toContain(name)
        } else expect(line, 'not a participant, message, note or autonumber').toBe('autonumber')
      }
    }
  })
})
