// Checks each module's mutation score in Stryker's JSON report against its own bar. Stryker has
// one `break` threshold per run; the protocol core must meet a higher one than the lifecycle.
// Usage: node scripts/mutation/check-scores.mjs [report.json]
// No line starts with 'ok' or 'FAIL': a CI reader takes such lines for go test's, which count no test.
import { readFileSync } from 'node:fs'

const BARS = [
  { module: 'lib/core/', min: 85 },
  { module: 'lib/schedule/', min: 80 },
  { module: 'lib/operator/', min: 80 },
  { module: 'lib/lifecycle/', min: 80 },
]
const DETECTED = new Set(['Killed', 'Timeout'])
const UNDETECTED = new Set(['Survived', 'NoCoverage'])

const path = process.argv[2] ?? 'reports/mutation/mutation.json'
const report = JSON.parse(readFileSync(path, 'utf8'))

let failed = false
for (const { module, min } of BARS) {
  let detected = 0
  let undetected = 0
  for (const [file, { mutants }] of Object.entries(report.files)) {
    if (!file.replaceAll('\\', '/').includes(module)) continue
    for (const { status } of mutants) {
      if (DETECTED.has(status)) detected++
      else if (UNDETECTED.has(status)) undetected++
    }
  }
  const total = detected + undetected
  if (total === 0) {
    console.error(`${module}: no mutants in ${path}`)
    failed = true
    continue
  }
  const score = (100 * detected) / total
  const ok = score >= min
  failed ||= !ok
  console.log(
    `mutation score of ${module}: ${score.toFixed(2)}% (${detected}/${total} detected), ${ok ? 'at or above' : 'BELOW'} its bar of ${min}%`,
  )
}
process.exitCode = failed ? 1 : 0
