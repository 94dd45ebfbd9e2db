import { DEFAULT_KEY_PREFIX } from '../config.js'
import { LockCorruptedError, LockOptionsError } from '../core/errors.js'
import type { LockInfo } from '../core/lock-options.js'
import type { PauseRecord } from '../core/record.js'
import type { ProcessSignals } from '../exec/process-signals.js'
import { LockOperator } from '../operator/lock-operator.js'
import { pauseView } from '../schedule/pause.js'
import type { CommandLineOf } from './args.js'
import type { CommandName } from './commands-spec.js'
import { exec } from './exec.js'
import { ExitCode, LockNotFoundError, NotHeldError } from './exit-codes.js'
import {
  duration,
  historyTable,
  type LockView,
  lockLines,
  lockTable,
  runViewsOf,
  type UnreadableView,
  viewOf,
} from './format.js'
import { printable } from './printable.js'
import type { OpenStore } from './store.js'
import { watch } from './watch.js'

/** What a command runs with: its own line, with only the options it takes. */
export interface CommandContext<C extends CommandName = CommandName> {
  readonly line: CommandLineOf<C>
  readonly opened: OpenStore
  /** Who runs it, for the records it writes. */
  readonly operator: string
  readonly out: (text: string) => void
  readonly err: (text: string) => void
  /** Ends `watch`; abandons reads in progress. */
  readonly signal?: AbortSignal | undefined
  /** `watch` redraws in place (a terminal) rather than printing frame after frame. */
  readonly redraw: boolean
  /** The process's signals, which `exec` passes on to its command. @default the process's own */
  readonly signals?: ProcessSignals | undefined
}

/** Reads in flight at once while listing. */
const LIST_CONCURRENCY = 8

export const RUNNERS: { readonly [C in CommandName]: (context: CommandContext<C>) => Promise<ExitCode> } = {
  inspect,
  history,
  list,
  watch: (context) => watch(context, () => readLocks(context)),
  'force-release': forceRelease,
  pause,
  resume,
  reset,
  exec,
}

function operatorAt(context: CommandContext, key: string): LockOperator {
  return new LockOperator({ store: context.opened.store, key, operator: context.operator })
}

/** The lock at the command's key, or `LockNotFoundError`. */
async function inspected(
  context: CommandContext<'inspect' | 'history' | 'force-release'>,
): Promise<{ info: LockInfo; view: LockView }> {
  const { key } = context.line
  const info = await operatorAt(context, key).inspect({ ...(context.signal && { signal: context.signal }) })
  if (!info) {
    try {
      return await context.opened.notFound(key)
    } catch (error) {
      throw withKeyHint(error, key)
    }
  }
  return { info, view: viewOf(key, info, context.opened.store.serverNow()) }
}

/**
 * A missing key without the prefix the handlers put before the function name is most likely
 * that name typed alone: say which key to try. Said without looking, so it costs no read.
 */
function withKeyHint(error: unknown, key: string): unknown {
  if (!(error instanceof LockNotFoundError) || key.startsWith(DEFAULT_KEY_PREFIX)) return error
  return new LockNotFoundError(
    `${error.message}; the handlers lock ${DEFAULT_KEY_PREFIX}<function name> by default: ` +
      `try --key ${DEFAULT_KEY_PREFIX}${key}`,
    key,
  )
}

async function inspect(context: CommandContext<'inspect'>): Promise<ExitCode> {
  const { info, view } = await inspected(context)
  if (context.line.json)
    context.out(JSON.stringify({ ...view, etag: info.etag, record: info.record }, null, 2))
  else context.out(lockLines(view, info.record, info.etag).join('\n'))
  return ExitCode.Ok
}

async function history(context: CommandContext<'history'>): Promise<ExitCode> {
  const { info, view } = await inspected(context)
  const runs = runViewsOf(info.record)
  if (context.line.json) context.out(JSON.stringify({ key: view.key, runs }, null, 2))
  else context.out(historyTable(view.key, runs).join('\n'))
  return ExitCode.Ok
}

async function forceRelease(context: CommandContext<'force-release'>): Promise<ExitCode> {
  const { line, opened } = context
  const { key } = line
  const { info, view } = await inspected(context)
  if (!info.held && !line.force) {
    const state = view.released ? 'released' : `expired ${duration(-(view.expiresInMs ?? 0))} ago`
    throw new NotHeldError(
      `${opened.where(key)} is not held (${state}, token ${info.token}, last holder ${printable(info.owner)}); ` +
        'nothing changed. Add --force to raise its token anyway',
    )
  }
  // Only the lease judged above ends: a run that took the lock since keeps its lease. A held one
  // may renew in between (a stuck run that keeps renewing is what this is for); a free one, only
  // as it was shown.
  const judged = info.held ? { lease: info } : { etag: info.etag }
  const record = await operatorAt(context, key).forceRelease(judged)
  if (!record) return opened.notFound(key)
  if (line.json) {
    context.out(JSON.stringify({ key, released: true, previousOwner: info.owner, record }, null, 2))
  } else {
    context.out(
      `released ${opened.where(key)}: token ${info.token} -> ${record.token}; ` +
        `${info.held ? 'the holder' : 'the last holder'} ${printable(info.owner)} is fenced off`,
    )
  }
  return ExitCode.Ok
}

