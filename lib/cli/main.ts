#!/usr/bin/env node
/**
 * The operator CLI: look at a lock, free a stuck one, repair a corrupted one.
 *
 *   lambda-singleton inspect        --bucket B --key K     (or --table T for a DynamoDB lock)
 *   lambda-singleton force-release  --bucket B --key K
 *   lambda-singleton reset          --bucket B --key K --token N [--force]
 *
 * Credentials and region come from the usual AWS environment; `--endpoint` (or S3_ENDPOINT)
 * points it at another engine (S3 with path-style addressing).
 */
import { realpathSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { parseArgs } from 'node:util'
import { LockError } from '../core/errors.js'
import { Lock } from '../core/lock.js'
import { openStore, type StoreClients } from './store.js'

const USAGE = `usage: lambda-singleton <command> (--bucket BUCKET | --table TABLE) --key KEY [options]

commands:
  inspect        print the lock record and whether it is held (reads only)
  force-release  free a held lock now; the token goes up by one, fencing off the old holder
  reset          replace a corrupted lock object with a released record (--token N, above any token used);
                 refuses an object it cannot prove released or expired unless --force

options:
  --bucket B     S3 bucket of the lock objects
  --table T      DynamoDB table of the lock items (instead of --bucket)
  --partition-key NAME
                 the table's partition key (default: pk)
  --key K        the lock's key, e.g. locks/nightly-report
  --token N      (reset) the token to store
  --force        (reset) also replace an object that may be held; never lowers the token
  --endpoint URL another engine (S3 default: $S3_ENDPOINT, DynamoDB: $AWS_ENDPOINT_URL_DYNAMODB; else AWS)
  --owner NAME   who you are, recorded in the lock object (default: operator@<host>)
  --help`

export interface CliIo extends StoreClients {
  readonly out: (line: string) => void
  readonly err: (line: string) => void
  readonly env?: NodeJS.ProcessEnv
}

/** Runs one CLI command; resolves the process exit code. */
export async function runCli(argv: readonly string[], io: CliIo): Promise<number> {
  let parsed: ReturnType<typeof parse>
  try {
    parsed = parse(argv)
  } catch (error) {
    io.err(`${(error as Error).message}\n\n${USAGE}`)
    return 2
  }
  const { command, values } = parsed
  if (values.help || !command) {
    ;(values.help ? io.out : io.err)(USAGE)
    return values.help ? 0 : 2
  }
  if (!values.bucket === !values.table || !values.key) {
    io.err(`--key and one of --bucket (S3) or --table (DynamoDB) are required\n\n${USAGE}`)
    return 2
  }
  const endpoint = values.endpoint ?? (values.bucket ? io.env?.S3_ENDPOINT : undefined)
  const { store, close } = await openStore(
    { bucket: values.bucket, table: values.table, partitionKey: values['partition-key'], endpoint },
    io,
  )
  const lock = new Lock({
    store,
    key: values.key,
    owner: values.owner ?? `operator@${process.env.HOSTNAME ?? 'cli'}`,
  })
  try {
    switch (command) {
      case 'inspect': {
        const info = await lock.inspect()
        io.out(JSON.stringify(info ? { ...info, expiresAt: info.expiresAt.toISOString() } : null, null, 2))
        return info ? 0 : 1
      }
      case 'force-release': {
        const record = await lock.forceRelease()
        io.out(JSON.stringify(record, null, 2))
        return record ? 0 : 1
      }
      case 'reset': {
        const token = Number(values.token)
        if (values.token === undefined || !Number.isSafeInteger(token)) {
          io.err('reset needs --token N, an integer above any token the lock has handed out')
          return 2
        }
        io.out(JSON.stringify(await lock.reset({ token, force: values.force ?? false }), null, 2))
        return 0
      }
      default:
        io.err(`unknown command "${command}"\n\n${USAGE}`)
        return 2
    }
  } catch (error) {
    if (!(error instanceof LockError)) throw error
    io.err(`${error.name}: ${error.message}`)
    if ('raw' in error) io.err(`raw object: ${String(error.raw).slice(0, 2_000)}`)
    return 1
  } finally {
    close()
  }
}

function parse(argv: readonly string[]) {
  const { positionals, values } = parseArgs({
    args: [...argv],
    allowPositionals: true,
    options: {
      bucket: { type: 'string' },
      table: { type: 'string' },
      'partition-key': { type: 'string' },
      key: { type: 'string' },
      token: { type: 'string' },
      endpoint: { type: 'string' },
      owner: { type: 'string' },
      force: { type: 'boolean' },
      help: { type: 'boolean', short: 'h' },
    },
  })
  if (positionals.length > 1) throw new Error(`one command at a time, got: ${positionals.join(' ')}`)
  return { command: positionals[0], values }
}

const invokedDirectly = process.argv[1] && realpathSync(process.argv[1]) === fileURLToPath(import.meta.url)
if (invokedDirectly) {
  const code = await runCli(process.argv.slice(2), {
    out: (line) => console.log(line),
    err: (line) => console.error(line),
    env: process.env,
  })
  process.exitCode = code
}
