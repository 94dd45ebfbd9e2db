/** A seeded source of randomness (mulberry32), so that a soak's fault plan can be replayed from its seed. */
/** A number in [0, 1). */
export type Random = () => number

export function seededRandom(seed: number): Random {
  let state = seed >>> 0
  return () => {
    state = (state + 0x6d2b79f5) >>> 0
    let t = state
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296
  }
}

/** A number in [low, high). */
export function between(random: Random, low: number, high: number): number {
  return low + random() * (high - low)
}

/** One of `items`, uniformly. */
export function pick<T>(random: Random, items: readonly T[]): T {
  const item = items[Math.floor(random() * items.length)]
  if (item === undefined) throw new Error('pick: no items')
  return item
}
