/**
 * Prints what the benchmark measured: the lock's operations on each store, then the peers side
 * by side, then the peer comparison again as a Markdown table (docs/comparison.md's figures), then a
 * 50 ms job run after run (warm at a fixed phase, back to back, in new processes), the same way.
 */
import { type Measured, median, total } from './measure.js'
import type { PeerRow, TakeoverTimes } from './peers/compare.js'
import type { Contender, Engine } from './peers/contender.js'
import type { JobRun } from './peers/job.js'
import type { JobRow, ProcessRun } from './peers/job-runs.js'
import { costPerMillion } from './prices.js'
import type { StoreResults } from './stores.js'
import type { TakeoverResult } from './takeover.js'
import type { BenchTarget } from './targets.js'

const ms = (value: number) => value.toFixed(2)
const seconds = (value: number) => (value / 1000).toFixed(2)
const operationsOf = (m: Measured) => [...m.operations].map(([op, n]) => `${n} ${op}`).join(' + ') || 'none'
const outcomeOf = (m: Measured) => m.outcomes.map(([what, n]) => `${what} ${n}/${m.rounds}`).join(', ')

export function reportStores(
  targets: readonly BenchTarget[],
  results: StoreResults,
  takeovers: readonly TakeoverResult[],
  takeover: { ttlMs: number; marginMs: number },
): void {
  const { rows, roundTrip, run, bareMs } = results
  const cell = (row: StoreResults['rows'][number], target: BenchTarget) => {
    const m = row.on.get(target)
    const trips = (m?.medianMs ?? 0) / (roundTrip.on.get(target)?.medianMs ?? Number.NaN)
    return [
      String(m?.requests ?? '-').padStart(5),
      ms(m?.medianMs ?? 0).padStart(8),
      trips.toFixed(1).padStart(5),
    ]
  }
  const columns = `${'req'.padStart(5)} ${'median ms'.padStart(9)} ${'RTs'.padStart(5)}`
  console.log('\nThe lock on each store')
  console.log(''.padEnd(52), targets.map((t) => t.name.padStart(21)).join('  '))
  console.log('operation'.padEnd(52), targets.map(() => columns.padStart(21)).join('  '))
  for (const row of rows) {
    console.log(row.operation.padEnd(52), targets.map((t) => cell(row, t).join(' ').padStart(21)).join('  '))
  }
  console.log('\nper run behind singleton() (acquire + release, warm container)')
  for (const target of targets) {
    const m = run.on.get(target)
    if (!m) continue
    const dollars = costPerMillion(target.pricePerMillion, m.operations, target.name)
    console.log(
      `  ${target.name.padEnd(9)} ${operationsOf(m).padEnd(26)} $${dollars.toFixed(2)} per million runs, ` +
        `+${ms(m.medianMs - bareMs)} ms over a bare handler`,
    )
  }
  const floor = takeover.ttlMs + takeover.marginMs
  console.log(
    `\ntakeover after a crash (ttl ${takeover.ttlMs} ms + margin ${takeover.marginMs} ms, polling every 100 ms)`,
  )
  targets.forEach((target, i) => {
    const result = takeovers[i]
    if (!result) return
    const excess = (value: number) => `${value >= floor ? '+' : ''}${seconds(value - floor)} s`
    console.log(
      `  ${target.name.padEnd(9)} median ${seconds(result.medianMs)} s (ttl + margin ${excess(result.medianMs)}), ` +
        `range ${excess(result.afterMs[0] ?? Number.NaN)} to ${excess(result.afterMs.at(-1) ?? Number.NaN)}, ${result.afterMs.length} crashes`,
    )
  })
}

export interface PeerReport {
  readonly contenders: readonly Contender[]
  readonly rows: readonly PeerRow[]
  /** Median round trip (a read of a missing key) on each engine, in ms. */
  readonly roundTripMs: ReadonlyMap<Engine, number>
  readonly takeovers: ReadonlyMap<Contender, TakeoverTimes>
  readonly ttlMs: number
}

