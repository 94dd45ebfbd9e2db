import { describe, expect, it } from 'vitest'
import { check, type Violation } from '../../scripts/soak/checker.js'
import type { SoakEvent } from '../../scripts/soak/events.js'
import { Log } from './log.js'

const SLACK = { boundSlackMs: 500 }
const kinds = (violations: Violation[]) => violations.map((v) => v.kind)
const judge = (events: SoakEvent[]) => kinds(check(events, SLACK))

describe('the soak checker: two holders at once', () => {
  it('counts two leases of one key valid at the same true instant', () => {
    const log = new Log()
    log.acquire('w0.0', 'k0', 1, 100, 3_100)
    log.acquire('w1.0', 'k0', 2, 2_000, 5_000)
    expect(judge(log.end(6_000))).toEqual(['overlap'])
  })

  it('counts every pair: a third holder inside two others is two overlaps', () => {
    const log = new Log()
    log.acquire('w0.0', 'k0', 1, 100, 3_100)
    log.acquire('w1.0', 'k0', 2, 200, 3_200)
    log.acquire('w2.0', 'k0', 3, 1_000, 2_000)
    expect(judge(log.end(6_000))).toEqual(['overlap', 'overlap', 'overlap'])
  })

  it('passes back-to-back leases, and leases of different keys at once', () => {
    const log = new Log()
    log.acquire('w0.0', 'k0', 1, 100, 3_100)
    log.acquire('w1.0', 'k0', 2, 3_100, 6_000)
    log.acquire('w2.0', 'k1', 1, 1_000, 4_000)
    expect(judge(log.end(7_000))).toEqual([])
  })

  it('ends a lease when its holder starts releasing it, not when the release returns', () => {
    const log = new Log()
    const first = log.acquire('w0.0', 'k0', 1, 100, 3_100)
    log.release('w0.0', first, 1_000)
    log.acquire('w1.0', 'k0', 2, 1_002, 4_000)
    expect(judge(log.end(5_000))).toEqual([])
  })

  it('ends a lease when its process is killed, and no sooner when it is only paused', () => {
    const killed = new Log()
    killed.acquire('w0.0', 'k0', 1, 100, 3_100)
    killed.fault('kill', 'w0.0', 500)
    killed.acquire('w1.0', 'k0', 2, 1_000, 4_000)
    expect(judge(killed.end(5_000))).toEqual([])

    const paused = new Log()
    paused.acquire('w0.0', 'k0', 1, 100, 3_100)
    paused.fault('pause', 'w0.0', 500)
    paused.acquire('w1.0', 'k0', 2, 1_000, 4_000)
    paused.fault('resume', 'w0.0', 4_500)
    expect(judge(paused.end(5_000))).toEqual(['overlap'])
  })

  it('extends a lease by a renewal that succeeded', () => {
    const log = new Log()
    const first = log.acquire('w0.0', 'k0', 1, 100, 3_100)
    log.renew('w0.0', first, 2_000, 5_000)
    log.acquire('w1.0', 'k0', 2, 4_000, 7_000)
    expect(judge(log.end(8_000))).toEqual(['overlap'])
  })
})

describe('the soak checker: tokens', () => {
  it('counts a token handed out twice on one key', () => {
    const log = new Log()
    log.acquire('w0.0', 'k0', 7, 100, 1_000)
    log.acquire('w1.0', 'k0', 7, 2_000, 3_000)
    log.acquire('w2.0', 'k1', 7, 4_000, 5_000)
    expect(judge(log.end(6_000))).toEqual(['token-reused'])
  })

  it('counts a lower token for an acquisition called after another had returned', () => {
    const log = new Log()
    log.acquire('w0.0', 'k0', 50, 100, 1_000)
    log.acquire('w1.0', 'k0', 40, 2_000, 3_000, 1_500)
    expect(judge(log.end(4_000))).toEqual(['token-order'])
  })

  it('does not order acquisitions whose calls overlapped', () => {
    const log = new Log()
    log.acquire('w0.0', 'k0', 50, 1_000, 2_000, 100)
    log.acquire('w1.0', 'k0', 40, 3_000, 4_000, 900)
    expect(judge(log.end(5_000))).toEqual([])
  })

  it('assumes only that tokens grow: jumps of any size pass', () => {
    const log = new Log()
    let token = 1_763_800_000_000
    for (let i = 0; i < 5; i++) {
      token += 1 + i * 977
      log.acquire(`w${i}.0`, 'k0', token, 1_000 * i + 100, 1_000 * i + 900)
    }
    expect(judge(log.end(6_000))).toEqual([])
  })
})

