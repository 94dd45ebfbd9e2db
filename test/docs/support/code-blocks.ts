// The TypeScript blocks of the README and of docs/*.md: each starts with `// <file>` (or
// `// <file> (excerpt)`) and shows that file, which the type check covers, or a part of it.
import { existsSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'

export const root = fileURLToPath(new URL('../../..', import.meta.url))

export interface TsBlock {
  /** The file the block says it shows, relative to the repository. */
  readonly path: string
  /** `(excerpt)` after the path: the block is a part of the file, not all of it. */
  readonly excerpt: boolean
  /** The block after its first line. */
  readonly code: string
}

/** Every ```ts block of a Markdown text that names its file on its first line. */
export const tsBlocks = (markdown: string): TsBlock[] =>
  [...markdown.matchAll(/^```ts\n\/\/ (\S+)( \(excerpt\))?\n([\s\S]*?)^```$/gm)].map((match) => ({
    path: match[1] ?? '',
    excerpt: match[2] !== undefined,
    code: match[3] ?? '',
  }))

/** How many ```ts blocks name no file on their first line (there must be none). */
export const untracedTsBlocks = (markdown: string): number =>
  [...markdown.matchAll(/^```ts[^\n]*\n(?!\/\/ \S+( \(excerpt\))?\n)/gm)].length

const tsconfig = JSON.parse(readFileSync(join(root, 'tsconfig.json'), 'utf8')) as {
  include: string[]
  exclude: string[]
}
const under = (path: string, dir: string) => path === dir || path.startsWith(`${dir}/`)

/** Whether `tsc -p tsconfig.json` checks the file: a TypeScript file under an include, not excluded. */
export const typeChecked = (path: string): boolean =>
  /\.m?ts$/.test(path) &&
  existsSync(join(root, path)) &&
  tsconfig.include.some((dir) => under(path, dir) || (dir === '*.ts' && !path.includes('/'))) &&
  !tsconfig.exclude.some((dir) => under(path, dir))

/** Why a block does not show its file as it is, or undefined when it does. */
export function mismatch(block: TsBlock): string | undefined {
  if (!typeChecked(block.path)) return `${block.path} is not a file the type check covers`
  const source = readFileSync(join(root, block.path), 'utf8')
  if (block.excerpt)
    return source.includes(block.code) ? undefined : `${block.path} does not contain the excerpt`
  return block.code === source ? undefined : `${block.path} differs from the block`
}