export function reportPeers(report: PeerReport): void {
  const { contenders, rows, roundTripMs, takeovers } = report
  const width = Math.max(...contenders.map((c) => c.name.length)) + 2
  for (const row of rows) {
    const rounds = row.on.values().next().value?.rounds ?? 0
    console.log(`\n${row.label} (${rounds} rounds)`)
    console.log(
      `  ${''.padEnd(width)}${'req'.padStart(4)} ${'median ms'.padStart(9)} ${'RTs'.padStart(5)} ${'$/M'.padStart(7)}  requests / outcome`,
    )
    for (const c of contenders) {
      const m = row.on.get(c)
      if (!m) continue
      const trips = m.medianMs / (roundTripMs.get(c.engine) ?? Number.NaN)
      const dollars = costPerMillion(c.pricePerMillion, m.units ?? m.operations, c.name)
      console.log(
        `  ${c.name.padEnd(width)}${String(m.requests).padStart(4)} ${ms(m.medianMs).padStart(9)} ` +
          `${trips.toFixed(1).padStart(5)} ${dollars.toFixed(2).padStart(7)}  ${operationsOf(m)} / ${outcomeOf(m)}`,
      )
    }
  }
  console.log(
    `\ntakeover after a crash (the crashed run had ${report.ttlMs} ms; a redelivery tried every 100 ms)`,
  )
  for (const c of contenders) {
    const t = takeovers.get(c)
    if (!t) continue
    const range = `${seconds(t.afterMs[0] ?? Number.NaN)} to ${seconds(t.afterMs.at(-1) ?? Number.NaN)} s`
    console.log(
      `  ${c.name.padEnd(width)}median ${seconds(t.medianMs)} s, range ${range}, ${t.afterMs.length} crashes`,
    )
  }
  console.log(`\n${markdownTable(report)}`)
}

/** The comparison as docs/comparison.md shows it: one column per peer. */
export function markdownTable(report: PeerReport): string {
  const { contenders, rows, roundTripMs, takeovers } = report
  const line = (cells: readonly string[]) => `| ${cells.join(' | ')} |`
  const find = (label: string) => rows.find((row) => row.label === label)
  const runCell = (label: string, what: (c: Contender, m: Measured) => string) =>
    contenders.map((c) => {
      const m = find(label)?.on.get(c)
      return m ? what(c, m) : '–'
    })
  const warm = 'a run, warm container'
  const cold = 'a run, new container (random phase)'
  const out = [
    line(['', ...contenders.map((c) => c.name)]),
    line(['---', ...contenders.map(() => '---')]),
    line(['requests per run, warm container', ...runCell(warm, (_c, m) => operationsOf(m))]),
    line(['requests per run, new container', ...runCell(cold, (_c, m) => operationsOf(m))]),
    line([
      'time per run, warm (median; round trips)',
      ...runCell(
        warm,
        (c, m) =>
          `${m.medianMs.toFixed(1)} ms (${(m.medianMs / (roundTripMs.get(c.engine) ?? Number.NaN)).toFixed(1)})`,
      ),
    ]),
    line([
      'cost per million runs, warm / new container',
      ...contenders.map((c) => {
        const [w, n] = [warm, cold].map((label) => find(label)?.on.get(c))
        const price = (m: Measured | undefined) =>
          m ? `$${costPerMillion(c.pricePerMillion, m.units ?? m.operations, c.name).toFixed(2)}` : '–'
        return `${price(w)} / ${price(n)}`
      }),
    ]),
  ]
  for (const label of rows.map((row) => row.label).filter((l) => l !== warm && l !== cold)) {
    out.push(
      line([
        label,
        ...runCell(
          label,
          (_c, m) => `${m.outcomes[0]?.[0] ?? '?'}: ${operationsOf(m)}, ${m.medianMs.toFixed(0)} ms`,
        ),
      ]),
    )
  }
  out.push(
    line([
      `takeover after a crash, ${report.ttlMs / 1000} s left (median, range)`,
      ...contenders.map((c) => {
        const t = takeovers.get(c)
        return t
          ? `${seconds(t.medianMs)} s (${seconds(t.afterMs[0] ?? Number.NaN)}–${seconds(t.afterMs.at(-1) ?? Number.NaN)})`
          : '–'
      }),
    ]),
  )
  return out.join('\n')
}