describe('the soak checker: fenced writes', () => {
  it('counts a zombie write that landed after a higher token had landed on the object', () => {
    const log = new Log()
    const zombie = log.acquire('w0.0', 'k0', 1, 100, 1_000)
    const holder = log.acquire('w1.0', 'k0', 2, 2_000, 5_000)
    log.write('w1.0', holder, 'data/k0/0', 2, 2_010, 2_100)
    log.write('w0.0', zombie, 'data/k0/0', 1, 3_000, 3_100)
    const violations = check(log.end(6_000), SLACK)
    expect(kinds(violations)).toEqual(['stale-write'])
    expect(violations[0]?.message).toContain('zombie')
  })

  it('passes the zombie write that the fence refused, and one on another object', () => {
    const log = new Log()
    const zombie = log.acquire('w0.0', 'k0', 1, 100, 1_000)
    const holder = log.acquire('w1.0', 'k0', 2, 2_000, 5_000)
    log.write('w1.0', holder, 'data/k0/0', 2, 2_010, 2_100)
    log.write('w0.0', zombie, 'data/k0/0', 1, 3_000, 3_100, 'rejected', { currentToken: 2 })
    log.write('w0.0', zombie, 'data/k0/1', 1, 3_200, 3_300)
    expect(judge(log.end(6_000))).toEqual([])
  })

  it('passes a zombie write that landed before any newer holder wrote the object (fencing cannot refuse it)', () => {
    const log = new Log()
    const zombie = log.acquire('w0.0', 'k0', 1, 100, 1_000)
    const holder = log.acquire('w1.0', 'k0', 2, 2_000, 5_000)
    log.write('w0.0', zombie, 'data/k0/0', 1, 2_001, 2_050)
    log.write('w1.0', holder, 'data/k0/0', 2, 2_010, 2_100, 'ok', { previousToken: 1 })
    expect(judge(log.end(6_000))).toEqual([])
  })

  it('counts a write that reports replacing a higher token', () => {
    const log = new Log()
    const lease = log.acquire('w0.0', 'k0', 1, 100, 1_000)
    log.write('w0.0', lease, 'data/k0/0', 1, 200, 300, 'ok', { previousToken: 9 })
    expect(judge(log.end(2_000))).toEqual(['stale-write'])
  })
})

describe('the soak checker: the final state of the objects', () => {
  function written() {
    const log = new Log()
    const a = log.acquire('w0.0', 'k0', 3, 100, 1_000)
    const first = log.write('w0.0', a, 'data/k0/0', 3, 200, 300)
    const b = log.acquire('w1.0', 'k0', 8, 2_000, 3_000)
    const second = log.write('w1.0', b, 'data/k0/0', 8, 2_100, 2_200)
    return { log, first, second }
  }

  it('passes an object that ends with the body of the highest token that landed, and a lock record at its top token', () => {
    const { log, second } = written()
    log.final({ of: 'data', key: 'k0', object: 'data/k0/0', token: 8, write: second }, 4_000)
    log.final({ of: 'lock', key: 'k0', object: 'locks/k0', token: 8 }, 4_000)
    expect(judge(log.end(5_000))).toEqual([])
  })

  it('counts an object left with a lower token, a body no writer of its token sent, or gone', () => {
    const { log, first } = written()
    log.final({ of: 'data', key: 'k0', object: 'data/k0/0', token: 3, write: first }, 4_000)
    expect(judge(log.end(5_000))).toEqual(['final-state'])

    const forged = written()
    forged.log.final({ of: 'data', key: 'k0', object: 'data/k0/0', token: 8, write: forged.first }, 4_000)
    expect(judge(forged.log.end(5_000))).toEqual(['final-state'])

    const gone = written()
    gone.log.final({ of: 'data', key: 'k0', object: 'data/k0/0' }, 4_000)
    expect(judge(gone.log.end(5_000))).toEqual(['final-state'])
  })

  it('counts a lock record below a token it handed out', () => {
    const { log } = written()
    log.final({ of: 'lock', key: 'k0', object: 'locks/k0', token: 3 }, 4_000)
    expect(judge(log.end(5_000))).toEqual(['final-state'])
  })

  it('accepts a body from a write whose answer was lost (it may have landed)', () => {
    const { log } = written()
    const c = log.acquire('w2.0', 'k0', 9, 3_500, 6_000)
    const lost = log.write('w2.0', c, 'data/k0/0', 9, 3_600, 3_700, 'error')
    log.final({ of: 'data', key: 'k0', object: 'data/k0/0', token: 9, write: lost }, 7_000)
    expect(judge(log.end(8_000))).toEqual([])
  })
})

describe('the soak checker: calls that outlive their bound', () => {
  it('counts an attempt that returned later than waitMs plus the slack', () => {
    const log = new Log()
    log.attempt('w0.0', 'k0', 100, 1_100 + 501, 1_000)
    log.attempt('w0.0', 'k0', 2_000, 3_000 + 499, 1_000)
    expect(judge(log.end(5_000))).toEqual(['overtime'])
  })

  it('does not count the time its process spent stopped (SIGSTOP)', () => {
    const log = new Log()
    log.attempt('w0.0', 'k0', 100, 5_000, 1_000)
    log.fault('pause', 'w0.0', 200)
    log.fault('resume', 'w0.0', 4_200)
    expect(judge(log.end(6_000))).toEqual([])
  })

  it('counts a call that never returned, until its process was killed or the run ended', () => {
    const hung = new Log()
    hung.attempt('w0.0', 'k0', 100, undefined, 1_000)
    hung.fault('kill', 'w0.0', 5_000)
    expect(judge(hung.end(6_000))).toEqual(['overtime'])

    const cut = new Log()
    cut.attempt('w0.0', 'k0', 100, undefined, 1_000)
    cut.fault('kill', 'w0.0', 600)
    expect(judge(cut.end(6_000))).toEqual([])
  })

  it('holds fencedPut to its timeoutMs and the settle wait it may owe past it (2,250 ms at the default read validity)', () => {
    const log = new Log()
    const lease = log.acquire('w0.0', 'k0', 1, 100, 10_000)
    log.write('w0.0', lease, 'data/k0/0', 1, 200, 200 + 1_000 + 2_250 + 600, 'error', { timeoutMs: 1_000 })
    log.write('w0.0', lease, 'data/k0/1', 1, 5_000, 5_000 + 1_000 + 2_250 + 400, 'ok', { timeoutMs: 1_000 })
    expect(judge(log.end(11_000))).toEqual(['overtime'])
  })
})