async function pause(context: CommandContext<'pause'>): Promise<ExitCode> {
  const { line, opened } = context
  const { key } = line
  const result = await operatorAt(context, key).pause({
    ...(line.note !== undefined && { note: line.note }),
    now: line.now,
  })
  if (!result) return notFound(context, key)
  const { record, previous, wasHeld, endedLease, after } = result
  if (line.json) {
    context.out(
      JSON.stringify(
        {
          key,
          paused: true,
          wasHeld,
          endedLease,
          previousOwner: previous.owner,
          ...(previous.paused && { replaced: previous.paused }),
          record,
          ...(after && { after }),
        },
        null,
        2,
      ),
    )
    return ExitCode.Ok
  }
  const why = line.note === undefined ? '' : ` ("${line.note}")`
  const effect = endedLease
    ? `the lease of ${printable(previous.owner)} is over: token ${previous.token} -> ${record.token}, its fenced writes are refused`
    : wasHeld
      ? `${printable(previous.owner)} holds it and finishes its run; runs skip from the next one`
      : 'runs skip from the next one'
  context.out(`paused ${opened.where(key)}${why}: ${effect}`)
  // The answer was lost and a read settled it: the pause landed, and someone wrote after it.
  if (after)
    context.err(`note: written, then ${printable(after.owner)} wrote the lock (token ${after.token})`)
  if (previous.paused) context.err(`note: it was already paused by ${pauseText(previous.paused)}; replaced`)
  return ExitCode.Ok
}

async function resume(context: CommandContext<'resume'>): Promise<ExitCode> {
  const { line, opened } = context
  const { key } = line
  const result = await operatorAt(context, key).resume()
  if (!result) return notFound(context, key)
  const { record, lifted } = result
  if (line.json) {
    context.out(
      JSON.stringify({ key, resumed: lifted !== undefined, ...(lifted && { lifted }), record }, null, 2),
    )
  } else if (lifted) {
    context.out(`resumed ${opened.where(key)}: it was paused by ${pauseText(lifted)}; the next run runs`)
  } else {
    context.out(`${opened.where(key)} is not paused; nothing changed`)
  }
  return ExitCode.Ok
}

/** Who paused, when and why, in a line. */
function pauseText(paused: PauseRecord): string {
  const { by, at, note } = pauseView(paused)
  return printable(`${by} at ${at}${note === undefined ? '' : ` ("${note}")`}`)
}

async function notFound(context: CommandContext, key: string): Promise<never> {
  try {
    return await context.opened.notFound(key)
  } catch (error) {
    throw withKeyHint(error, key)
  }
}

async function reset(context: CommandContext<'reset'>): Promise<ExitCode> {
  const { line, opened } = context
  const { key } = line
  const operator = operatorAt(context, key)
  if (line.backToClock) {
    const record = await operator.reset({ backToClock: true, force: line.force })
    if (line.json) context.out(JSON.stringify({ key, backToClock: true, record }, null, 2))
    else {
      context.out(`reset ${opened.where(key)}: released, token ${record.token}, back to the store's clock`)
      context.err(
        `note: objects that fencedPut wrote with a token above ${record.token} refuse every new ` +
          "holder's write until they are removed or rewritten",
      )
    }
    return ExitCode.Ok
  }
  const record = await operator.reset({ token: line.token ?? Number.NaN, force: line.force })
  if (line.json) context.out(JSON.stringify({ key, record }, null, 2))
  else context.out(`reset ${opened.where(key)}: released, token ${record.token}`)
  return ExitCode.Ok
}

async function list(context: CommandContext<'list'>): Promise<ExitCode> {
  const { line, opened } = context
  const locks = await readLocks(context)
  if (line.json) context.out(JSON.stringify({ prefix: line.prefix, locks }, null, 2))
  else if (locks.length === 0) context.out(`no locks under ${opened.where(line.prefix)}`)
  else context.out(lockTable(locks).join('\n'))
  return ExitCode.Ok
}

/** Every lock under the command's prefix, read a few at a time, in key order. */
export async function readLocks(
  context: CommandContext<'list' | 'watch'>,
): Promise<(LockView | UnreadableView)[]> {
  const { opened, signal } = context
  const keys = await opened.store.listKeys(context.line.prefix, { ...(signal && { signal }) })
  const locks: (LockView | UnreadableView | undefined)[] = new Array(keys.length)
  let next = 0
  const worker = async () => {
    for (let i = next++; i < keys.length; i = next++) locks[i] = await readOne(context, keys[i] ?? '')
  }
  await Promise.all(Array.from({ length: Math.min(LIST_CONCURRENCY, keys.length) }, worker))
  return locks.filter((lock) => lock !== undefined)
}

/** One listed lock; `undefined` when it is gone since it was listed. */
async function readOne(context: CommandContext, key: string): Promise<LockView | UnreadableView | undefined> {
  try {
    const { store } = context.opened
    const info = await operatorAt(context, key).inspect({ ...(context.signal && { signal: context.signal }) })
    if (info) return viewOf(key, info, store.serverNow())
    // Listed, so there: S3's 403 for a missing key means this one may not be read.
    if (store.absenceUnconfirmed(key))
      return { key, error: { name: 'AccessDenied', message: 'listed, but S3 answered 403 to reading it' } }
    return undefined
  } catch (error) {
    // A key no lock can have (a DynamoDB key over 1024 bytes) is listed, not fatal to the list.
    if (!(error instanceof LockCorruptedError || error instanceof LockOptionsError)) throw error
    return { key, error: { name: error.name, message: error.message } }
  }
}
