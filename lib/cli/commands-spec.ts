/**
 * What the CLI accepts: every option once, and for each command the options it takes. The
 * parser (args.ts) and the help (help.ts) both read these tables, so they cannot disagree.
 */

export interface OptionSpec {
  readonly type: 'string' | 'boolean'
  readonly short?: string
  /** The placeholder shown in help for a string option's value. */
  readonly value?: string
  readonly help: string
}

export const OPTIONS = {
  bucket: { type: 'string', value: 'BUCKET', help: 'S3 bucket of the lock objects' },
  table: { type: 'string', value: 'TABLE', help: 'DynamoDB table of the lock items (instead of --bucket)' },
  'partition-key': {
    type: 'string',
    value: 'NAME',
    help: "the table's partition key attribute (default: pk); only with --table",
  },
  'sort-key': {
    type: 'string',
    value: 'NAME=VALUE',
    help: "a table with a sort key: its attribute and the value of every lock item's; only with --table",
  },
  endpoint: {
    type: 'string',
    value: 'URL',
    help: 'another engine (default: $AWS_ENDPOINT_URL_S3 or $S3_ENDPOINT for S3, path-style; $AWS_ENDPOINT_URL_DYNAMODB for DynamoDB; else AWS)',
  },
  'request-timeout': {
    type: 'string',
    value: 'SECONDS',
    help: "how long each request to the store may take before it counts as failed, as the store's requestTimeoutMs (default: 5)",
  },
  'etag-quoting': {
    type: 'string',
    value: 'MODE',
    help: "S3 only: how etags are sent in If-Match, as the store's etagQuoting: auto (the default) learns it from the endpoint's answers; quoted (as AWS S3 takes them) or unquoted (as Ceph RGW 16 does) forces it",
  },
  key: { type: 'string', value: 'KEY', help: "the lock's key, e.g. locks/nightly-report" },
  prefix: {
    type: 'string',
    value: 'PREFIX',
    help: 'only the locks whose key starts with PREFIX (default: all)',
  },
  token: {
    type: 'string',
    value: 'N',
    help: 'the token to store: a plain decimal integer above any token the lock handed out',
  },
  'back-to-clock': {
    type: 'boolean',
    help:
      "instead of --token: a token from the store's clock, even below the one the lock shows. For a " +
      'token no acquisition can follow (record-ahead-of-clock, tokens-exhausted), which only an outside ' +
      'write makes. Objects that fencedPut wrote with a higher token then refuse every new ' +
      "holder's write until they are removed or rewritten",
  },
  force: { type: 'boolean', help: '' },
  note: {
    type: 'string',
    value: 'TEXT',
    help: "why, shown by inspect and in the skipped runs' results and logs",
  },
  now: {
    type: 'boolean',
    help: 'also end the lease of a run that holds the lock now: its renewal, release and fenced writes are refused',
  },
  owner: {
    type: 'string',
    value: 'NAME',
    help: 'who you are, written into the record (default: <user>@<host name>)',
  },
  interval: { type: 'string', value: 'SECONDS', help: 'time between refreshes (default: 2)' },
  json: { type: 'boolean', help: 'print JSON instead of a table (watch: one JSON document per line)' },
  ttl: {
    type: 'string',
    value: 'DURATION',
    help: 'exec: the lease, renewed every third of it; a crashed wrapper frees the lock this long after its last renewal (default: 60s, at least 3001ms)',
  },
  'on-held': {
    type: 'string',
    value: 'skip|fail|replace',
    help: 'exec: when another run holds the lock (after --wait, when given), exit 0 without running (skip, the default), exit 7 (fail), or take it from a run of an older --tick (replace)',
  },
  wait: {
    type: 'string',
    value: 'DURATION',
    help: 'exec: how long to wait for a held lock before --on-held applies',
  },
  tick: {
    type: 'string',
    value: 'ID',
    help: 'exec: the tick this run stands for (e.g. its scheduled time): a tick that completed is not run again',
  },
  'max-tick-age': {
    type: 'string',
    value: 'DURATION',
    help: 'exec: skip (exit 0) a --tick that is an ISO 8601 time more than this long ago, without asking the store (default: no limit)',
  },
  'pause-after-failures': {
    type: 'string',
    value: 'N',
    help: 'exec: pause the job after N runs in a row whose command exited non-zero, until `resume` (default: never)',
  },
  'kill-after': {
    type: 'string',
    value: 'DURATION',
    help: 'exec: when the lease is lost or a signal stops it, the command and every process it started get SIGTERM, then SIGKILL this long after (default: 10s)',
  },
  help: { type: 'boolean', short: 'h', help: "print this command's help" },
  version: { type: 'boolean', help: 'print the version' },
} as const satisfies Record<string, OptionSpec>
export type OptionName = keyof typeof OPTIONS

