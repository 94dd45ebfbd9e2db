import { afterEach, describe, expect, it, vi } from 'vitest'
import type { InvocationContext } from '../../lib/extend.js'
import { LockOptionsError, type SingletonOptions, withSingleton } from '../../lib/index.js'
import { LockOperator } from '../../lib/operator/lock-operator.js'
import { schedulerEvent } from '../support/lambda-context.js'
import { KEY, world } from './world.js'

type Emf = Record<string, unknown> & {
  _aws: {
    Timestamp: number
    CloudWatchMetrics: {
      Namespace: string
      Dimensions: string[][]
      Metrics: { Name: string; Unit: string }[]
    }[]
  }
}

/**
 * What CloudWatch (and Powertools Metrics, which writes the same shape) requires of an EMF
 * document: a whole-millisecond timestamp, each metric's value a top-level number, each
 * dimension a top-level string, at most 30 dimensions per set and 100 metrics per directive.
 */
function expectValidEmf(line: Emf): void {
  expect(Number.isInteger(line._aws.Timestamp)).toBe(true)
  for (const directive of line._aws.CloudWatchMetrics) {
    expect(directive.Metrics.length).toBeLessThanOrEqual(100)
    for (const metric of directive.Metrics) {
      expect(typeof line[metric.Name]).toBe('number')
      expect(['Count', 'Milliseconds']).toContain(metric.Unit)
    }
    for (const set of directive.Dimensions) {
      expect(set.length).toBeLessThanOrEqual(30)
      for (const name of set) expect(typeof line[name]).toBe('string')
    }
  }
}

/** A world whose handlers write their EMF lines into `emf`, on `namespace`. */
function metricsWorld(namespace = 'Jobs') {
  const w = world()
  const emf: Emf[] = []
  const options = (extra: SingletonOptions = {}): SingletonOptions => ({
    metrics: { namespace, write: (line) => emf.push(JSON.parse(line) as Emf) },
    ...extra,
  })
  /** Each line's metrics, by name, value and unit. */
  const metrics = () =>
    emf.map((line) =>
      Object.fromEntries(
        line._aws.CloudWatchMetrics.flatMap((d) => d.Metrics).map((m) => [m.Name, [line[m.Name], m.Unit]]),
      ),
    )
  return { ...w, emf, metrics, metricsOptions: options }
}

afterEach(() => {
  vi.unstubAllEnvs()
  vi.restoreAllMocks()
})

