/**
 * Interleaved measurement: every target is measured in every round, in an order that rotates
 * from round to round, so that none of them gets the machine's quieter moments. Request counts
 * are exact; times are medians, and depend on the machine and the engine.
 */

export interface Sample {
  readonly ms: number
  /** Requests sent, by operation. */
  readonly operations: ReadonlyMap<string, number>
  /** What the engine billed, by operation, where it bills by size (DynamoDB's request units). */
  readonly units?: ReadonlyMap<string, number>
  /** What came of it, when that can differ between targets (ran, skipped…). */
  readonly outcome?: string
}

export interface Measured {
  /** Requests of the round with the median request count. */
  readonly requests: number
  /** That round's requests, by operation. */
  readonly operations: ReadonlyMap<string, number>
  /** That round's billed units, by operation, where the engine bills by size (see Sample.units). */
  readonly units?: ReadonlyMap<string, number>
  readonly medianMs: number
  /** Every outcome seen, the most frequent first, with how often. */
  readonly outcomes: readonly (readonly [string, number])[]
  readonly rounds: number
}

/** The median: the middle value, or the mean of the two middle ones for an even count. */
export const median = (values: readonly number[]): number => {
  const sorted = [...values].sort((a, b) => a - b)
  const upper = Math.floor(sorted.length / 2)
  if (sorted.length % 2 === 1) return sorted[upper] ?? Number.NaN
  return ((sorted[upper - 1] ?? Number.NaN) + (sorted[upper] ?? Number.NaN)) / 2
}

export const total = (operations: ReadonlyMap<string, number>): number =>
  [...operations.values()].reduce((sum, n) => sum + n, 0)

/** Runs `sample` on every target `rounds` times, interleaved, and sums each target up. */
export async function interleave<T>(
  targets: readonly T[],
  rounds: number,
  sample: (target: T, round: number) => Promise<Sample>,
): Promise<Map<T, Measured>> {
  const samples = new Map<T, Sample[]>(targets.map((target) => [target, []]))
  for (let round = 0; round < rounds; round++) {
    for (let i = 0; i < targets.length; i++) {
      const target = targets[(round + i) % targets.length] as T
      samples.get(target)?.push(await sample(target, round))
    }
  }
  const measured = new Map<T, Measured>()
  for (const [target, taken] of samples) measured.set(target, summarize(taken))
  return measured
}

function summarize(taken: readonly Sample[]): Measured {
  const byRequests = [...taken].sort((a, b) => total(a.operations) - total(b.operations))
  const middle = byRequests[Math.floor(byRequests.length / 2)]
  const typical = middle?.operations ?? new Map<string, number>()
  const outcomes = new Map<string, number>()
  for (const { outcome } of taken) if (outcome) outcomes.set(outcome, (outcomes.get(outcome) ?? 0) + 1)
  return {
    requests: total(typical),
    operations: typical,
    ...(middle?.units && { units: middle.units }),
    medianMs: median(taken.map((s) => s.ms)),
    outcomes: [...outcomes].sort((a, b) => b[1] - a[1]),
    rounds: taken.length,
  }
}

interface Counter {
  readonly byOperation: ReadonlyMap<string, number>
  reset(): void
}

/** Times `work`, counting the requests it sends through `requests` (and the units billed, if given). */
export async function timed<R>(
  requests: Counter,
  work: () => Promise<R>,
  units?: Counter,
): Promise<{ ms: number; operations: Map<string, number>; units?: Map<string, number>; value: R }> {
  requests.reset()
  units?.reset()
  const startedAt = performance.now()
  const value = await work()
  const ms = performance.now() - startedAt
  return {
    ms,
    operations: new Map(requests.byOperation),
    ...(units && { units: new Map(units.byOperation) }),
    value,
  }
}
