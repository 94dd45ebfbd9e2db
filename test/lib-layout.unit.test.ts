import { readdirSync, readFileSync } from 'node:fs'
import { dirname, join, relative, sep } from 'node:path'
import { fileURLToPath } from 'node:url'
import ts from 'typescript'
import { describe, expect, it } from 'vitest'

/*
 * The layers of lib/ as CONTRIBUTING.md's "Layout" draws them, held by their imports: data flows
 * one way, so each module may import only what lies below it. A module's name is its folder
 * under lib/, or the file's own name for the contracts at lib/'s root (config, log-contract,
 * exit-codes) and the entry points (index, extend, operator), which may import anything.
 */

const lib = fileURLToPath(new URL('../lib/', import.meta.url))

/** What each module may import besides itself. */
const ALLOWED: Readonly<Record<string, readonly string[]>> = {
  config: [],
  'exit-codes': [],
  // The names of the log lines are the lifecycle's outcome types, read as types only.
  'log-contract': ['lifecycle'],
  core: ['config'],
  schedule: ['core', 'config'],
  aws: ['core'],
  s3: ['core', 'aws'],
  dynamodb: ['core', 'aws'],
  memory: ['core'],
  operator: ['core', 'schedule'],
  // The default store, loaded on first use from the environment the constructs set.
  lifecycle: ['core', 'schedule', 's3', 'dynamodb', 'config', 'log-contract'],
  middy: ['lifecycle', 'core', 'config'],
  lambda: ['lifecycle'],
  exec: ['lifecycle', 'core', 'config', 'log-contract', 'exit-codes'],
  cli: [
    'core',
    'schedule',
    'aws',
    's3',
    'dynamodb',
    'exec',
    'operator',
    'config',
    'log-contract',
    'exit-codes',
  ],
}
const ENTRY_POINTS = new Set(['index', 'extend', 'operator.ts'])

/** The schedule's fields: the core's protocol names none of them, only the record's format does. */
const SCHEDULE_FIELDS = ['paused', 'failures', 'failed_run', 'last_run', 'history'] as const
/** Where the record's format is declared and checked, for every reader alike (DESIGN.md: the core owns the record). */
const RECORD_FORMAT = new Set(['core/record.ts', 'core/parse-record.ts'])

function sources(folder: string): string[] {
  return readdirSync(folder, { withFileTypes: true }).flatMap((entry) => {
    const path = join(folder, entry.name)
    if (entry.isDirectory()) return sources(path)
    return entry.name.endsWith('.ts') ? [path] : []
  })
}

/** `core` for lib/core/lock.ts, `config` for lib/config.ts, `operator.ts` for the entry point lib/operator.ts. */
function moduleOf(file: string): string {
  const path = relative(lib, file).split(sep)
  if (path.length > 1) return path[0] as string
  const name = (path[0] as string).replace(/\.ts$/, '')
  return name === 'operator' ? 'operator.ts' : name
}

function parsed(file: string): ts.SourceFile {
  return ts.createSourceFile(file, readFileSync(file, 'utf8'), ts.ScriptTarget.Latest, true)
}

/** Every relative module `file` imports or re-exports, statically or not, resolved to its file. */
function importsOf(file: string): string[] {
  const found: string[] = []
  const visit = (node: ts.Node): void => {
    const specifier =
      (ts.isImportDeclaration(node) || ts.isExportDeclaration(node)) && node.moduleSpecifier
        ? node.moduleSpecifier
        : ts.isCallExpression(node) && node.expression.kind === ts.SyntaxKind.ImportKeyword
          ? node.arguments[0]
          : undefined
    if (specifier && ts.isStringLiteral(specifier) && specifier.text.startsWith('.')) {
      found.push(join(dirname(file), specifier.text).replace(/\.js$/, '.ts'))
    }
    ts.forEachChild(node, visit)
  }
  visit(parsed(file))
  return found
}

/** The identifiers, property names and string literals of `file`'s code (its comments left out). */
function namesIn(file: string): Set<string> {
  const names = new Set<string>()
  const visit = (node: ts.Node): void => {
    if (ts.isIdentifier(node) || ts.isStringLiteral(node) || ts.isNoSubstitutionTemplateLiteral(node)) {
      names.add(node.text)
    }
    ts.forEachChild(node, visit)
  }
  visit(parsed(file))
  return names
}

const files = sources(lib)

describe('the layers of lib/', () => {
  it('knows every module it finds, so that a new folder is placed in a layer on purpose', () => {
    const unknown = files.map(moduleOf).filter((name) => !(name in ALLOWED) && !ENTRY_POINTS.has(name))
    expect([...new Set(unknown)]).toEqual([])
  })

  it('has each module import only the modules below it', () => {
    const wrong = files.flatMap((file) => {
      const from = moduleOf(file)
      if (ENTRY_POINTS.has(from)) return []
      return importsOf(file)
        .map(moduleOf)
        .filter((to) => to !== from && !ALLOWED[from]?.includes(to))
        .map((to) => `${relative(lib, file)} imports ${to}`)
    })
    expect(wrong).toEqual([])
  })

  it('keeps the schedule out of the core: only the record format names its fields', () => {
    const named = files
      .filter(
        (file) => moduleOf(file) === 'core' && !RECORD_FORMAT.has(relative(lib, file).split(sep).join('/')),
      )
      .flatMap((file) => {
        const names = namesIn(file)
        return SCHEDULE_FIELDS.filter((field) => names.has(field)).map(
          (field) => `${relative(lib, file)}: ${field}`,
        )
      })
    expect(named).toEqual([])
  })
})
