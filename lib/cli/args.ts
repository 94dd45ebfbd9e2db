import { parseArgs } from 'node:util'
import type { ExecSettings } from '../exec/settings.js'
import { plainInteger, seconds, textOf, type Values } from './arg-values.js'
import {
  COMMANDS,
  type CommandName,
  type CommandSpec,
  isCommandName,
  OPTIONS,
  type OptionName,
} from './commands-spec.js'
import { execLine } from './exec-args.js'
import { UsageError } from './exit-codes.js'
import type { StoreTarget } from './store.js'
import { targetOf } from './store-args.js'

/** Every option a command may take, checked and converted; each command's line has its own. */
interface OptionValues {
  readonly key: string
  /** Keys to list: '' for all. */
  readonly prefix: string
  readonly token?: number
  /** `reset`: a token from the store's clock instead of `token`. */
  readonly backToClock: boolean
  readonly force: boolean
  readonly owner?: string
  /** `pause`: why. */
  readonly note?: string
  /** `pause`: also end a held lease. */
  readonly now: boolean
  readonly intervalMs: number
  readonly json: boolean
}

/** Where each option of the command table lands in a parsed line (exec's own go to `exec`). */
const FIELD_OF = {
  key: 'key',
  prefix: 'prefix',
  token: 'token',
  'back-to-clock': 'backToClock',
  force: 'force',
  owner: 'owner',
  note: 'note',
  now: 'now',
  interval: 'intervalMs',
  json: 'json',
} as const satisfies Partial<Record<OptionName, keyof OptionValues>>

type FieldOf<O> = O extends keyof typeof FIELD_OF ? (typeof FIELD_OF)[O] : never

/**
 * One command's line: the store, and the fields of the options that command takes (read from
 * the command table, so that a command cannot read an option it does not take); `exec` also
 * has the command it runs.
 */
export type CommandLineOf<C extends CommandName> = C extends CommandName
  ? { readonly command: C; readonly target: StoreTarget } & Pick<
      OptionValues,
      FieldOf<(typeof COMMANDS)[C]['options'][number]>
    > &
      (C extends 'exec' ? { readonly exec: ExecSettings } : unknown)
  : never

/** A command to run, its options checked and converted: one type per command. */
export type CommandLine = CommandLineOf<CommandName>

export type Parsed =
  | { readonly kind: 'help'; readonly command?: CommandName }
  | { readonly kind: 'version' }
  | ({ readonly kind: 'run' } & CommandLine)

const DEFAULT_INTERVAL_MS = 2_000
const INTERVAL_RANGE_S = { min: 0.1, max: 3_600 } as const

type Token = { kind: string; name?: string; rawName?: string; value?: string | undefined; index: number }

/**
 * Reads the command line. Throws `UsageError` for anything it cannot take exactly as meant: an
 * unknown command or option, an option the command does not take or given twice, an empty or
 * malformed value. `--help` anywhere asks for help, the command's when one is named.
 */
export function parseCommandLine(argv: readonly string[]): Parsed {
  const named = argv.find(isCommandName)
  const beforeEnd = argv.includes('--') ? argv.slice(0, argv.indexOf('--')) : argv
  if (beforeEnd.includes('--help') || beforeEnd.includes('-h')) {
    return named === undefined ? { kind: 'help' } : { kind: 'help', command: named }
  }
  const { values, positionals: all, tokens } = strictParse(argv)
  // Words after `--` are the command `exec` runs, never this program's.
  const end = tokens.find((token) => token.kind === 'option-terminator')?.index ?? Number.POSITIVE_INFINITY
  const afterEnd = tokens.flatMap((token) =>
    token.kind === 'positional' && token.index > end ? [token.value ?? ''] : [],
  )
  const positionals = all.slice(0, all.length - afterEnd.length)
  const [name, ...rest] = positionals
  if (name === 'help') {
    if (rest.length > 1 || tokens.some((token) => token.kind === 'option'))
      throw new UsageError('help takes at most one command name and no options')
    if (rest[0] === undefined) return { kind: 'help' }
    return { kind: 'help', command: commandNamed(rest[0]) }
  }
  if (values.version) {
    if (positionals.length > 0 || tokens.filter((token) => token.kind === 'option').length > 1)
      throw new UsageError('--version takes no command and no other option')
    return { kind: 'version' }
  }
  if (name === undefined) throw new UsageError('no command given')
  const command = commandNamed(name)
  const unexpected = rest[0] ?? (command === 'exec' ? undefined : afterEnd[0])
  if (unexpected !== undefined) throw new UsageError(`unexpected argument "${unexpected}"`, command)
  checkOptionsOf(command, tokens)
  return { kind: 'run', ...commandLine(command, values, afterEnd) }
}

