import { execFile } from 'node:child_process'
import { cpSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { promisify } from 'node:util'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'

const run = promisify(execFile)
const root = fileURLToPath(new URL('../..', import.meta.url))
const tsc = join(root, 'node_modules/typescript/bin/tsc')
const work = mkdtempSync(join(tmpdir(), 'lambda-singleton-no-dynamodb-sdk-'))
const packageDir = join(work, 'node_modules/lambda-singleton')

/** tsc's output for `project`, however it exits. */
async function typeCheck(project: string): Promise<{ ok: boolean; output: string }> {
  try {
    const { stdout } = await run(process.execPath, [tsc, '-p', project], { cwd: work })
    return { ok: true, output: stdout }
  } catch (error) {
    return { ok: false, output: String((error as { stdout?: string }).stdout) }
  }
}

// The package as published (its declarations, from the sources of lambda-singleton/dynamodb)
// in a project, outside this repository, that has no @aws-sdk/client-dynamodb.
beforeAll(async () => {
  await run(
    process.execPath,
    [
      tsc,
      ...['--declaration', '--emitDeclarationOnly', '--skipLibCheck', '--strict'],
      ...['--module', 'NodeNext', '--moduleResolution', 'NodeNext', '--target', 'ES2023'],
      ...['--types', 'node', '--rootDir', root, '--outDir', join(packageDir, 'dist')],
      join(root, 'lib/dynamodb/index.ts'),
    ],
    { cwd: root },
  )
  cpSync(join(root, 'package.json'), join(packageDir, 'package.json'))
  writeFileSync(join(work, 'package.json'), '{ "type": "module" }')
  writeFileSync(
    join(work, 'index.ts'),
    "import { DynamoDBLockStore } from 'lambda-singleton/dynamodb'\n\nexport const store = new DynamoDBLockStore({ tableName: 'locks' })\n",
  )
  for (const skipLibCheck of [true, false]) {
    const compilerOptions = { module: 'NodeNext', strict: true, noEmit: true, types: [], skipLibCheck }
    writeFileSync(
      join(work, `tsconfig.${skipLibCheck}.json`),
      JSON.stringify({ compilerOptions, files: ['index.ts'] }),
    )
  }
}, 60_000)

afterAll(() => rmSync(work, { recursive: true, force: true }))

describe('lambda-singleton/dynamodb in a project without @aws-sdk/client-dynamodb', () => {
  it('fails to type-check, naming the package to install, even with skipLibCheck', async () => {
    const { ok, output } = await typeCheck('tsconfig.true.json')
    expect(ok).toBe(false)
    expect(output).toContain('index.ts')
    expect(output).toContain(
      '@aws-sdk/client-dynamodb is not installed: npm install @aws-sdk/client-dynamodb',
    )
  }, 30_000) // tsc in a child process: seconds on a loaded machine, past the default 5 s

  it('fails to type-check without skipLibCheck, where the declarations cannot find the SDK', async () => {
    const { ok, output } = await typeCheck('tsconfig.false.json')
    expect(ok).toBe(false)
    expect(output).toContain("Cannot find module '@aws-sdk/client-dynamodb'")
  }, 30_000)
})
