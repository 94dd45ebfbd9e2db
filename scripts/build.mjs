// Builds dist/ from a clean slate: the ES modules the package is written as (dist/lib, dist/infra),
// and a CommonJS copy of every entry point but the CLI (dist/cjs), for toolchains that `require`
// the package: a `cdk init` app's jest, ts-node, older bundler set-ups. Each build carries its own
// declarations, so TypeScript sees a CommonJS module where Node.js loads one.
import { execFileSync } from 'node:child_process'
import { rmSync, writeFileSync } from 'node:fs'

rmSync('dist', { recursive: true, force: true })
const tsc = (project) =>
  execFileSync(process.execPath, ['node_modules/typescript/bin/tsc', '-p', project], { stdio: 'inherit' })
tsc('tsconfig.build.json')
tsc('tsconfig.cjs.json')
// The package is "type": "module"; this marks the folder's .js files as CommonJS, as Node.js
// and TypeScript both read the nearest package.json.
writeFileSync('dist/cjs/package.json', '{ "type": "commonjs" }\n')
