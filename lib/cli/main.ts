#!/usr/bin/env node
import { realpathSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { LockConfigurationError, LockCorruptedError } from '../core/errors.js'
import { FORWARDED_SIGNALS, ProcessSignals } from '../exec/process-signals.js'
import { LogField } from '../log-contract.js'
import { type CommandLine, parseCommandLine } from './args.js'
import { type CommandContext, RUNNERS } from './commands.js'
import { ConfigurationError, ExitCode, exitCodeFor, refusedCredentials, UsageError } from './exit-codes.js'
import { commandHelp, programHelp, usageLine } from './help.js'
import { defaultOperator, packageVersion } from './identity.js'
/**
 * The operator CLI: look at locks, watch them, free a stuck one, repair a corrupted one.
 * `lambda-singleton help` says how; commands-spec.ts is what it accepts, exit-codes.ts what it
 * answers. Credentials and region come from the usual AWS environment.
 */
import { printableJson, printableText } from './printable.js'
import { type OpenStore, openStore, type StoreClients } from './store.js'

export { ExitCode } from './exit-codes.js'

export interface CliIo extends StoreClients {
  readonly out: (text: string) => void
  readonly err: (text: string) => void
  readonly env?: NodeJS.ProcessEnv
  /** Ctrl-C: ends `watch` (exit 0), abandons reads in progress (exit 130). */
  readonly signal?: AbortSignal
  /** `watch` redraws a terminal in place instead of printing frame after frame. */
  readonly redraw?: boolean
  /** The process's signals, for `exec` to pass on to its command. @default the process's own */
  readonly signals?: ProcessSignals
}

/** Runs one CLI command; resolves the process exit code. */
export async function runCli(argv: readonly string[], io: CliIo): Promise<ExitCode> {
  let parsed: ReturnType<typeof parseCommandLine>
  try {
    parsed = parseCommandLine(argv)
  } catch (error) {
    if (!(error instanceof UsageError)) throw error
    io.err(`lambda-singleton: ${error.message}\n${usageLine(error.command)}`)
    return ExitCode.Usage
  }
  if (parsed.kind === 'help') {
    io.out(parsed.command === undefined ? programHelp() : commandHelp(parsed.command))
    return ExitCode.Ok
  }
  if (parsed.kind === 'version') {
    io.out(packageVersion())
    return ExitCode.Ok
  }
  return run(parsed, io)
}

async function run(line: CommandLine, io: CliIo): Promise<ExitCode> {
  let opened: OpenStore | undefined
  try {
    opened = await openStore(line.target, io, io.env)
    const shown = shownIo(line, io)
    return await runCommand({
      line,
      opened,
      operator: ('owner' in line ? line.owner : undefined) ?? defaultOperator(io.env),
      out: shown.out,
      err: shown.err,
      signal: io.signal,
      redraw: io.redraw ?? false,
      signals: io.signals,
    })
  } catch (error) {
    return report(error, line, reportIo(line, io))
  } finally {
    opened?.close()
  }
}

/**
 * The command's runner, given its own context. TypeScript cannot tie `RUNNERS[line.command]` to
 * the line's own type (a correlated union), so the one cast is here: `line.command` picks both.
 */
function runCommand(context: CommandContext): Promise<ExitCode> {
  const runner = RUNNERS[context.line.command] as (context: CommandContext) => Promise<ExitCode>
  return runner(context)
}

/**
 * What the command prints, safe for a terminal whatever strings the records hold (printable.ts):
 * JSON (`--json`, and exec's log lines) exact once parsed; `watch` escapes its values itself, as
 * its frames start with the sequence that clears the screen.
 */
function shownIo(line: CommandLine, io: CliIo): Pick<CliIo, 'out' | 'err'> {
  if (line.json || line.command === 'exec') {
    return { out: (text) => io.out(printableJson(text)), err: (text) => io.err(printableJson(text)) }
  }
  if (line.command === 'watch') return { out: io.out, err: (text) => io.err(printableText(text)) }
  return { out: (text) => io.out(printableText(text)), err: (text) => io.err(printableText(text)) }
}

/**
 * Where `report` prints: JSON with `--json`, else text, escaped as text whatever the command. Not
 * exec's `shownIo`: that is for its JSON lines, and leaves controls below DEL raw, which JSON
 * escapes itself, but a report's text (a corrupted object's bytes) does not.
 */
function reportIo(line: CommandLine, io: CliIo): Pick<CliIo, 'out' | 'err'> {
  const show = line.json ? printableJson : printableText
  return { out: (text) => io.out(show(text)), err: (text) => io.err(show(text)) }
}

/** Prints what ended the command, as text or (with --json) as one JSON object on stderr. */
function report(error: unknown, line: CommandLine, io: CliIo): ExitCode {
  const code = io.signal?.aborted ? ExitCode.Interrupted : exitCodeFor(error)
  if (code === undefined || !(error instanceof Error)) throw error
  // Refused credentials arrive as the service's answer to a request, but are configuration. The
  // library's `LockConfigurationError` names the problem itself; a listing's error does not.
  const configuration = error instanceof ConfigurationError || error instanceof LockConfigurationError
  const refused = configuration ? undefined : refusedCredentials(error)
  const name = configuration || refused ? 'ConfigurationError' : error.name
  const message = refused
    ? `the AWS credentials were refused (${refused.name}): ${error.message}`
    : error.message
  const raw = error instanceof LockCorruptedError ? error.raw.slice(0, 2_000) : undefined
  if (line.json) {
    io.err(
      JSON.stringify({
        [LogField.error]: { name, message, [LogField.exitCode]: code, ...(raw !== undefined && { raw }) },
        // A task's metric filters take their dimension from exec's `key`: a line without it is not counted.
        ...(line.command === 'exec' && { [LogField.key]: line.key }),
      }),
    )
    return code
  }
  io.err(code === ExitCode.Interrupted ? 'interrupted' : `${name}: ${message}`)
  if (raw !== undefined) {
    io.err(`raw object: ${raw}`)
    io.err('(`lambda-singleton help reset` says how to replace it)')
  }
  return code
}

const invokedDirectly = process.argv[1] && realpathSync(process.argv[1]) === fileURLToPath(import.meta.url)
if (invokedDirectly) {
  const interrupt = new AbortController()
  const signals = new ProcessSignals()
  // The first Ctrl-C ends `watch` and abandons reads; writes finish (they are bounded), so that
  // the lock is never left in doubt. A second one ends the process at once.
  let done = false
  const onSignal = () => {
    // Done already: the exit code stands, rather than a death by the signal while the process winds down.
    if (done) process.exit()
    if (signals.forwarding) return // `exec` passes it on to its command, and releases after it
    if (interrupt.signal.aborted) process.exit(ExitCode.Interrupted)
    interrupt.abort()
  }
  // SIGHUP as the others: a closed terminal or ssh session would otherwise kill `exec` outright,
  // its lock held until the lease ends and a completed tick unrecorded.
  for (const signal of FORWARDED_SIGNALS) process.on(signal, onSignal)
  // A terminal hung up (EIO) or a reader gone (EPIPE, a tee killed with it): what cannot be
  // printed is lost, and the run goes on. Unheard, the error would end the wrapper mid-run with
  // exit 1, its release unlogged or, written before it, never sent.
  for (const stream of [process.stdout, process.stderr]) stream.on('error', () => undefined)
  process.exitCode = await runCli(process.argv.slice(2), {
    out: (text) => console.log(text),
    err: (text) => console.error(text),
    env: process.env,
    signal: interrupt.signal,
    redraw: process.stdout.isTTY === true,
    signals,
  })
  done = true
  // Ends here rather than by winding down: while Node closes its handles at the end, a signal
  // takes its default action, and a run already released would exit 129 or 143 instead of its
  // own code. What was printed is flushed first (a pipe is written asynchronously on macOS).
  await Promise.all([flushed(process.stdout), flushed(process.stderr)])
  process.exit()
}

/** Resolves once everything written to `stream` so far is handed to the system. */
function flushed(stream: NodeJS.WriteStream): Promise<void> {
  return new Promise((resolve) => stream.write('', () => resolve()))
}