function strictParse(argv: readonly string[]) {
  try {
    const parsed = parseArgs({ args: [...argv], options: OPTIONS, allowPositionals: true, tokens: true })
    return {
      values: parsed.values as Values,
      positionals: parsed.positionals,
      tokens: parsed.tokens as Token[],
    }
  } catch (error) {
    throw usageErrorOf(error)
  }
}

/** Node's message for a command line it cannot read, said the way the rest of this CLI says it. */
function usageErrorOf(error: unknown): unknown {
  const code = (error as { code?: unknown }).code
  if (typeof code !== 'string' || !code.startsWith('ERR_PARSE_ARGS_')) return error
  const message = (error as Error).message
  const option = /^(?:Unknown option|Option) '(-[^' ]+)/.exec(message)?.[1]
  if (option === undefined) return new UsageError(message.split('\n')[0] ?? message)
  if (code === 'ERR_PARSE_ARGS_UNKNOWN_OPTION') return new UsageError(`unknown option ${option}`)
  if (/does not take an argument/.test(message)) return new UsageError(`${option} takes no value`)
  // "argument missing", or "ambiguous": the next word starts with a dash, like `--token -1`.
  return new UsageError(`${option} needs a value (one that starts with "-" is written ${option}=-…)`)
}

function commandNamed(name: string): CommandName {
  if (!isCommandName(name)) throw new UsageError(`unknown command "${name}"`)
  return name
}

/** Options the command does not take, given twice, or given an empty value. */
function checkOptionsOf(command: CommandName, tokens: readonly Token[]): void {
  const takes: readonly string[] = COMMANDS[command].options
  const seen = new Set<string>()
  for (const token of tokens) {
    if (token.kind !== 'option' || token.name === undefined) continue
    const shown = token.rawName ?? `--${token.name}`
    if (!takes.includes(token.name)) throw new UsageError(`${command} does not take ${shown}`, command)
    if (seen.has(token.name)) throw new UsageError(`${shown} given more than once`, command)
    seen.add(token.name)
    if (token.value !== undefined && token.value.trim() === '')
      throw new UsageError(`${shown} needs a value`, command)
  }
  for (const option of COMMANDS[command].required) {
    if (!seen.has(option)) throw new UsageError(`${command} needs --${option}`, command)
  }
  const spec: CommandSpec = COMMANDS[command]
  if (spec.oneOf) {
    const given = spec.oneOf.filter((option) => seen.has(option))
    const names = spec.oneOf.map((option) => `--${option}`)
    if (given.length === 0) throw new UsageError(`${command} needs ${names.join(' or ')}`, command)
    if (given.length > 1) throw new UsageError(`give only one of ${names.join(', ')}`, command)
  }
}

function commandLine(command: CommandName, values: Values, afterEnd: readonly string[]): CommandLine {
  const text = textOf(values)
  const token = text('token')
  const interval = text('interval')
  const all: OptionValues = {
    key: text('key') ?? '',
    prefix: text('prefix') ?? '',
    ...(token !== undefined && { token: plainInteger(token, command) }),
    backToClock: values['back-to-clock'] === true,
    force: values.force === true,
    ...(text('owner') !== undefined && { owner: text('owner') }),
    ...(text('note') !== undefined && { note: text('note') }),
    now: values.now === true,
    intervalMs:
      interval === undefined
        ? DEFAULT_INTERVAL_MS
        : seconds('--interval', interval, INTERVAL_RANGE_S, command),
    json: values.json === true,
  }
  const taken: Record<string, unknown> = {}
  for (const option of COMMANDS[command].options) {
    const field = (FIELD_OF as Partial<Record<OptionName, keyof OptionValues>>)[option]
    if (field !== undefined && all[field] !== undefined) taken[field] = all[field]
  }
  return {
    command,
    target: targetOf(command, values),
    ...taken,
    ...(command === 'exec' && { exec: execLine(values, afterEnd) }),
  } as CommandLine
}
