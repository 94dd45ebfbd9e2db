// Checks what `npm pack` put in the tarball, before anyone installs it: the files a user needs
// and nothing that breaks them. Prints the tarball's size and file count.
//
//   node scripts/consumer-check/inspect-tarball.mjs lambda-singleton-X.tgz
import { execFileSync } from 'node:child_process'
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, posix, relative } from 'node:path'

/** The condition the repository's own tools use to reach the .ts sources (not shipped). */
const REPO_CONDITION = 'lambda-singleton-source'

const tarball = process.argv[2]
if (!tarball) {
  console.error('usage: node inspect-tarball.mjs TARBALL')
  process.exit(2)
}
const root = mkdtempSync(join(tmpdir(), 'lambda-singleton-tarball-'))
execFileSync('tar', ['-xzf', tarball, '-C', root])
const pkgDir = join(root, 'package')
const files = walk(pkgDir).map((file) => relative(pkgDir, file).split('\\').join('/'))
const shipped = new Set(files)
const problems = []
const pkg = JSON.parse(readFileSync(join(pkgDir, 'package.json'), 'utf8'))

for (const needed of ['package.json', 'README.md', 'LICENSE']) {
  if (!shipped.has(needed)) problems.push(`${needed} is not in the tarball`)
}
if (shipped.has('LICENSE') && !/Apache License\s+Version 2\.0/.test(read('LICENSE'))) {
  problems.push('LICENSE is not the Apache License 2.0 that package.json names')
}
if (pkg.license !== 'Apache-2.0') problems.push(`package.json license is ${pkg.license}, not Apache-2.0`)
for (const field of ['repository', 'homepage', 'bugs']) {
  if (!pkg[field]) problems.push(`package.json has no ${field}`)
}
// npm builds a git dependency by running `prepare` (not `prepack`) in its clone; `npm pack` runs it too.
if (!pkg.scripts?.prepare) problems.push('no prepare script: a package installed from git has no dist/')
if (pkg.dependencies?.['@aws-sdk/client-s3'] || pkg.dependencies?.['@aws-sdk/client-dynamodb']) {
  problems.push('an AWS SDK client is a dependency: a user on another SDK version gets a second copy')
}

for (const file of files) {
  const source = /\.(c|m)?tsx?$/.test(file) && !/\.d\.(c|m)?ts$/.test(file)
  if (source) problems.push(`ships TypeScript source ${file}`)
  const example = /(^|\/)(app|example-stack)\.|(^|\/)examples?\//.test(file)
  if (example) problems.push(`ships an example or app: ${file}`)
  if (/\.(m|c)?js$|\.d\.ts$/.test(file)) problems.push(...unresolvedImports(file))
}
for (const [target, conditions] of exportTargets(pkg.exports)) {
  // A `require` target must be CommonJS where Node.js and TypeScript look: under a package.json
  // that says so, or Node.js loads it as an ES module and jest fails on it.
  if (conditions.includes('require') && !conditions.includes(REPO_CONDITION) && !isCommonJs(target)) {
    problems.push(`export ${conditions.join('/')} points at ${target}, which is not marked CommonJS`)
  }
  if (conditions.includes('source')) {
    problems.push(`export condition "source" (${target}): consumers' tools set it`)
  }
  if (!conditions.includes(REPO_CONDITION) && !shipped.has(posix.normalize(target))) {
    problems.push(`export ${conditions.join('/')} points at ${target}, which is not shipped`)
  }
}
for (const bin of Object.values(typeof pkg.bin === 'string' ? { bin: pkg.bin } : (pkg.bin ?? {}))) {
  const file = posix.normalize(bin)
  if (!shipped.has(file)) problems.push(`bin ${bin} is not shipped`)
  else if (!read(file).startsWith('#!/usr/bin/env node')) problems.push(`bin ${bin} has no #! line`)
}

const size = statSync(tarball).size
const unpacked = files.reduce((sum, file) => sum + statSync(join(pkgDir, file)).size, 0)
rmSync(root, { recursive: true, force: true })
if (problems.length > 0) {
  for (const problem of problems) console.error(`inspect-tarball: ${problem}`)
  console.error(`inspect-tarball: ${problems.length} problem(s) in ${tarball}`)
  process.exit(1)
}
console.log(
  `inspect-tarball: ok: ${files.length} files, ${(size / 1000).toFixed(1)} kB packed, ${(unpacked / 1000).toFixed(1)} kB unpacked`,
)

/** Whether the nearest package.json above a shipped file declares it CommonJS. */
function isCommonJs(target) {
  for (let dir = posix.dirname(posix.normalize(target)); ; dir = posix.dirname(dir)) {
    const marker = dir === '.' ? 'package.json' : `${dir}/package.json`
    if (shipped.has(marker)) return (JSON.parse(read(marker)).type ?? 'commonjs') === 'commonjs'
    if (dir === '.') return false
  }
}

function read(file) {
  return readFileSync(join(pkgDir, file), 'utf8')
}

function walk(dir) {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) =>
    entry.isDirectory() ? walk(join(dir, entry.name)) : [join(dir, entry.name)],
  )
}

/** Relative imports (static, dynamic, re-exports, `import type`, CommonJS `require`) that name no shipped file. */
function unresolvedImports(file) {
  const code = read(file)
  const specifiers = [
    ...code.matchAll(/(?:from\s*|import\s*\(\s*|import\s+|require\s*\(\s*)['"](\.{1,2}\/[^'"]+)['"]/g),
  ]
  return specifiers
    .map((match) => match[1])
    .filter((specifier) => {
      const target = posix.normalize(posix.join(posix.dirname(file), specifier))
      const declared = file.endsWith('.d.ts') ? target.replace(/\.js$/, '.d.ts') : target
      return !shipped.has(declared)
    })
    .map((specifier) => `${file} imports ${specifier}, which is not shipped`)
}

/** Every file an `exports` map names, with the conditions that lead to it. */
function exportTargets(exports, conditions = []) {
  if (typeof exports === 'string') return [[exports, conditions]]
  if (exports === null || typeof exports !== 'object') return []
  return Object.entries(exports).flatMap(([key, value]) =>
    exportTargets(value, key.startsWith('.') ? conditions : [...conditions, key]),
  )
}
