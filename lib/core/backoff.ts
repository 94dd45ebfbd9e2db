/** Capped exponential backoff with full jitter (AWS architecture blog, "Exponential Backoff And Jitter"). */
export interface BackoffOptions {
  /** First delay cap, in ms. @default 50 */
  readonly baseMs?: number
  /** Largest delay, in ms. @default 2000 */
  readonly capMs?: number
}

export function backoffDelay(
  attempt: number,
  options: BackoffOptions = {},
  random: () => number = Math.random,
) {
  const base = options.baseMs ?? 50
  const cap = options.capMs ?? 2000
  return Math.floor(random() * Math.min(cap, base * 2 ** Math.min(attempt, 30)))
}
