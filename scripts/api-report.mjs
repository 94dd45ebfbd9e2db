// The public surface, one report per entry point in package.json's `exports` (api/*.api.md),
// made by API Extractor from the built declarations (`npm run build` first).
//   node scripts/api-report.mjs          rewrites the reports after a deliberate change
//   node scripts/api-report.mjs --check  fails when the surface differs from the committed reports
// API Extractor analyses one entry point per run, so this runs it once per subpath.
import { readFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { Extractor, ExtractorConfig } from '@microsoft/api-extractor'

const root = fileURLToPath(new URL('..', import.meta.url))
const packageJsonPath = `${root}package.json`
const { exports } = JSON.parse(readFileSync(packageJsonPath, 'utf8'))
const check = process.argv.includes('--check')

/** `.` → `lambda-singleton`, `./s3` → `s3`: the report's file name. */
const reportName = (subpath) => (subpath === '.' ? 'lambda-singleton' : subpath.slice(2))

let failed = false
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
          // An exported type that names a type its entry point does not export: kept in the
          // report (marked), so a leak of an internal type is reviewed, not silent.
          'ae-forgotten-export': { logLevel: 'none', addToApiReportFile: true },
        },
        tsdocMessageReporting: { default: { logLevel: 'none' } },
      },
    },
    configObjectFullPath: undefined,
    packageJsonFullPath: packageJsonPath,
  })
  const result = Extractor.invoke(config, { localBuild: !check, messageCallback: quiet })
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
if (check && failed) process.exit(1)

/** API Extractor's own chatter (versions, "analysis complete"): our lines above say what matters. */
function quiet(message) {
  if (message.logLevel === 'info' || message.logLevel === 'verbose') message.handled = true
}
