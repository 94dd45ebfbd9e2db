/**
 * The soak's timeline as an SVG picture: per lock key, who held it when (a bar per lease, in its
 * worker's colour, over its true-time validity) and its tokens over time (a step line); below,
 * the faults: crashes, pauses, radosgw restarts (grey bands across the picture), `Date`-less
 * bursts and the proxy's per-request faults. Fenced writes refused to zombies are red ticks,
 * zombie writes that landed (before any newer holder wrote) orange ones. Hover for details.
 */
import type { FaultEvent, SoakEvent } from './events.js'
import { buildHistory, type LeaseSpan } from './history.js'

const LEFT = 110
const LANE = 64
const ROW = 12
const PROXY_KINDS = [
  'reset',
  'slowdown',
  'internal',
  'delay',
  'no-date',
  'lose-response',
  'cut-body',
] as const
const FAULT_COLOURS: Record<string, string> = {
  kill: '#d62728',
  pause: '#ff7f0e',
  reset: '#8c564b',
  slowdown: '#e377c2',
  internal: '#7f7f7f',
  delay: '#bcbd22',
  'no-date': '#17becf',
  'lose-response': '#9467bd',
  'cut-body': '#2ca02c',
}

const xml = (text: string): string =>
  text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;')

/** A worker slot's colour (`w3.1` and `w3.2` are slot 3): one hue per slot. */
function colourOf(w: string): string {
  const slot = Number(/^w(\d+)/.exec(w)?.[1] ?? 0)
  return `hsl(${(slot * 137) % 360} 65% 55%)`
}

export function drawTimeline(events: readonly SoakEvent[]): string {
  const sorted = [...events].sort((a, b) => a.t - b.t)
  const history = buildHistory(sorted)
  const seconds = Math.max(1, (history.runEnd - history.runStart) / 1000)
  const pxPerSecond = Math.min(40, Math.max(12, 1_600 / seconds))
  const x = (t: number): number => LEFT + ((t - history.runStart) / 1000) * pxPerSecond
  const width = Math.ceil(x(history.runEnd)) + 20
  const keys = [...new Set(history.leases.map((lease) => lease.key))].sort()
  const faultTop = 30 + keys.length * LANE
  const height = faultTop + (3 + PROXY_KINDS.length) * ROW + 70
  const faults = sorted.filter((e): e is FaultEvent => e.type === 'fault')
  const parts: string[] = [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" font-family="sans-serif" font-size="11">`,
    `<rect width="${width}" height="${height}" fill="white"/>`,
    ...restartBands(faults, x, height),
    ...axis(history.runStart, seconds, x, height),
    ...keys.flatMap((key, i) => lane(key, 30 + i * LANE, history.leases, x)),
    ...writeTicks(sorted, history, keys, x),
    ...faultRows(faults, faultTop, x),
    legend(height - 22),
    '</svg>',
  ]
  return `${parts.join('\n')}\n`
}

function restartBands(faults: readonly FaultEvent[], x: (t: number) => number, height: number): string[] {
  const bands: string[] = []
  for (const [i, fault] of faults.entries()) {
    if (fault.kind !== 'rgw-restart') continue
    const up = faults.slice(i).find((f) => f.kind === 'rgw-up')?.t ?? fault.t + 3_000
    bands.push(
      `<rect x="${x(fault.t).toFixed(1)}" y="20" width="${Math.max(2, x(up) - x(fault.t)).toFixed(1)}" height="${height - 60}" fill="#000" opacity="0.12"><title>radosgw restart, ${((up - fault.t) / 1000).toFixed(1)} s</title></rect>`,
    )
  }
  return bands
}

function axis(start: number, seconds: number, x: (t: number) => number, height: number): string[] {
  const step = seconds > 300 ? 30 : 10
  const marks: string[] = []
  for (let s = 0; s <= seconds; s += step) {
    const at = x(start + s * 1000).toFixed(1)
    marks.push(`<line x1="${at}" y1="20" x2="${at}" y2="${height - 40}" stroke="#ddd"/>`)
    marks.push(`<text x="${at}" y="14" text-anchor="middle">${s} s</text>`)
  }
  return marks
}

