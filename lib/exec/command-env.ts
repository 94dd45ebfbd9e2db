/** The lease as the command under `exec` finds it in its environment. */

/** What the command finds in its environment, besides everything the wrapper had. */
export const EXEC_ENV = {
  token: 'LAMBDA_SINGLETON_TOKEN',
  key: 'LAMBDA_SINGLETON_KEY',
  owner: 'LAMBDA_SINGLETON_OWNER',
  /** The lease's end when the command started (ISO 8601); the wrapper renews it while it runs. */
  expiresAt: 'LAMBDA_SINGLETON_EXPIRES_AT',
  /** The `--tick`, when given. */
  tick: 'LAMBDA_SINGLETON_TICK',
} as const

/** What supervision reads of the run's lease (exec builds it from the run). */
export interface SupervisedLease {
  readonly key: string
  readonly token: number
  /** When the lease ends, as of now: read when the command starts. */
  readonly expiresAt: Date
  /** Aborted when the lease is lost, with a `LockLostError` saying why as its reason. */
  readonly signal: AbortSignal
  readonly lease: { readonly owner: string }
}

export function commandEnv(
  handle: SupervisedLease,
  tick: string | undefined,
  inherited: NodeJS.ProcessEnv,
): NodeJS.ProcessEnv {
  // A tick the wrapper inherited (an exec in another exec's command, a variable left in a shell)
  // is not this run's: left in, the command would take it for its own beside this lease's token.
  const { [EXEC_ENV.tick]: _notOurs, ...rest } = inherited
  return {
    ...rest,
    [EXEC_ENV.token]: String(handle.token),
    [EXEC_ENV.key]: handle.key,
    [EXEC_ENV.owner]: handle.lease.owner,
    [EXEC_ENV.expiresAt]: handle.expiresAt.toISOString(),
    ...(tick !== undefined && { [EXEC_ENV.tick]: tick }),
  }
}
