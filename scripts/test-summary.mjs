// Prints the closing count of the last `npm test` (reports/vitest/results.json) as one plain line,
// 'N passed, N failed, N skipped', with nothing before it, so that whoever reads only the end of a CI log (after the
// simulator, the soak and Stryker have printed theirs) sees how many tests ran.
import { existsSync, readFileSync } from 'node:fs'

const path = process.argv[2] ?? 'reports/vitest/results.json'
const output = 'reports/vitest/output.log'

// vitest's own closing lines ("Test Files …", "Tests …", "Duration …"), when scripts/test.sh kept them.
if (existsSync(output)) {
  const esc = String.fromCharCode(27)
  const lines = readFileSync(output, 'utf8')
    .split('\n')
    .map((line) => line.replaceAll(new RegExp(`${esc}\\[[0-9;]*m`, 'g'), ''))
  const start = lines.findLastIndex((line) => line.trim().startsWith('Test Files'))
  if (start >= 0) console.log(lines.slice(start).join('\n').trimEnd())
}
let results
try {
  results = JSON.parse(readFileSync(path, 'utf8'))
} catch (error) {
  console.error(`test-summary: cannot read ${path}: ${error.message}`)
  process.exit(1)
}
const { numPassedTests, numFailedTests, numPendingTests = 0, numTodoTests = 0 } = results
if (typeof numPassedTests !== 'number' || typeof numFailedTests !== 'number') {
  console.error(`test-summary: ${path} holds no test counts`)
  process.exit(1)
}
const count = `${numPassedTests} passed, ${numFailedTests} failed, ${numPendingTests + numTodoTests} skipped`
// On both streams, last on each: a reader of the error stream alone sees the count too.
console.error(count)
console.log(count)
if (numPassedTests === 0 || numFailedTests > 0) process.exit(1)