function lane(key: string, top: number, leases: readonly LeaseSpan[], x: (t: number) => number): string[] {
  const own = leases.filter((lease) => lease.key === key).sort((a, b) => a.start - b.start)
  const tokens = own.map((lease) => lease.token)
  const low = Math.min(...tokens)
  const high = Math.max(...tokens)
  const y = (token: number): number => top + 56 - ((token - low) / Math.max(1, high - low)) * 22
  const out = [
    `<text x="4" y="${top + 16}" font-weight="bold">${xml(key)}</text>`,
    `<text x="4" y="${top + 32}" fill="#555">tokens ${low}</text>`,
    `<text x="4" y="${top + 44}" fill="#555">… ${high}</text>`,
    `<line x1="${LEFT}" y1="${top + LANE - 2}" x2="100%" y2="${top + LANE - 2}" stroke="#eee"/>`,
  ]
  for (const lease of own) {
    const width = Math.max(0.5, x(lease.end) - x(lease.start))
    out.push(
      `<rect x="${x(lease.start).toFixed(1)}" y="${top + 4}" width="${width.toFixed(1)}" height="24" fill="${colourOf(lease.w)}"><title>${xml(`${lease.id} token ${lease.token}, valid ${((lease.end - lease.start) / 1000).toFixed(2)} s`)}</title></rect>`,
    )
  }
  // A step line: each token holds until the next acquisition.
  const steps = own.flatMap((lease, i) => {
    const at = x(lease.start).toFixed(1)
    const before = own[i - 1]
    return [...(before ? [`${at},${y(before.token).toFixed(1)}`] : []), `${at},${y(lease.token).toFixed(1)}`]
  })
  if (steps.length > 0)
    out.push(`<polyline points="${steps.join(' ')}" fill="none" stroke="#333" stroke-width="1"/>`)
  return out
}

/** Red: a zombie's write refused by the fence. Orange: a zombie's write that landed. */
function writeTicks(
  events: readonly SoakEvent[],
  history: ReturnType<typeof buildHistory>,
  keys: readonly string[],
  x: (t: number) => number,
): string[] {
  const started = new Map(history.writes.map(({ start }) => [start.id, start.t]))
  const ticks: string[] = []
  for (const event of events) {
    if (event.type !== 'write' || event.phase !== 'end' || event.outcome === 'error') continue
    const lease = history.leaseById.get(event.lease)
    const start = started.get(event.id) ?? event.t
    if (!lease || start < lease.end) continue
    const top = 30 + keys.indexOf(event.key) * LANE
    const colour = event.outcome === 'rejected' ? '#d62728' : '#ff7f0e'
    ticks.push(
      `<line x1="${x(event.t).toFixed(1)}" y1="${top + 2}" x2="${x(event.t).toFixed(1)}" y2="${top + 30}" stroke="${colour}" stroke-width="1.5"><title>${xml(`${event.id}: zombie write with token ${event.token} ${event.outcome}${event.currentToken ? ` (object at ${event.currentToken})` : ''}`)}</title></line>`,
    )
  }
  return ticks
}

function faultRows(faults: readonly FaultEvent[], top: number, x: (t: number) => number): string[] {
  const rows = ['kill', 'pause', ...PROXY_KINDS]
  const out = rows.map(
    (kind, i) =>
      `<text x="4" y="${top + i * ROW + 10}" fill="${FAULT_COLOURS[kind] ?? '#000'}">${kind}</text>`,
  )
  for (const [i, fault] of faults.entries()) {
    const row = rows.indexOf(fault.kind)
    if (row < 0) continue
    const y = top + row * ROW
    let end = fault.t
    if (fault.kind === 'pause')
      end = faults.slice(i).find((f) => f.kind === 'resume' && f.target === fault.target)?.t ?? fault.t
    // A burst of Date-less answers is a band; single faults are ticks.
    if (fault.kind === 'no-date' && fault.target?.startsWith('all'))
      end = fault.t + Number(/\d+/.exec(fault.target)?.[0] ?? 0)
    const width = Math.max(1.5, x(end) - x(fault.t))
    out.push(
      `<rect x="${x(fault.t).toFixed(1)}" y="${y + 1}" width="${width.toFixed(1)}" height="${ROW - 2}" fill="${FAULT_COLOURS[fault.kind] ?? '#000'}"><title>${xml(`${fault.kind} ${fault.target ?? ''}`)}</title></rect>`,
    )
  }
  return out
}

function legend(y: number): string {
  return `<text x="4" y="${y}">Bars: leases, from acquire's return to the earliest of release, local deadline, crash (true time; colour = worker). Line: token. Ticks: zombie writes refused (red) or landed before any newer write (orange). Grey bands: radosgw restarts.</text>`
}
