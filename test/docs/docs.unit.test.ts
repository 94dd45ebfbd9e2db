// The long-form docs (docs/*.md): their configuration blocks are the files they name, their
// links lead somewhere, and their sequence diagrams only name participants they declare.
import { existsSync, readdirSync, readFileSync } from 'node:fs'
import { dirname, join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { describe, expect, it } from 'vitest'

const root = fileURLToPath(new URL('../..', import.meta.url))
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
  it('has the pages the README links to', () => {
    const readme = read('README.md')
    expect(docs.length).toBeGreaterThanOrEqual(4)
    for (const doc of docs) expect(readme).toContain(`(${doc}`)
  })

  it('shows configuration only from files the tests check', () => {
    const config = blocks.filter((b) => ['json', 'yaml', 'hcl', 'ts'].includes(b.lang))
    expect(config.length).toBeGreaterThanOrEqual(9)
    for (const block of config) {
      expect(block.path, `a ${block.lang} block in ${block.doc} names no file`).toBeDefined()
      expect(block.code).toBe(read(block.path ?? ''))
    }
  })

  it.each([...docs, 'README.md'])('%s links only to files and headings that exist', (doc) => {
    const links = [...read(doc).matchAll(/\]\(([^)\s]+)\)/g)].map((m) => m[1] ?? '')
    for (const link of links.filter((l) => !/^[a-z]+:/.test(l))) {
      const [target = '', anchor] = link.split('#')
      const path = target === '' ? doc : resolve(dirname(join(root, doc)), target).slice(root.length)
      expect(existsSync(join(root, path)), `${doc}: ${link}`).toBe(true)
      if (anchor) expect(anchors(path), `${doc}: ${link}`).toContain(anchor)
    }
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
