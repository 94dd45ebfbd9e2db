/** Builds synthetic soak event logs: what workers and the orchestrator would have written. */
import type { FinalEvent, SoakEvent } from '../../scripts/soak/events.js'

export class Log {
  readonly events: SoakEvent[] = [{ t: 0, w: 'orchestrator', type: 'run', phase: 'start' }]
  #ids = 0

  /** An acquisition of `key` by `w`, called at `calledAt`, returned at `at`, valid until `until`. */
  acquire(w: string, key: string, token: number, at: number, until: number, calledAt = at - 10): string {
    const id = `${w}/${this.#ids++}`
    this.events.push(
      { t: calledAt, w, type: 'acquire', phase: 'start', id, key, waitMs: 2_000 },
      {
        t: at,
        w,
        type: 'acquire',
        phase: 'end',
        id,
        key,
        waitMs: 2_000,
        status: 'acquired',
        token,
        validUntil: until,
      },
    )
    return id
  }

  /** An attempt that found the key held, or failed. */
  attempt(w: string, key: string, from: number, to: number | undefined, waitMs: number): string {
    const id = `${w}/${this.#ids++}`
    this.events.push({ t: from, w, type: 'acquire', phase: 'start', id, key, waitMs })
    if (to !== undefined)
      this.events.push({ t: to, w, type: 'acquire', phase: 'end', id, key, waitMs, status: 'held' })
    return id
  }

  release(w: string, lease: string, at: number): void {
    this.events.push(
      { t: at, w, type: 'release', phase: 'start', lease },
      { t: at + 5, w, type: 'release', phase: 'end', lease, ok: true },
    )
  }

  renew(w: string, lease: string, at: number, until: number): void {
    this.events.push(
      { t: at - 5, w, type: 'renew', phase: 'start', lease },
      { t: at, w, type: 'renew', phase: 'end', lease, ok: true, validUntil: until },
    )
  }

  /** A fencedPut of `object` with `token` from `from` to `to` (undefined: it never returned). */
  write(
    w: string,
    lease: string,
    object: string,
    token: number,
    from: number,
    to: number | undefined,
    outcome: 'ok' | 'rejected' | 'error' = 'ok',
    extra: { previousToken?: number; currentToken?: number; timeoutMs?: number } = {},
  ): string {
    const id = `${lease}/${this.#ids++}`
    const { timeoutMs = 3_000, ...result } = extra
    const base = { w, type: 'write', id, lease, key: 'k0', object, token, timeoutMs } as const
    this.events.push({ t: from, ...base, phase: 'start' })
    if (to !== undefined) this.events.push({ t: to, ...base, phase: 'end', outcome, ...result })
    return id
  }

  fault(kind: 'kill' | 'pause' | 'resume', target: string, at: number): void {
    this.events.push({ t: at, w: 'orchestrator', type: 'fault', kind, target })
  }

  final(event: Omit<FinalEvent, 't' | 'w' | 'type'>, at: number): void {
    this.events.push({ t: at, w: 'orchestrator', type: 'final', ...event })
  }

  end(at: number): SoakEvent[] {
    return [...this.events, { t: at, w: 'orchestrator', type: 'run', phase: 'end' }]
  }
}
