import { configurationReason } from '../aws/configuration.js'
import {
  ConfigurationReason,
  LockConfigurationError,
  LockConflictError,
  LockCorruptedError,
  LockError,
  LockOptionsError,
  LockStoreError,
} from '../core/errors.js'
import { ExitCode } from '../exit-codes.js'
import type { CommandName } from './commands-spec.js'

export { ExitCode }

/** The command line cannot work as given. */
export class UsageError extends Error {
  override name = 'UsageError'
  /** The command whose help to show with the message, when one was named. */
  readonly command: CommandName | undefined

  constructor(message: string, command?: CommandName) {
    super(message)
    this.command = command
  }
}

/** The AWS SDK cannot send a request as configured (region, credentials). */
export class ConfigurationError extends Error {
  override name = 'ConfigurationError'

  constructor(message: string, options: { cause?: unknown } = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause })
  }
}

/** No lock object at the key (or none these credentials may see). */
export class LockNotFoundError extends Error {
  override name = 'LockNotFoundError'
  readonly key: string

  constructor(message: string, key: string) {
    super(message)
    this.key = key
  }
}

/** The lock is not held, so a force-release would change nothing but the token. */
export class NotHeldError extends Error {
  override name = 'NotHeldError'
}

/**
 * The SDK error under a store error that says the credentials were refused (or could not be
 * loaded), if any: configuration, not a store failure, although refused credentials arrive as an
 * answer from the service. The library's stores throw `LockConfigurationError` for these; a
 * listing's error, or one wrapped by a retry, still carries the SDK's deeper down.
 */
export function refusedCredentials(error: unknown): Error | undefined {
  for (let cause = error; cause instanceof Error; cause = cause.cause) {
    const reason = configurationReason(cause)
    if (reason === ConfigurationReason.CredentialsRefused || reason === ConfigurationReason.NoCredentials) {
      return cause
    }
  }
  return undefined
}

/** The exit code for an error a command ended with; `undefined` for one nobody expected. */
export function exitCodeFor(error: unknown): ExitCode | undefined {
  if (error instanceof UsageError || error instanceof LockOptionsError) return ExitCode.Usage
  if (error instanceof ConfigurationError || error instanceof LockConfigurationError) {
    return ExitCode.Configuration
  }
  if (error instanceof LockNotFoundError) return ExitCode.NotFound
  if (error instanceof NotHeldError || error instanceof LockConflictError) return ExitCode.Refused
  if (error instanceof LockCorruptedError) return ExitCode.Corrupted
  if (error instanceof LockStoreError && refusedCredentials(error)) return ExitCode.Configuration
  if (error instanceof LockError) return ExitCode.Failure
  return undefined
}
