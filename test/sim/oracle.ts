import type { Lease } from '../../lib/core/lease.js'
import { MAX_DRIFT } from '../../lib/core/server-clock.js'
import { ORPHAN_KILL_MS, type SimGroup } from './sim-group.js'
import type { SimS3 } from './sim-s3.js'
import type { SimStore } from './sim-store.js'
import type { SimProcess, World } from './world.js'

/** A broken promise of docs/guarantees.md, with when and what. */
export interface Violation {
  readonly invariant: string
  readonly at: number
  readonly message: string
}

/** Why a live lease may overlap another (docs/guarantees.md, the admitted windows). */
const Excuse = {
  /** W1: replaced by a newer tick's run; bounded by how often the run watches. */
  Replaced: 'replaced',
  /** W1: an operator's force-release or pause --now. */
  Operator: 'operator',
  /** W2: the object was deleted or an old record written back from outside. */
  Outside: 'outside',
} as const
type Excuse = (typeof Excuse)[keyof typeof Excuse]

/** What the oracle needs of a lease (its written token, whether it is live): an exec job's running group is one too. */
interface Holding {
  readonly token: number
  readonly isHeld: boolean
  readonly remainingMs: number
  /** Whether `body` is this lease's own record raised (`LockStore.take`'s lease, whose token its raise replaces). */
  readonly raisedIn?: (body: string) => boolean
}

/**
 * A `Lease` as the oracle holds it: by the token it wrote, which its holder may not have read
 * yet, and which its raise replaces when the lease was taken (`LockStore.take`): its owner and
 * time of acquisition stay.
 */
export function holdingOf(lease: Lease): Holding {
  const { owner, acquired_at } = lease.record
  return {
    get token() {
      return lease.record.token
    },
    raisedIn: (body) => {
      const record = recordOf(body)
      return record?.owner === owner && record.acquired_at === acquired_at && record.expires_at !== 0
    },
    get isHeld() {
      return lease.isHeld
    },
    get remainingMs() {
      return lease.remainingMs
    },
  }
}

/** How a `fencedPut` call ended: returned, threw, or left its settle unfinished (W4). */
export const CallEnd = {
  Returned: 'returned',
  Ended: 'ended',
  /** Its process died, or it gave up at its timeout while it settled, and said so. */
  Abandoned: 'abandoned',
} as const
export type CallEnd = (typeof CallEnd)[keyof typeof CallEnd]

/** A `fencedPut` call: of which object, with which token, by which process, since when. */
interface FencingCall {
  readonly key: string
  readonly token: number
  readonly by: string
  readonly since: number
}

/** An exec run's command: its group runs as long as it runs, whatever its wrapper knows. */
interface Job {
  readonly group: SimGroup
  readonly killAfterMs: number
}

interface Handed {
  readonly lease: Holding
  readonly process: Pick<SimProcess, 'name' | 'alive'>
  readonly job?: Job
  readonly label: string
  readonly handedAt: number
  /** Its release landed: the run is over, whether or not the answer reached it yet. */
  released?: boolean
  superseded?: { readonly at: number; readonly excuse: Excuse | undefined; readonly by: string }
}

/** Longest a replaced run may go on (W1): the watch period, a round trip, and its store retries. */
export const REPLACED_STOP_BOUND_MS = 12_000

/**
 * The global view: every lease handed out, and the store's log. After each event it checks the
 * invariants of docs/guarantees.md that can be judged at that moment.
 */
export class Oracle {
  readonly violations: Violation[] = []
  readonly #handed: Handed[] = []
  /** I2: the highest token handed out so far, and by whom. */
  #highestToken: { readonly token: number; readonly label: string } = { token: 0, label: 'none' }
  #logSeen = 0
  readonly #reported = new Set<string>()
  /** Tokens each process wrote as an acquisition, so that supersession can be told apart. */
  readonly #operators = new Set<string>()
  /** I3: per output object, the highest token a `fencedPut` returned for. */
  readonly #fencedFloor = new Map<string, { token: number; by: string }>()
  /** I3: the `fencedPut` calls under way, and since when, for W4. */
  readonly #fencing: FencingCall[] = []
  /** W4: the calls that ended without returning (they threw, or their process died) mid-settle. */
  readonly #abandoned: FencingCall[] = []

  constructor(
    readonly world: World,
    readonly store: SimStore,
    readonly key: string,
    readonly s3: SimS3,
  ) {}

