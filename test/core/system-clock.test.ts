import { getEventListeners } from 'node:events'
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest'
import { systemClock } from '../../lib/extend.js'

describe('systemClock', () => {
  it('reads epoch milliseconds, and never steps back', () => {
    const readings = Array.from({ length: 1_000 }, () => systemClock.now())
    expect(Math.abs((readings[0] ?? 0) - Date.now())).toBeLessThan(1_000)
    expect(readings.every((reading, i) => i === 0 || reading >= (readings[i - 1] ?? 0))).toBe(true)
  })

  it('schedules timers that do not keep the process alive', () => {
    const setTimeout = vi.spyOn(globalThis, 'setTimeout')
    const cancel = systemClock.schedule(60_000, () => undefined)
    try {
      expect(setTimeout.mock.results[0]?.value.hasRef()).toBe(false)
    } finally {
      cancel()
      setTimeout.mockRestore()
    }
  })

  describe('on fake timers', () => {
    beforeEach(() => {
      vi.useFakeTimers()
    })
    afterEach(() => {
      vi.useRealTimers()
    })

    it('sleeps for the time asked, and leaves no listener on the signal', async () => {
      const { signal } = new AbortController()
      let woke = false
      const sleeping = systemClock.sleep(100, signal).then(() => {
        woke = true
      })
      await vi.advanceTimersByTimeAsync(99)
      expect(woke).toBe(false)
      await vi.advanceTimersByTimeAsync(1)
      await sleeping
      expect(woke).toBe(true)
      expect(getEventListeners(signal, 'abort')).toHaveLength(0)
      const plain = systemClock.sleep(10) // with no signal at all
      await vi.advanceTimersByTimeAsync(10)
      await expect(plain).resolves.toBeUndefined()
    })

    it('rejects at once with the reason when the signal was already aborted', async () => {
      const controller = new AbortController()
      controller.abort(new Error('gone'))
      await expect(systemClock.sleep(100, controller.signal)).rejects.toThrow('gone')
      expect(vi.getTimerCount()).toBe(0)
    })

    it('rejects with the reason when aborted while sleeping, and clears its timer and its listener', async () => {
      const controller = new AbortController()
      const sleeping = systemClock.sleep(100, controller.signal)
      controller.abort(new Error('stop'))
      await expect(sleeping).rejects.toThrow('stop')
      expect(vi.getTimerCount()).toBe(0)
      expect(getEventListeners(controller.signal, 'abort')).toHaveLength(0)
    })

    it('calls back after the time asked, not before, unless cancelled', async () => {
      const calls: string[] = []
      systemClock.schedule(100, () => calls.push('kept'))
      const cancel = systemClock.schedule(100, () => calls.push('cancelled'))
      await vi.advanceTimersByTimeAsync(99)
      expect(calls).toEqual([])
      cancel()
      await vi.advanceTimersByTimeAsync(1)
      expect(calls).toEqual(['kept'])
    })
  })
})
