// The public surface, one report per entry point in package.json's `exports` (api/*.api.md),
// made by API Extractor from the built declarations (`npm run build` first).
//   node scripts/api-report.mjs          rewrites the reports after a deliberate change
//   node scripts/api-report.mjs --check  fails when the surface differs from the committed reports
// API Extractor analyses one entry point per run, so this runs it once per subpath.
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { Extractor, ExtractorConfig } from '@microsoft/api-extractor'

const root = fileURLToPath(new URL('..', import.meta.url))
const packageJsonPath = `${root}package.json`
const { exports } = JSON.parse(readFileSync(packageJsonPath, 'utf8'))
const check = process.argv.includes('--check')

/** `.` → `lambda-singleton`, `./s3` → `s3`: the report's file name. */
const reportName = (subpath) => (subpath === '.' ? 'lambda-singleton' : subpath.slice(2))

let failed = false
/** Every ae-forgotten-export, by entry point; and every name some entry point exports. */
const forgotten = []
const exported = new Set()
for (const [subpath, target] of Object.entries(exports)) {
  const types = typeof target === 'object' ? target.import?.types : undefined
  if (!types) continue
  const config = ExtractorConfig.prepare({
    configObject: {
      projectFolder: root,
      mainEntryPointFilePath: `<projectFolder>/${types.slice(2)}`,
      compiler: { tsconfigFilePath: '<projectFolder>/tsconfig.build.json' },
      apiReport: {
        enabled: true,
        reportFolder: '<projectFolder>/api/',
        reportTempFolder: '<projectFolder>/reports/api/',
        reportFileName: reportName(subpath),
      },
      docModel: { enabled: false },
      dtsRollup: { enabled: false },
      tsdocMetadata: { enabled: false },
      messages: {
        // No @public/@beta tags: what an entry point exports is public.
        extractorMessageReporting: {
          'ae-missing-release-tag': { logLevel: 'none' },
          // An exported type that names a type its entry point does not export. API Extractor
          // sees one entry point at a time, so a type exported by another entry point of the
          // package (/s3's S3Lock is the root's Lock) is marked in the report for review; one
          // that no entry point exports is a leaked internal, and fails (see `leaked` below).
          'ae-forgotten-export': { logLevel: 'warning', addToApiReportFile: true },
        },
        tsdocMessageReporting: { default: { logLevel: 'none' } },
      },
    },
    configObjectFullPath: undefined,
    packageJsonFullPath: packageJsonPath,
  })
  const result = Extractor.invoke(config, { localBuild: !check, messageCallback: quiet })
  // The report as this run made it (the temp copy; api/ holds it too once accepted).
  const report = join(config.reportTempFolder, config.reportConfigs[0]?.fileName ?? '')
  const text = readFileSync(report, 'utf8')
  for (const name of exportedNames(text)) exported.add(name)
  for (const [, symbol] of text.matchAll(/\(ae-forgotten-export\) The symbol "([^"]+)"/g)) {
    forgotten.push({ subpath, symbol })
  }
  if (result.apiReportChanged) {
    failed = true
    console.error(
      check
        ? `api/${reportName(subpath)}.api.md: the public surface of "${subpath}" changed. ` +
            'If that is meant, run `npm run api` and commit the report with the change.'
        : `api/${reportName(subpath)}.api.md updated`,
    )
  } else if (!result.succeeded) {
    failed = true
    console.error(`${subpath}: API Extractor failed (${result.errorCount} errors)`)
  }
}
const leaked = forgotten.filter(({ symbol }) => !exported.has(symbol))
for (const { subpath, symbol } of leaked) {
  console.error(`${subpath}: its declarations name ${symbol}, which no entry point of the package exports`)
}
if ((check && failed) || leaked.length > 0) process.exit(1)

/** The names an API report declares as exported (`export interface X`, `export declare class X`, …). */
function exportedNames(report) {
  return [
    ...report.matchAll(
      /^export (?:declare )?(?:abstract )?(?:class|function|const|let|interface|type|enum|namespace) (\w+)/gm,
    ),
  ].map((match) => match[1])
}

/** API Extractor's own chatter (versions, "analysis complete"): our lines above say what matters. */
function quiet(message) {
  if (message.logLevel === 'info' || message.logLevel === 'verbose') message.handled = true
}
