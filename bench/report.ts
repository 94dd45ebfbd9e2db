/**
 * Prints what the benchmark measured: the lock's operations on each store, then the peers side
 * by side, then the peer comparison again as a Markdown table (the README's figures).
 */
import type { Measured } from './measure.js'
import type { PeerRow, TakeoverTimes } from './peers/compare.js'
import type { Contender, Engine } from './peers/contender.js'
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
      const dollars = costPerMillion(c.pricePerMillion, m.operations, c.name)
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

/** The comparison as the README shows it: one column per peer. */
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
  const cold = 'a run, new container'
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
          m ? `$${costPerMillion(c.pricePerMillion, m.operations, c.name).toFixed(2)}` : '–'
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
