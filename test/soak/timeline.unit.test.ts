import { describe, expect, it } from 'vitest'
import { drawTimeline } from '../../scripts/soak/timeline.js'
import { Log } from './log.js'

describe('the soak timeline', () => {
  it('draws a lane per key with a bar per lease, the tokens, zombie writes and the faults', () => {
    const log = new Log()
    const zombie = log.acquire('w0.0', 'k0', 11, 100, 1_000)
    const next = log.acquire('w1.0', 'k0', 12, 2_000, 3_000)
    log.acquire('w2.0', 'k1', 5, 500, 1_500)
    log.write('w1.0', next, 'data/k0/0', 12, 2_010, 2_100)
    log.write('w0.0', zombie, 'data/k0/0', 11, 2_500, 2_600, 'rejected', { currentToken: 12 })
    log.fault('kill', 'w2.0', 1_200)
    log.fault('pause', 'w0.0', 300)
    log.fault('resume', 'w0.0', 2_400)
    const svg = drawTimeline(log.end(4_000))

    expect(svg).toMatch(/^<svg xmlns="http:\/\/www.w3.org\/2000\/svg"/)
    expect(svg).toContain('>k0</text>')
    expect(svg).toContain('>k1</text>')
    expect(svg.match(/<rect[^>]*><title>w\d\.0\/\d+ token/g)).toHaveLength(3)
    expect(svg).toContain('zombie write with token 11 rejected (object at 12)')
    expect(svg).toContain('<title>kill w2.0</title>')
    expect(svg).toContain('<title>pause w0.0</title>')
    expect(svg.trim().endsWith('</svg>')).toBe(true)
  })

  it('escapes what it writes into the picture', () => {
    const log = new Log()
    log.acquire('w0.0', 'k<&>', 1, 100, 1_000)
    expect(drawTimeline(log.end(2_000))).toContain('>k&lt;&amp;&gt;</text>')
  })
})
