/**
 * A record's time (seconds since the Unix epoch, by the store's clock, as `paused.at`,
 * `history[].started` and `acquired_at` are written) as results, log lines and the CLI show it:
 * ISO 8601.
 */
export function isoFromSeconds(seconds: number): string {
  return new Date(seconds * 1000).toISOString()
}
