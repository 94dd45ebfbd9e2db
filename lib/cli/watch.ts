import { setTimeout as sleep } from 'node:timers/promises'
import type { CommandContext } from './commands.js'
import { ExitCode, exitCodeFor } from './exit-codes.js'
import { type LockView, lockTable, type UnreadableView } from './format.js'

/** Clears a terminal and puts the cursor top left, so each frame replaces the last. */
const CLEAR_SCREEN = '\x1b[H\x1b[2J'

/**
 * Shows the locks again every interval until the context's signal ends it (Ctrl-C), then
 * resolves `Ok`. A failure of the first read ends it, as `list` would; a later failed refresh is
 * reported and the next one tried, since a live view should outlast a passing outage.
 */
export async function watch(
  context: CommandContext<'watch'>,
  read: () => Promise<(LockView | UnreadableView)[]>,
): Promise<ExitCode> {
  const { line, signal } = context
  for (let frame = 0; !signal?.aborted; frame++) {
    try {
      show(context, await read())
    } catch (error) {
      if (signal?.aborted) break
      if (frame === 0 || exitCodeFor(error) === ExitCode.Configuration) throw error
      const name = error instanceof Error ? error.name : 'Error'
      context.err(
        `refresh failed, trying again in ${line.intervalMs / 1000}s: ${name}: ${(error as Error).message}`,
      )
    }
    try {
      await sleep(line.intervalMs, undefined, signal ? { signal } : {})
    } catch {
      break
    }
  }
  return ExitCode.Ok
}

function show(context: CommandContext<'watch'>, locks: (LockView | UnreadableView)[]): void {
  const { line, opened } = context
  const serverNow = opened.store.serverNow()
  const at = serverNow === undefined ? undefined : new Date(serverNow).toISOString()
  if (line.json) {
    context.out(JSON.stringify({ at, prefix: line.prefix, locks }))
    return
  }
  const clock = at === undefined ? '' : `, ${at.slice(11, 19)}Z by the store's clock`
  const header =
    `${opened.where(line.prefix)}*: ${locks.length} lock${locks.length === 1 ? '' : 's'}${clock}; ` +
    `every ${line.intervalMs / 1000}s, Ctrl-C to stop`
  const body = locks.length === 0 ? [] : lockTable(locks)
  context.out([`${context.redraw ? CLEAR_SCREEN : ''}${header}`, ...body, ''].join('\n'))
}