  /** `fencedPut` with `token` returned for `key`: from now on the object carries `token` or higher. */
  fenced(key: string, token: number, by: string): void {
    const floor = this.#fencedFloor.get(key)
    if (!floor || token > floor.token) this.#fencedFloor.set(key, { token, by })
    this.#checkFences()
  }

  /**
   * A `fencedPut` by `by` with `token` on `key` is under way: the answer ends it, once it returned
   * or threw, or its process died.
   */
  fencing(key: string, token: number, by: string): (how: CallEnd) => void {
    const call = { key, token, by, since: this.world.now }
    this.#fencing.push(call)
    return (how) => {
      const index = this.#fencing.indexOf(call)
      if (index < 0) return
      this.#fencing.splice(index, 1)
      if (how === CallEnd.Abandoned) this.#abandoned.push(call)
    }
  }

  /**
   * I3: no output object carries a lower token than a `fencedPut` that returned, but in W4: a
   * stale PUT on its way landed over the bytes of a newer holder's call that has not returned
   * yet, whose settle must write them back before it does (checked as it returns).
   */
  #checkFences(): void {
    for (const [key, floor] of this.#fencedFloor) {
      const token = this.s3.peek(key)?.token
      if (token !== undefined && token >= floor.token) continue
      if (this.#settling(key, floor.token)) continue
      const last = this.s3.log.findLast((write) => write.key === key)
      this.fail(
        'I3',
        `${key} carries token ${token} after ${floor.by}'s fencedPut with token ${floor.token} returned` +
          (last ? ` (last written by ${last.by})` : ''),
      )
      this.#fencedFloor.delete(key)
    }
  }