describe('metrics: CloudWatch Embedded Metric Format lines from the lifecycle', () => {
  it('writes an acquisition (with its wait) and a release (with the time held), keyed by lock and function', async () => {
    const { clock, store, wrap, context, emf, metricsOptions } = metricsWorld()
    store.script('read', () => clock.sleep(40).then(() => 'ok'))
    let ranAt = Number.NaN
    const handler = wrap(async () => {
      ranAt = clock.now()
      await clock.sleep(2_500)
    }, metricsOptions())
    const start = clock.now()
    await clock.run(handler(schedulerEvent('2026-11-21T03:00:00Z'), context({ functionName: 'report-fn' })))
    expect(emf).toEqual([
      {
        _aws: {
          Timestamp: Math.round(ranAt),
          CloudWatchMetrics: [
            {
              Namespace: 'Jobs',
              Dimensions: [['LockKey', 'FunctionName'], ['FunctionName']],
              Metrics: [
                { Name: 'Acquired', Unit: 'Count' },
                { Name: 'WaitMs', Unit: 'Milliseconds' },
              ],
            },
          ],
        },
        LockKey: 'locks/report-fn',
        FunctionName: 'report-fn',
        Acquired: 1,
        WaitMs: ranAt - start, // the read's 40 ms, and the wait for the token
      },
      {
        _aws: {
          Timestamp: Math.round(ranAt + 2_500),
          CloudWatchMetrics: [
            {
              Namespace: 'Jobs',
              Dimensions: [['LockKey', 'FunctionName'], ['FunctionName']],
              Metrics: [
                { Name: 'Completed', Unit: 'Count' },
                { Name: 'HeldMs', Unit: 'Milliseconds' },
              ],
            },
          ],
        },
        LockKey: 'locks/report-fn',
        FunctionName: 'report-fn',
        Completed: 1,
        HeldMs: 2_500,
      },
    ])
    for (const line of emf) expectValidEmf(line)
  })

  it("counts a run whose onOutcome throws as it ran: released, Completed and HeldMs, the sink's error logged", async () => {
    const { clock, wrap, context, metrics, metricsOptions, lines, record } = metricsWorld()
    const onOutcome = (event: { outcome: string }) => {
      if (event.outcome === 'released') throw new Error('sink down')
    }
    const handler = wrap(async () => clock.sleep(100), { ...metricsOptions(), onOutcome })
    await clock.run(handler(schedulerEvent('2026-11-21T03:00:00Z'), context()))
    expect(record()).toMatchObject({ expires_at: 0, last_run: '2026-11-21T03:00:00Z' })
    expect(metrics().map((m) => Object.keys(m))).toEqual([
      ['Acquired', 'WaitMs'],
      ['Completed', 'HeldMs'],
    ])
    expect(lines.map((l) => l.fields.outcome)).not.toContain('release-failed')
    expect(lines.find((l) => l.level === 'error')).toMatchObject({
      message: expect.stringMatching(/onOutcome threw/),
      fields: { outcome: 'released', error: expect.objectContaining({ message: 'sink down' }) },
    })
  })

  it('refuses an onOutcome that is not a function when the handler is made', () => {
    expect(() =>
      withSingleton(async () => 1, { store: world().store, onOutcome: 'yes' as unknown as () => void }),
    ).toThrow(LockOptionsError)
  })

  it('has the shape of the lines Powertools Metrics writes, so both can share a namespace and a dashboard', async () => {
    // Written by @aws-lambda-powertools/metrics 2.36.0 (new Metrics({ namespace: 'Jobs', serviceName:
    // 'svc' }), the same two dimensions and metrics added, publishStoredMetrics()), captured once.
    const powertools = JSON.parse(
      '{"_aws":{"Timestamp":1795336299182,"CloudWatchMetrics":[{"Namespace":"Jobs","Dimensions":[["service","LockKey","FunctionName"]],"Metrics":[{"Name":"Acquired","Unit":"Count"},{"Name":"WaitMs","Unit":"Milliseconds"}]}]},"service":"svc","LockKey":"locks/report-fn","FunctionName":"report-fn","Acquired":1,"WaitMs":40}',
    ) as Emf
    const { clock, store, wrap, context, emf, metricsOptions } = metricsWorld()
    store.script('read', () => clock.sleep(40).then(() => 'ok'))
    await clock.run(wrap(async () => 'ok', metricsOptions())({}, context({ functionName: 'report-fn' })))
    const [ours] = emf
    const shape = (line: Emf) => {
      const [directive] = line._aws.CloudWatchMetrics
      return {
        top: Object.keys(line).filter((key) => key !== 'service'),
        aws: Object.keys(line._aws),
        directive: Object.keys(directive ?? {}),
        metrics: directive?.Metrics,
        values: directive?.Metrics.map((m) => typeof line[m.Name]),
      }
    }
    expect(ours && shape(ours)).toEqual(shape(powertools))
    expectValidEmf(powertools) // the validity check accepts what Powertools writes
  })

  it('counts a skip of a held lock, and measures the wait for it', async () => {
    const { clock, wrap, context, metrics, metricsOptions } = metricsWorld()
    const slow = wrap(async () => clock.sleep(5_000), metricsOptions())
    const waiting = wrap(async () => 'ran', metricsOptions({ waitMs: 1_000 }))
    const first = slow({}, context())
    await clock.advance(1_100) // past the wait for its token: it holds the lock
    await clock.run(waiting({}, context()))
    await clock.run(first)
    const skip = metrics().find((m) => 'Held' in m)
    expect(skip).toEqual({ Held: [1, 'Count'], WaitMs: [expect.any(Number), 'Milliseconds'] })
    // It waited its whole waitMs (the holder kept the lock 5 s), and not much longer.
    expect(skip?.WaitMs?.[0]).toBeGreaterThanOrEqual(1_000)
    expect(skip?.WaitMs?.[0]).toBeLessThan(1_500)
  })

  it('measures how long a run waited before it got the lock', async () => {
    const { clock, wrap, context, metrics, metricsOptions } = metricsWorld()
    const first = wrap(async () => clock.sleep(1_000), metricsOptions())({}, context())
    await clock.advance(1)
    await clock.run(wrap(async () => 'ran', metricsOptions({ waitMs: 5_000 }))({}, context()))
    await clock.run(first)
    const waits = metrics()
      .filter((m) => 'Acquired' in m)
      .map((m) => m.WaitMs?.[0] as number)
    expect(waits).toHaveLength(2)
    // The second waited for the first's second-long run to end (polling with backoff), not
    // for its whole waitMs.
    // The first waited only for the store's clock to pass its token (1 s dates here, and the
    // store's second turns as the first call is answered: the token is a whole second ahead).
    expect(waits[0]).toBeLessThan(1_002)
    expect(waits[1]).toBeGreaterThan(waits[0] ?? Number.POSITIVE_INFINITY)
    expect(waits[1]).toBeLessThan(5_000)
  })

  it('counts a duplicate tick', async () => {
    const { clock, wrap, context, metrics, metricsOptions } = metricsWorld()
    const handler = wrap(async () => 'ok', metricsOptions())
    await clock.run(handler(schedulerEvent('2026-11-21T03:00:00Z'), context()))
    await clock.run(handler(schedulerEvent('2026-11-21T03:00:00Z'), context()))
    expect(metrics()[2]).toEqual({ Duplicate: [1, 'Count'], WaitMs: [0, 'Milliseconds'] })
  })

  it('counts a lost lease', async () => {
    const { clock, store, wrap, context, record, metrics, metricsOptions } = metricsWorld()
    const handler = wrap(
      async (_e, ctx) => {
        store.memory.putRaw(KEY, JSON.stringify({ ...record(), token: record().token + 1, owner: 'thief' }))
        await new Promise((resolve) => ctx.singleton.signal.addEventListener('abort', resolve))
      },
      metricsOptions({ ttlMs: 6_000, clockSkewMarginMs: 1_000 }),
    )
    await clock.run(handler({}, context()))
    expect(metrics().filter((m) => 'Lost' in m)).toEqual([{ Lost: [1, 'Count'] }])
    expect(metrics().some((m) => 'HeldMs' in m)).toBe(false) // never released
  })

  it('does not count a lease an operator force-released as lost: the lost-lease alarm is for accidents', async () => {
    const { clock, store, wrap, context, metrics, metricsOptions } = metricsWorld()
    const operator = new LockOperator({ store: store.memory, key: KEY, operator: 'alice@ops', clock })
    const handler = wrap(
      async (_e, ctx) => {
        await operator.forceRelease()
        await new Promise((resolve) => ctx.singleton.signal.addEventListener('abort', resolve))
      },
      metricsOptions({ ttlMs: 6_000, clockSkewMarginMs: 1_000 }),
    )
    await clock.run(handler({}, context()))
    expect(metrics().some((m) => 'Lost' in m)).toBe(false)
    expect(metrics()).toHaveLength(1) // the acquisition's
  })

  it('counts a completed run, and not a run whose handler threw (both are released, both measured)', async () => {
    const { clock, wrap, context, metrics, metricsOptions } = metricsWorld()
    const handler = wrap(async (event) => {
      await clock.sleep(1_000)
      if ((event as { fail?: boolean }).fail) throw new Error('job failed')
    }, metricsOptions())
    await clock.run(handler({}, context()))
    await expect(clock.run(handler({ fail: true }, context()))).rejects.toThrow('job failed')
    expect(metrics().filter((m) => 'HeldMs' in m)).toEqual([
      { Completed: [1, 'Count'], HeldMs: [1_000, 'Milliseconds'] },
      { HeldMs: [1_000, 'Milliseconds'] },
    ])
  })

  it('counts a late tick, with no wait: the store was not asked', async () => {
    const { clock, wrap, context, metrics, metricsOptions } = metricsWorld()
    const handler = wrap(async () => 'ran', metricsOptions({ maxTickAgeMs: 60_000 }))
    const twoHoursAgo = new Date(clock.now() - 2 * 3_600_000).toISOString()
    await clock.run(handler(schedulerEvent(twoHoursAgo), context()))
    expect(metrics()).toEqual([{ Late: [1, 'Count'] }])
  })

  it('counts a failed release', async () => {
    const { clock, store, wrap, context, metrics, metricsOptions } = metricsWorld()
    store.script('replace', 'fatal')
    await clock.run(wrap(async () => 'done', metricsOptions())({}, context()))
    expect(metrics()[1]).toEqual({ ReleaseFailed: [1, 'Count'] })
  })

  it('keys by lock only where the context names no function', async () => {
    const { clock, store, emf } = metricsWorld()
    const handler = withSingleton<unknown, string, InvocationContext>(async () => 'ok', {
      store,
      clock,
      key: 'compaction',
      logger: { info() {}, warn() {}, error() {} },
      metrics: { write: (line) => emf.push(JSON.parse(line)) },
    })
    await clock.run(handler({}, {}))
    expect(emf[0]?._aws.CloudWatchMetrics[0]?.Dimensions).toEqual([['LockKey']])
    expect(emf[0]).toMatchObject({ LockKey: 'locks/compaction' })
    expect(emf[0]).not.toHaveProperty('FunctionName')
  })

  it('is off by default: nothing on standard output', async () => {
    vi.stubEnv('LAMBDA_SINGLETON_METRICS_NAMESPACE', '')
    const write = vi.spyOn(process.stdout, 'write').mockImplementation(() => true)
    const { clock, wrap, context, kinds } = world()
    await clock.run(wrap(async () => 'ok')({}, context()))
    expect(kinds()).toEqual(['acquired', 'released'])
    expect(write).not.toHaveBeenCalled()
  })

  it('is turned on by the namespace the constructs set, one line each on standard output', async () => {
    vi.stubEnv('LAMBDA_SINGLETON_METRICS_NAMESPACE', 'Billing/Jobs')
    const write = vi.spyOn(process.stdout, 'write').mockImplementation(() => true)
    const { clock, wrap, context } = world()
    await clock.run(wrap(async () => 'ok')({}, context()))
    const lines = write.mock.calls.map(([text]) => String(text))
    expect(lines).toHaveLength(2)
    expect(lines.every((line) => line.endsWith('}\n') && !line.slice(0, -1).includes('\n'))).toBe(true)
    expect(lines.map((line) => JSON.parse(line)._aws.CloudWatchMetrics[0].Namespace)).toEqual([
      'Billing/Jobs',
      'Billing/Jobs',
    ])
  })

  it('takes any namespace CloudWatch takes, up to 255 characters', () => {
    for (const namespace of ['Jobs', 'acme/billing-jobs_v2.1', 'Team #3: jobs', 'x'.repeat(255)]) {
      expect(() => withSingleton(async () => 'ok', { metrics: { namespace } })).not.toThrow()
    }
  })

  it('is turned on by a namespace given in code, writing to standard output', async () => {
    vi.stubEnv('LAMBDA_SINGLETON_METRICS_NAMESPACE', '')
    const write = vi.spyOn(process.stdout, 'write').mockImplementation(() => true)
    const { clock, wrap, context } = world()
    await clock.run(wrap(async () => 'ok', { metrics: { namespace: 'Reports' } })({}, context()))
    const namespaces = write.mock.calls.map(
      ([text]) => JSON.parse(String(text))._aws.CloudWatchMetrics[0].Namespace,
    )
    expect(namespaces).toEqual(['Reports', 'Reports'])
  })

  it('writes nothing for an outcome that has no metric (a lock that could not be used)', async () => {
    const { clock, store, wrap, context, emf, kinds, metricsOptions } = metricsWorld()
    store.script('read', 'fatal')
    await expect(clock.run(wrap(async () => 'ok', metricsOptions())({}, context()))).rejects.toThrow()
    expect(kinds()).toEqual(['error'])
    expect(emf).toEqual([])
  })

  it('stays off with metrics: false, whatever the environment says', async () => {
    vi.stubEnv('LAMBDA_SINGLETON_METRICS_NAMESPACE', 'Billing/Jobs')
    const write = vi.spyOn(process.stdout, 'write').mockImplementation(() => true)
    const { clock, wrap, context } = world()
    await clock.run(wrap(async () => 'ok', { metrics: false })({}, context()))
    expect(write).not.toHaveBeenCalled()
  })

  it("shares Powertools' namespace when only POWERTOOLS_METRICS_NAMESPACE names one, else LambdaSingleton", async () => {
    const namespaces: string[] = []
    const run = async () => {
      const { clock, wrap, context } = world()
      const write = (line: string) => namespaces.push(JSON.parse(line)._aws.CloudWatchMetrics[0].Namespace)
      await clock.run(wrap(async () => 'ok', { metrics: { write } })({}, context()))
    }
    vi.stubEnv('LAMBDA_SINGLETON_METRICS_NAMESPACE', '')
    vi.stubEnv('POWERTOOLS_METRICS_NAMESPACE', 'orders')
    await run()
    vi.stubEnv('POWERTOOLS_METRICS_NAMESPACE', '')
    await run()
    expect(namespaces).toEqual(['orders', 'orders', 'LambdaSingleton', 'LambdaSingleton'])
  })

  it.each([
    [{ namespace: '' }, /metrics.namespace/],
    [{ namespace: 'AWS/Lambda' }, /metrics.namespace/],
    [{ namespace: 'jobs{1}' }, /metrics.namespace/],
    [{ namespace: 42 }, /metrics.namespace/],
    [{ namespace: '{jobs' }, /metrics.namespace/],
    [{ namespace: 'x'.repeat(256) }, /metrics.namespace/],
    [{ write: 'stdout' }, /metrics.write/],
    ['yes', /metrics must be/],
    [null, /metrics must be/],
  ])('refuses metrics %j when the handler is made', (metrics, message) => {
    const error = (() => {
      try {
        withSingleton(async () => 'ok', { metrics: metrics as SingletonOptions['metrics'] })
      } catch (e) {
        return e
      }
    })()
    expect(error).toBeInstanceOf(LockOptionsError)
    expect((error as Error).message).toMatch(message)
  })
})