/** Runs 1 to EARLY_RUNS of a container are its first ones: the clock estimate starts empty. */
const EARLY_RUNS = 3

interface JobStats {
  readonly runs: number
  readonly medianMs: number
  readonly minMs: number
  readonly maxMs: number
  /** Median of the first EARLY_RUNS runs, and of the later ones. */
  readonly earlyMs: number
  readonly laterMs: number
  /** Mean requests per run, and of them beyond the protocol (undefined: not told apart). */
  readonly requests: number
  readonly extra: number | undefined
  /** Requests of the run with the median count, and its extra ones. */
  readonly typical: string
  /** Mean cost per million runs, extra requests included. */
  readonly dollars: number
  readonly phases: readonly number[]
  readonly loadMs: number | undefined
  readonly clientMs: number | undefined
}

const mean = (values: readonly number[]) => values.reduce((sum, v) => sum + v, 0) / values.length

function jobStats(c: Contender, runs: readonly (JobRun | ProcessRun)[]): JobStats {
  const added = runs.map((r) => r.addedMs)
  const byRequests = [...runs].sort((a, b) => total(a.operations) - total(b.operations))
  const middle = byRequests[Math.floor(byRequests.length / 2)]
  const extraOf = (r: JobRun | undefined) => (r?.extra?.size ? ` (extra: ${opsOf(r.extra)})` : '')
  // DynamoDB bills by size: a write of a record holding its history is several units.
  const unitsOf = (r: JobRun | undefined) => (r?.units?.size ? ` [billed units: ${opsOf(r.units)}]` : '')
  const optional = (values: (number | undefined)[]) =>
    values.every((v) => v !== undefined) ? median(values as number[]) : undefined
  return {
    runs: runs.length,
    medianMs: median(added),
    minMs: Math.min(...added),
    maxMs: Math.max(...added),
    earlyMs: median(added.slice(0, EARLY_RUNS)),
    laterMs: median(added.slice(EARLY_RUNS)),
    requests: mean(runs.map((r) => total(r.operations))),
    extra: runs.every((r) => r.extra) ? mean(runs.map((r) => total(r.extra ?? new Map()))) : undefined,
    typical: `${opsOf(middle?.operations ?? new Map())}${extraOf(middle)}${unitsOf(middle)}`,
    dollars: mean(runs.map((r) => costPerMillion(c.pricePerMillion, r.units ?? r.operations, c.name))),
    phases: runs.map((r) => r.phaseMs),
    loadMs: optional(runs.map((r) => ('loadMs' in r ? r.loadMs : undefined))),
    clientMs: optional(runs.map((r) => ('clientMs' in r ? r.clientMs : undefined))),
  }
}

const opsOf = (operations: ReadonlyMap<string, number>) =>
  [...operations].map(([op, n]) => `${n} ${op}`).join(' + ') || 'none'
const phaseRange = (phases: readonly number[]) => {
  const [low, high] = [Math.min(...phases), Math.max(...phases)].map((p) => `.${String(p).padStart(3, '0')}`)
  return low === high ? `${low}` : `${low}–${high}`
}

/**
 * The 50 ms job rows: time added to each invocation (median, max, first runs against later
 * ones; for new processes the spread), requests per run with lambda-singleton's extra ones,
 * cost per million runs, extra requests priced.
 */
