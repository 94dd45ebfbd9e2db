// The Promela model of the lease protocol (model/lease-protocol.pml), checked exhaustively by
// spin through scripts/model-check.sh: every known defect put back must show a counterexample
// that breaks the property it is about (a model that finds nothing when a defect is put back
// would be checking nothing). That every configuration of the protocol as it is shows no error
// takes about four minutes on two idle cores: `npm run model` checks it, and CI runs it on its own
// (.ci/run, "model checker"); MODEL_FULL=1 runs it here as well.
import { execFile, spawnSync } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'

const root = fileURLToPath(new URL('../..', import.meta.url))

const missing = ['spin', 'gcc'].filter(
  (tool) => spawnSync('sh', ['-c', `command -v ${tool}`], { stdio: 'ignore' }).status !== 0,
)
const skipped = missing.length > 0
const why = skipped
  ? ` (SKIPPED: ${missing.join(' and ')} not installed; apt-get install spin gcc, or source scripts/ensure-spin.sh)`
  : ''

/** One row of the script's summary: what a configuration was expected to show, and what it showed. */
interface Row {
  readonly expected: string
  readonly found: string
  readonly stored: number
}

/** The summary rows of the script's output, by configuration name. */
function rowsOf(output: string): Map<string, Row> {
  const rows = new Map<string, Row>()
  for (const line of output.split('\n')) {
    const [name, expected, found, stored] = line.trim().split(/\s+/)
    if (name && expected && found && stored && /^\d+$/.test(stored)) {
      rows.set(name, { expected, found, stored: Number(stored) })
    }
  }
  return rows
}

const configurations = [
  'unique-outside',
  'unique-crash',
  'unique-lost-answer',
  'unique-operator',
  'hash-outside',
  'same-instance',
  'three-calls',
  'blind-outside',
  'blind-taken-twice',
  'blind-lost-answer',
  'blind-crash',
  'blind-operator',
]
const defects = [
  ['defect-no-wait', 'TOKENS', 'a token handed out before the store clock passed it'],
  [
    'defect-start-after-replaced',
    'LEASE',
    "a lease held back for its token's wait, handed out after it was replaced (finding 4)",
  ],
  ['defect-self-takeover', 'MUTEX', 'a second concurrent call takes over from its own owner (finding 5)'],
  ['defect-fence-same-bytes', 'FENCE', 'fencedPut over identical bytes with MD5 etags (finding 1)'],
  [
    'defect-blind-no-raise',
    'TOKENS',
    "a taken lease's token (the stored one plus one) handed out without its raise, after a write-back",
  ],
  [
    'window-deleted-during-wait',
    'TOKENS',
    'the admitted window: a deletion before the store clock passed a token',
  ],
  [
    'window-written-back-while-settling',
    'LEASE',
    'the admitted window: a write-back of our own record while a lost answer is settled',
  ],
] as const

const full = process.env.MODEL_FULL === '1'

describe(`the lease protocol model, checked exhaustively by spin${why}`, () => {
  let output = ''
  let rows = new Map<string, Row>()
  let out = ''

  beforeAll(async () => {
    if (skipped) return
    out = mkdtempSync(join(tmpdir(), 'lease-model-'))
    output = await new Promise<string>((resolve) => {
      // The script exits 1 on an unexpected result; its summary says which, and the specs below judge it.
      execFile(
        'bash',
        ['scripts/model-check.sh', ...(full ? [] : defects.map(([name]) => name))],
        { cwd: root, env: { ...process.env, MODEL_OUT: out }, maxBuffer: 1 << 20 },
        (_error, stdout, stderr) => resolve(`${stdout}${stderr}`),
      )
    })
    rows = rowsOf(output)
  }, 600_000)

  afterAll(() => {
    if (out) rmSync(out, { recursive: true, force: true })
  })

  for (const name of full ? configurations : []) {
    it.skipIf(skipped)(`finds no error in any state of ${name}${why}`, () => {
      const row = rows.get(name)
      expect(row, `no result for ${name} in:\n${output}`).toBeDefined()
      expect(row?.found, output).toBe('pass')
      expect(row?.stored, 'a search that stored almost nothing did not run the model').toBeGreaterThan(10_000)
    })
  }

  for (const [name, property, what] of defects) {
    it.skipIf(skipped)(`finds a counterexample to ${property} with ${what}${why}`, () => {
      const row = rows.get(name)
      expect(row, `no result for ${name} in:\n${output}`).toBeDefined()
      expect(row?.found, output).toBe(property)
    })
  }
})
