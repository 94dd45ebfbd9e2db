// The CLI's signal source for exec: the process's own signals, which main.ts then leaves alone.
import { describe, expect, it } from 'vitest'
import { forwardsSignals, processSignals } from '../../lib/cli/exec.js'

const FORWARDED = ['SIGINT', 'SIGTERM', 'SIGHUP'] as const

describe("exec's process signals", () => {
  it('tells main.ts to leave SIGINT, SIGTERM and SIGHUP alone while a command is supervised, and only then', () => {
    const before = FORWARDED.map((signal) => process.listenerCount(signal))
    expect(forwardsSignals()).toBe(false)
    const unsubscribe = processSignals.subscribe(() => {})
    expect(forwardsSignals()).toBe(true)
    expect(FORWARDED.map((signal) => process.listenerCount(signal))).toEqual(before.map((count) => count + 1))
    unsubscribe()
    expect(forwardsSignals()).toBe(false)
    expect(FORWARDED.map((signal) => process.listenerCount(signal))).toEqual(before)
  })

  it('passes each signal on by its name', () => {
    const received: NodeJS.Signals[] = []
    const unsubscribe = processSignals.subscribe((signal) => received.push(signal))
    try {
      // The listener exec added, called as the process would: the real signal would end the test worker.
      const added = process.listeners('SIGHUP').at(-1) as (signal: NodeJS.Signals, code: number) => void
      added('SIGHUP', 1)
    } finally {
      unsubscribe()
    }
    expect(received).toEqual(['SIGHUP'])
  })
})