  /**
   * W4: the last write of `key` at or above `floor` was made by a call still under way (one of
   * its writer and token that began before it: not the writer's next call), or by one that ended
   * without returning, its settle unfinished (its holder died, or its call gave up at its timeout
   * and threw, saying a stale write may land over it): the stale bytes stay until the next
   * fenced write of the object.
   */
  #settling(key: string, floor: number): boolean {
    const last = this.s3.log.findLast(
      (write) => write.key === key && write.token !== undefined && write.token >= floor,
    )
    const madeIt = (call: FencingCall) =>
      last !== undefined &&
      call.key === key &&
      call.by === last.by &&
      call.token === last.token &&
      call.since < last.at
    return this.#fencing.some(madeIt) || this.#abandoned.some(madeIt)
  }

  /** Writes by `processName` are an operator's. */
  operator(processName: string): void {
    this.#operators.add(processName)
  }

  fail(invariant: string, message: string): void {
    this.violations.push({ invariant, at: this.world.now, message })
  }

  /**
   * An exec run started its command with `token`: the group is the job, live while any of it
   * runs (W5 bounds how long it may outlive the lease; I6 that no release lands before it is gone).
   */
  jobStarted(group: SimGroup, token: number, wrapper: SimProcess, label: string, killAfterMs: number): void {
    const holding: Holding = {
      token,
      get isHeld() {
        return group.running
      },
      get remainingMs() {
        return group.running ? 1 : 0
      },
    }
    this.handOut(holding, { name: wrapper.name, alive: true }, label, { group, killAfterMs })
    // Its token is in the command's environment: handed out.
    this.tokenHandedOut(token, label, wrapper.drift)
  }

  /**
   * A holder was handed its fencing token (`fencingToken()` resolved, or exec put it in its
   * command's environment). I2: the store's clock has passed it, and it is above every token
   * handed out before, unless its lease is over at the store already (W1: a holder that has not
   * heard), or an outside write came while the store's clock had not passed the higher token
   * (W2), or its record is stored only because an outside writer wrote it back byte for byte
   * (W2: a holder whose lease was over, and that reads its token late, cannot tell that record
   * from its own write).
   * The store's clock is judged by the holder's estimate of it, which allows its clock to drift
   * `MAX_DRIFT` from the store's: beyond that (the world draws up to 1000 ppm), only the order is held.
   */
  tokenHandedOut(token: number, label: string, drift: number): void {
    this.#observeLog()
    if (this.world.now <= token && Math.abs(drift) <= MAX_DRIFT) {
      this.fail('I2', `${label} was handed token ${token} while the store's clock read ${this.world.now}`)
    }
    const higher = this.#highestToken
    const again = token === higher.token && label === higher.label
    const stored = this.#storedToken() === token && !isOutside(this.store.log.at(-1)?.kind ?? '')
    if (token <= higher.token && !again && stored && !this.#outsideWriteBefore(higher.token)) {
      this.fail(
        'I2',
        `${label} was handed token ${token} after ${higher.label} was handed token ${higher.token}, and ${token} is the stored one`,
      )
    }
    if (token > higher.token) this.#highestToken = { token, label }
  }

  /** Whether an outside writer deleted the object or wrote an old record back before the store's clock passed `token`. */
  #outsideWriteBefore(token: number): boolean {
    return this.store.log.some((write) => isOutside(write.kind) && write.at <= token)
  }

  /**
   * A lease was handed out to `process` (I2: the moment its write's answer came, so never over
   * at the store by then unless it was over before that answer came: W1, W2, W3).
   */
  handOut(lease: Holding, process: Pick<SimProcess, 'name' | 'alive'>, label: string, job?: Job): void {
    this.#observeLog()
    const entry: Handed = { lease, process, label, handedAt: this.world.now, ...(job && { job }) }
    this.#handed.push(entry)
    const stillCurrent = this.#storedToken() === lease.token
    // Over at the store before it was handed out, though its holder had heard its write landed:
    // it held the lease back (waiting for its token) while someone replaced or freed it.
    const ownAt = this.store.log.findIndex(
      (write) => write.by === process.name && write.body !== undefined && tokenOf(write.body) === lease.token,
    )
    const own = this.store.log[ownAt]
    if (!stillCurrent && entry.superseded === undefined) {
      // Over at the store already (W1, W2, W3): the first write after its own is what ended it.
      const ended = (ownAt < 0 ? [] : this.store.log.slice(ownAt + 1)).find(
        (write) => write.body === undefined || tokenOf(write.body) !== lease.token || isOutside(write.kind),
      )
      const last = ended ?? this.store.log.at(-1)
      this.#supersede(entry, last?.by, last?.kind, last?.body, last?.at)
    }
    const over = entry.superseded
    // An exec job starts once its token is ready, after a read when it waited (W1 covers an end during that read).
    if (over && !job && own?.answeredAt !== undefined && over.at > own.answeredAt) {
      this.fail(
        'I2',
        `${label} was handed token ${lease.token} ${this.world.now - over.at} ms after ${over.by} had ` +
          `ended it at the store, though its write's answer had come ${over.at - own.answeredAt} ms before that`,
      )
    }
  }

  /** I1 after each event: at most one lease live for its holder, but for the admitted windows. */
  check(): void {
    this.#checkFences()
    for (const name of this.store.spinning) {
      this.#failOnce(
        'I5',
        `${name} kept writing over one version the store refused though it held, instead of naming the engine`,
        name,
      )
    }
    for (const misread of this.store.misread.splice(0)) {
      this.fail('I4', `DynamoDB's item mapping: ${misread}`)
    }
    this.#observeLog()
    const live: Handed[] = []
    for (const entry of this.#handed) {
      const { lease, process } = entry
      if (!process.alive || entry.released || !lease.isHeld || lease.remainingMs <= 0) continue
      if (entry.job && this.#jobStopping(entry, entry.job)) continue
      const excuse = entry.superseded?.excuse
      if (
        excuse === Excuse.Replaced &&
        this.world.now - (entry.superseded?.at ?? 0) > REPLACED_STOP_BOUND_MS
      ) {
        this.fail(
          'I1/W1',
          `${entry.label} (token ${lease.token}) was replaced by ${entry.superseded?.by} ` +
            `${this.world.now - (entry.superseded?.at ?? 0)} ms ago and still holds its lease`,
        )
        entry.superseded = { ...(entry.superseded as NonNullable<Handed['superseded']>), excuse: undefined }
      }
      if (excuse === undefined || entry.superseded?.excuse === undefined) live.push(entry)
    }
    if (live.length > 1) {
      const who = live.map((entry) => `${entry.label} (token ${entry.lease.token})`).join(' and ')
      if (!this.#reported.has(who)) this.fail('I1', `two live leases at once: ${who}`)
      this.#reported.add(who)
    }
    // Forget what can never be live again.
    for (let i = this.#handed.length - 1; i >= 0; i--) {
      const entry = this.#handed[i] as Handed
      if (!entry.process.alive || !entry.lease.isHeld || entry.lease.remainingMs <= 0)
        this.#handed.splice(i, 1)
    }
  }

  /**
   * W5: a job asked to stop (its lease lost, or a signal) may run `killAfterMs` more, and one
   * whose wrapper died `ORPHAN_KILL_MS`; past that it is a violation. True while it is excused.
   */
  #jobStopping(entry: Handed, job: Job): boolean {
    const { group } = job
    const slackMs = 100
    if (group.orphanedAt !== undefined && this.world.now - group.orphanedAt > ORPHAN_KILL_MS + slackMs) {
      this.#failOnce(
        'W5',
        `${entry.label}: its wrapper died ${this.world.now - group.orphanedAt} ms ago, and its command's processes still run`,
        entry.label,
      )
    }
    if (group.firstStopAt === undefined) return false
    const stoppingMs = this.world.now - group.firstStopAt
    if (stoppingMs <= job.killAfterMs + slackMs) return true
    this.#failOnce(
      'W5',
      `${entry.label}: its command was asked to stop ${stoppingMs} ms ago (--kill-after ${job.killAfterMs} ms) and still runs`,
      entry.label,
    )
    return false
  }

  /** Fails once per invariant and label, however many events see it broken. */
  #failOnce(invariant: string, message: string, label = message): void {
    if (this.#reported.has(`${invariant} ${label}`)) return
    this.#reported.add(`${invariant} ${label}`)
    this.fail(invariant, message)
  }

  /** The token of the stored record, or undefined (absent or not a record). */
  #storedToken(): number | undefined {
    const object = this.store.peek(this.key)
    if (!object) return undefined
    try {
      return (JSON.parse(object.body) as { token?: number }).token
    } catch {
      return undefined
    }
  }

  /** Marks the leases whose record a write since the last look overwrote, with the window that excuses it. */
  #observeLog(): void {
    const log = this.store.log
    for (; this.#logSeen < log.length; this.#logSeen++) {
      const write = log[this.#logSeen]
      if (!write) continue
      const token = write.body === undefined ? undefined : tokenOf(write.body)
      for (const entry of this.#handed) {
        if (token === entry.lease.token && write.body !== undefined && isReleased(write.body)) {
          entry.released = true
          // I6: exec holds the lock until its command's whole group is gone.
          if (entry.job?.group.running && write.by === entry.process.name) {
            this.#failOnce('I6', `${entry.label} released the lock while its command's processes still run`)
          }
        }
        // An outside write-back may carry the lease's own token with an older expiry: W2 all the same.
        const outside = isOutside(write.kind)
        if (entry.superseded !== undefined || (token === entry.lease.token && !outside)) continue
        // A taken lease's raise, by its holder: the same lease under its new token.
        const own = write.by === entry.process.name && !outside && write.body !== undefined
        if (own && entry.lease.raisedIn?.(write.body as string)) continue
        this.#supersede(entry, write.by, write.kind, write.body, write.at)
      }
    }
  }

  #supersede(entry: Handed, by = 'unknown', kind = 'replace', body?: string, at = this.world.now): void {
    let excuse: Excuse | undefined
    if (kind === 'delete' || kind === 'write-back') excuse = Excuse.Outside
    else if (this.#operators.has(by)) excuse = Excuse.Operator
    else if (body !== undefined && replacedTokenOf(body) === entry.lease.token) excuse = Excuse.Replaced
    entry.superseded = { at, excuse, by }
  }
}

/** The record in `body`, or undefined when it is not JSON. */
function recordOf(
  body: string,
): { owner?: unknown; acquired_at?: unknown; expires_at?: unknown } | undefined {
  try {
    return JSON.parse(body) as { owner?: unknown; acquired_at?: unknown; expires_at?: unknown }
  } catch {
    return undefined
  }
}

function tokenOf(body: string): number | undefined {
  try {
    return (JSON.parse(body) as { token?: number }).token
  } catch {
    return undefined
  }
}

function isOutside(kind: string): boolean {
  return kind === 'delete' || kind === 'write-back'
}

function isReleased(body: string): boolean {
  try {
    return (JSON.parse(body) as { expires_at?: number }).expires_at === 0
  } catch {
    return false
  }
}

function replacedTokenOf(body: string): number | undefined {
  try {
    return (JSON.parse(body) as { replaced?: { token?: number } }).replaced?.token
  } catch {
    return undefined
  }
}
