// The CLI's signal source for exec: the process's own signals, which main.ts then leaves alone.
// One object per process, made by main.ts: no module holds the count.
import { describe, expect, it } from 'vitest'
import { ProcessSignals } from '../../lib/exec/process-signals.js'

const FORWARDED = ['SIGINT', 'SIGTERM', 'SIGHUP'] as const

describe("exec's process signals", () => {
  it('tells main.ts to leave SIGINT, SIGTERM and SIGHUP alone while a command is supervised, and only then', () => {
    const before = FORWARDED.map((signal) => process.listenerCount(signal))
    const processSignals = new ProcessSignals()
    expect(processSignals.forwarding).toBe(false)
    const unsubscribe = processSignals.subscribe(() => {})
    expect(processSignals.forwarding).toBe(true)
    expect(FORWARDED.map((signal) => process.listenerCount(signal))).toEqual(before.map((count) => count + 1))
    unsubscribe()
    expect(processSignals.forwarding).toBe(false)
    expect(FORWARDED.map((signal) => process.listenerCount(signal))).toEqual(before)
  })

  it('keeps its count to itself: another ProcessSignals (another CLI run in the process) is not forwarding', () => {
    const supervising = new ProcessSignals()
    const other = new ProcessSignals()
    const unsubscribe = supervising.subscribe(() => {})
    try {
      expect(supervising.forwarding).toBe(true)
      expect(other.forwarding).toBe(false)
    } finally {
      unsubscribe()
    }
  })

  it('passes each signal on by its name', () => {
    const received: NodeJS.Signals[] = []
    const unsubscribe = new ProcessSignals().subscribe((signal) => received.push(signal))
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
