import { COMMANDS, type CommandName, OPTIONS, type OptionName, STORE_OPTIONS } from './commands-spec.js'
import { ExitCode } from './exit-codes.js'

const PROGRAM = 'lambda-singleton'
const STORE_USAGE = '(--bucket BUCKET | --table TABLE)'
/** Help lines are wrapped to fit this many columns. */
const WIDTH = 96

const EXIT_CODE_LABELS: Record<keyof typeof ExitCode, string> = {
  Ok: 'done',
  Failure: 'the store failed or answered something unexpected',
  Usage: 'wrong command line',
  NotFound: 'no lock at the key',
  Refused: 'nothing written: the lock is not in a state that allows it (see --force)',
  Corrupted: 'the object is not a lock record (see reset)',
  Configuration: "no region, no credentials, credentials refused, or the store's SDK not installed",
  Held: 'exec: the lock is held and --on-held is fail (after --wait, when given); the command did not run',
  Lost: 'exec: the lease was lost (or replaced by a newer tick) while the command ran; it was sent SIGTERM (then SIGKILL)',
  CannotRun: 'exec: the command could not be started',
  CommandNotFound: 'exec: no such command',
  Interrupted: 'interrupted (watch exits 0 when interrupted)',
}

/** The help of the whole program. */
export function programHelp(): string {
  const width = Math.max(...Object.keys(COMMANDS).map((name) => name.length)) + 2
  const commands = Object.entries(COMMANDS).map(([name, spec]) => `  ${name.padEnd(width)}${spec.summary}`)
  return [
    `usage: ${PROGRAM} <command> ${STORE_USAGE} [options]`,
    `       ${PROGRAM} help [COMMAND]  |  ${PROGRAM} <command> --help  |  ${PROGRAM} --version`,
    '',
    'Look at and repair lambda-singleton locks in an S3 bucket or a DynamoDB table.',
    '',
    'commands:',
    ...commands,
    '',
    'options of every command:',
    ...optionLines(STORE_OPTIONS),
    '',
    exitCodesHelp(),
    '',
    environmentHelp(),
  ].join('\n')
}

/** The help of one command: its usage, what it does, its options. */
export function commandHelp(command: CommandName): string {
  const spec = COMMANDS[command]
  return [
    `usage: ${PROGRAM} ${command} ${STORE_USAGE} ${withJson(spec.synopsis)}`,
    '',
    `${spec.summary}.`,
    wrap(spec.details, WIDTH),
    '',
    'options:',
    ...optionLines(spec.options, 'force' in spec ? spec.force : undefined),
    '',
    exitCodesHelp(),
    '',
    environmentHelp(),
  ].join('\n')
}

/** The short usage shown after a usage error. */
export function usageLine(command?: CommandName): string {
  const line =
    command === undefined
      ? `usage: ${PROGRAM} <command> ${STORE_USAGE} [options]`
      : `usage: ${PROGRAM} ${command} ${STORE_USAGE} ${withJson(COMMANDS[command].synopsis)}`
  const more = command === undefined ? `${PROGRAM} help` : `${PROGRAM} help ${command}`
  return `${line}\n(see "${more}")`
}

/** A synopsis with `[--json]` among the command's own options: after `--`, it is the command's (exec). */
function withJson(synopsis: string): string {
  const at = synopsis.indexOf(' -- ')
  return at === -1 ? `${synopsis} [--json]` : `${synopsis.slice(0, at)} [--json]${synopsis.slice(at)}`
}

function optionLines(names: readonly OptionName[], forceHelp?: string): string[] {
  const rows = names.map((name) => {
    const spec: { value?: string; help: string } = OPTIONS[name]
    const flag = `--${name}${spec.value ? ` ${spec.value}` : ''}`
    return [flag, name === 'force' ? (forceHelp ?? '') : spec.help] as const
  })
  const width = Math.max(...rows.map(([flag]) => flag.length)) + 2
  return rows.map(([flag, help]) => {
    const [first, ...more] = wrap(help, WIDTH - 2 - width).split('\n')
    return [`  ${flag.padEnd(width)}${first}`, ...more.map((line) => `${' '.repeat(2 + width)}${line}`)].join(
      '\n',
    )
  })
}

function exitCodesHelp(): string {
  const lines = Object.entries(ExitCode).map(
    ([name, code]) => `  ${String(code).padStart(3)}  ${EXIT_CODE_LABELS[name as keyof typeof ExitCode]}`,
  )
  return ['exit codes:', ...lines].join('\n')
}

function environmentHelp(): string {
  return wrap(
    'Region and credentials come from the usual AWS environment (AWS_REGION, AWS_PROFILE, ' +
      'AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, a role).',
    WIDTH,
  )
}

function wrap(text: string, width: number): string {
  const lines: string[] = []
  let line = ''
  for (const word of text.split(/\s+/)) {
    if (line && line.length + word.length + 1 > width) {
      lines.push(line)
      line = word
    } else line = line ? `${line} ${word}` : word
  }
  return [...lines, line].join('\n')
}