export function reportJobRuns(contenders: readonly Contender[], rows: readonly JobRow[]): void {
  const width = Math.max(...contenders.map((c) => c.name.length)) + 2
  const num = (value: number | undefined, digits = 2) => (value === undefined ? '–' : value.toFixed(digits))
  for (const row of rows) {
    const first = row.on.values().next().value
    const newProcess = first?.[0] !== undefined && 'loadMs' in first[0]
    console.log(`\n${row.label} (${first?.length ?? 0} runs each)`)
    console.log(`  ${row.how}`)
    console.log(
      `  ms added to each invocation (its wall time minus the handler's); req and extra: mean per run`,
    )
    const spread = newProcess
      ? `${'min'.padStart(8)} ${'max'.padStart(8)} ${'load'.padStart(6)} ${'client'.padStart(6)}`
      : `${'max'.padStart(8)} ${`runs 1–${EARLY_RUNS}`.padStart(8)} ${`${EARLY_RUNS + 1}+`.padStart(8)}`
    console.log(
      `  ${''.padEnd(width)}${'median'.padStart(9)} ${spread} ${'req'.padStart(5)} ${'extra'.padStart(5)} ` +
        `${'$/M'.padStart(6)}  requests (median run) / phases`,
    )
    for (const c of contenders) {
      const runs = row.on.get(c)
      if (!runs?.length) continue
      const s = jobStats(c, runs)
      const columns = newProcess
        ? [ms(s.minMs), ms(s.maxMs)].map((v) => v.padStart(8)).join(' ') +
          ` ${num(s.loadMs, 0).padStart(6)} ${num(s.clientMs, 1).padStart(6)}`
        : [s.maxMs, s.earlyMs, s.laterMs].map((v) => ms(v).padStart(8)).join(' ')
      console.log(
        `  ${c.name.padEnd(width)}${ms(s.medianMs).padStart(9)} ${columns} ${num(s.requests).padStart(5)} ` +
          `${num(s.extra).padStart(5)} ${s.dollars.toFixed(2).padStart(6)}  ${s.typical} / ${phaseRange(s.phases)}`,
      )
    }
  }
  console.log(`\n${jobRunsMarkdown(contenders, rows)}`)
}

/** The same as a Markdown table, one column per peer. */
export function jobRunsMarkdown(contenders: readonly Contender[], rows: readonly JobRow[]): string {
  const line = (cells: readonly string[]) => `| ${cells.join(' | ')} |`
  const statsOf = (row: JobRow | undefined, c: Contender) => {
    const runs = row?.on.get(c)
    return runs?.length ? jobStats(c, runs) : undefined
  }
  const cells = (row: JobRow | undefined, what: (s: JobStats) => string) =>
    contenders.map((c) => {
      const s = statsOf(row, c)
      return s ? what(s) : '–'
    })
  const r = (value: number) => value.toFixed(0)
  const requests = (s: JobStats) =>
    `${s.requests.toFixed(1)}${s.extra !== undefined ? ` (${s.extra.toFixed(1)} extra)` : ''}`
  const out = [
    line(['time added per run, requests', ...contenders.map((c) => c.name)]),
    line(['---', ...contenders.map(() => '---')]),
  ]
  for (const row of rows) {
    const first = row.on.values().next().value
    if (first?.[0] !== undefined && 'loadMs' in first[0]) {
      out.push(
        line([
          `${row.short}: median (range), ${first.length} processes`,
          ...cells(row, (s) => `${r(s.medianMs)} ms (${r(s.minMs)}–${r(s.maxMs)})`),
        ]),
      )
    } else {
      out.push(
        line([
          `${row.short}, ${first?.length ?? 0} runs: median, max; runs 1–${EARLY_RUNS} / ${EARLY_RUNS + 1}+ (median)`,
          ...cells(row, (s) => `${r(s.medianMs)} ms, ${r(s.maxMs)}; ${r(s.earlyMs)} / ${r(s.laterMs)}`),
        ]),
      )
    }
  }
  out.push(
    line([
      `requests per run (mean): ${rows.map((row) => row.short).join(' / ')}`,
      ...contenders.map((c) =>
        rows
          .map((row) => statsOf(row, c))
          .map((s) => (s ? requests(s) : '–'))
          .join(' / '),
      ),
    ]),
    line([
      `cost per million runs, extra requests included: ${rows.map((row) => row.short).join(' / ')}`,
      ...contenders.map((c) =>
        rows
          .map((row) => statsOf(row, c))
          .map((s) => (s ? `$${s.dollars.toFixed(2)}` : '–'))
          .join(' / '),
      ),
    ]),
  )
  return out.join('\n')
}
