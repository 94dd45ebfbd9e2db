/**
 * `lambda-singleton exec` on the command line: hands the parsed line to the exec adapter
 * (lib/exec/adapter.ts) with the real world and the process's signals.
 */
import { exec as execAdapter, realWorld } from '../exec/adapter.js'
import { ProcessSignals } from '../exec/process-signals.js'
import type { CommandContext } from './commands.js'
import type { ExitCode } from './exit-codes.js'

export async function exec(context: CommandContext<'exec'>): Promise<ExitCode> {
  const { line } = context
  const given = {
    settings: line.exec,
    key: line.key,
    store: context.opened.store,
    operator: context.operator,
    err: context.err,
    signal: context.signal,
  }
  return execAdapter(given, realWorld(context.signals ?? new ProcessSignals()))
}