export interface CommandSpec {
  /** One line for the list of commands. */
  readonly summary: string
  /** The command's own arguments, after the store options, for its usage line. */
  readonly synopsis: string
  readonly options: readonly OptionName[]
  /** Options that must be given. */
  readonly required: readonly OptionName[]
  /** Options of which exactly one must be given. */
  readonly oneOf?: readonly OptionName[]
  /** What `--force` does for this command, when it takes it. */
  readonly force?: string
  /** A paragraph for the command's help. */
  readonly details: string
}

/** The options of every command: where the store is, how to talk to it, how to print. */
export const STORE_OPTIONS = [
  'bucket',
  'table',
  'partition-key',
  'sort-key',
  'endpoint',
  'request-timeout',
  'etag-quoting',
  'json',
] as const

export const COMMANDS = {
  inspect: {
    summary: 'print one lock: holder, token, expiry, last run (reads only)',
    synopsis: '--key KEY',
    options: [...STORE_OPTIONS, 'key'],
    required: ['key'],
    details:
      'Reads the lock and prints it; "held" is judged as a contender would judge it now, by the store\'s clock.',
  },
  history: {
    summary: 'the last runs of one lock: token, tick, owner, start, end, outcome (reads only)',
    synopsis: '--key KEY',
    options: [...STORE_OPTIONS, 'key'],
    required: ['key'],
    details:
      'Prints the runs the lock record keeps (historySize, 10 by default), oldest first: each written by ' +
      "the run's own release (completed or failed), or, for a run that never released, by the run that " +
      'took over its expired lease (abandoned; its end is when its lease expired); lost: its lease ran ' +
      "out unrenewed and it freed the lock itself. Times are the store's clock.",
  },
  list: {
    summary: 'every lock under a prefix, one row each (reads only)',
    synopsis: '[--prefix PREFIX]',
    options: [...STORE_OPTIONS, 'prefix'],
    required: [],
    details:
      'Lists the keys under the prefix (S3: ListObjectsV2, needs s3:ListBucket; DynamoDB: a Scan filtered ' +
      'by key prefix, needs dynamodb:Scan) and reads each lock (s3:GetObject, dynamodb:GetItem). ' +
      'An object that is not a lock record shows as unreadable.',
  },
  watch: {
    summary: 'the list, refreshed until Ctrl-C (reads only)',
    synopsis: '[--prefix PREFIX] [--interval SECONDS]',
    options: [...STORE_OPTIONS, 'prefix', 'interval'],
    required: [],
    details:
      'Shows what `list` shows, again every interval, until interrupted (Ctrl-C, SIGINT or SIGTERM), ' +
      'then exits 0. A failed refresh is reported and the next one tried; a failure of the first ends it.',
  },
  'force-release': {
    summary: 'free a held lock now, fencing off its holder',
    synopsis: '--key KEY [--force] [--owner NAME]',
    options: [...STORE_OPTIONS, 'key', 'force', 'owner'],
    required: ['key'],
    force: 'also raise the token of a lock that is not held (released or expired)',
    details:
      "Releases the lock and raises its token, so the stuck holder's fenced writes, renewals and release " +
      'are refused from then on. It ends only the lease it looked at: when another run took the lock or ' +
      'the holder released it in between, nothing is written (exit 4); renewals in between are ridden ' +
      'out. A lock that is not held is left as it is (exit 4) unless --force.',
  },
  pause: {
    summary: 'pause a job: its runs skip (reason paused) until resume',
    synopsis: '--key KEY [--note TEXT] [--now] [--owner NAME]',
    options: [...STORE_OPTIONS, 'key', 'note', 'now', 'owner'],
    required: ['key'],
    details:
      'Marks the lock record paused, naming you (--owner), the time and the note: every run of the job ' +
      'skips with reason "paused" after one read, writing nothing, until resume. A run that holds the ' +
      'lock now keeps it and finishes (the pause takes effect from the next run), unless --now, which ' +
      'ends its lease as force-release does. The record becomes version 2, which releases before ' +
      'pausing existed refuse (LockCorruptedError) rather than run the job or write over the pause. ' +
      'Pausing a paused job replaces who, when and why. Refuses (exit 4) when the lock changed meanwhile.',
  },
  resume: {
    summary: 'resume a paused job, clearing its count of failed runs',
    synopsis: '--key KEY [--owner NAME]',
    options: [...STORE_OPTIONS, 'key', 'owner'],
    required: ['key'],
    details:
      'Removes the pause (and the count of failed runs behind pauseAfterFailures), so the next run runs. ' +
      'A job that is not paused is left as it is (exit 0, nothing written). Refuses (exit 4) when the ' +
      'lock changed meanwhile.',
  },
  reset: {
    summary: 'replace a corrupted lock object with a released record',
    synopsis: '--key KEY (--token N | --back-to-clock) [--force] [--owner NAME]',
    options: [...STORE_OPTIONS, 'key', 'token', 'back-to-clock', 'force', 'owner'],
    required: ['key'],
    oneOf: ['token', 'back-to-clock'],
    force: 'also replace an object that may be held; never lowers the token (--back-to-clock aside)',
    details:
      'Writes a released record carrying token N over whatever is at the key, a corrupted object ' +
      'included. N must be above every token the lock handed out and any the object shows, and at ' +
      "most 10 s ahead of the store's clock; the store's time in milliseconds is a good choice. " +
      "--back-to-clock takes the store's time itself and may lower the token: the way back for a " +
      'lock whose token ran ahead of the clock. Refuses (exit 4) an object it cannot prove released ' +
      'or expired, unless --force.',
  },
  exec: {
    summary: 'run a command while holding the lock, its token in its environment',
    synopsis:
      '--key KEY [--ttl DURATION] [--on-held skip|fail|replace] [--wait DURATION] [--tick ID] [--max-tick-age DURATION] [--pause-after-failures N] [--kill-after DURATION] [--owner NAME] -- COMMAND [ARG...]',
    options: [
      ...STORE_OPTIONS,
      'key',
      'ttl',
      'on-held',
      'wait',
      'tick',
      'max-tick-age',
      'pause-after-failures',
      'kill-after',
      'owner',
    ],
    required: ['key'],
    details:
      'Takes the lock, runs COMMAND with LAMBDA_SINGLETON_TOKEN, LAMBDA_SINGLETON_KEY, LAMBDA_SINGLETON_OWNER ' +
      'and LAMBDA_SINGLETON_EXPIRES_AT in its environment, renews the lease while it runs and releases it ' +
      'when it and every process it started have exited, with its exit status (128+N when signal N ended it). ' +
      'SIGINT, SIGTERM and SIGHUP are passed on to all of them (on Linux its session, every process group in it; ' +
      'elsewhere its process group); a killed exec takes them with it. ' +
      'When the lease is lost (taken over, or not renewed in time) they get ' +
      'SIGTERM, then SIGKILL after --kill-after, and exec exits 8. With --tick, a tick that completed ' +
      'is skipped (exit 0), and one the command ran to exit 0 is recorded as done. DURATION: 30, 30s, 500ms, 5m, 1h.',
  },
} as const satisfies Record<string, CommandSpec>
export type CommandName = keyof typeof COMMANDS

export function isCommandName(name: string): name is CommandName {
  return Object.hasOwn(COMMANDS, name)
}
