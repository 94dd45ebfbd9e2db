import type { FencingTokenOptions } from '../core/lease.js'
import type { JsonValue } from '../core/record.js'

/**
 * What the lifecycle reads from an invocation's context. A Lambda `Context` fits; so does a
 * plain object in a container task or a test (`{}` is valid: owner and lease length then take
 * their defaults).
 */
export interface InvocationContext {
  /** Names the default lock key and the owner. */
  readonly functionName?: string
  /** One invocation's id, kept by Lambda's retries of it: the owner, so a crashed try is taken over at once. */
  readonly awsRequestId?: string
  /** The invocation's remaining time: the default lease covers it. */
  getRemainingTimeInMillis?(): number
}

/**
 * The Lambda context, as `aws-lambda`'s `Context` declares it. Declared here so that the
 * package's types resolve without `@types/aws-lambda`.
 */
export interface LambdaContext {
  callbackWaitsForEmptyEventLoop: boolean
  functionName: string
  functionVersion: string
  invokedFunctionArn: string
  memoryLimitInMB: string
  awsRequestId: string
  logGroupName: string
  logStreamName: string
  identity?: { cognitoIdentityId: string; cognitoIdentityPoolId: string } | undefined
  clientContext?:
    | {
        client: {
          installationId: string
          appTitle: string
          appVersionName: string
          appVersionCode: string
          appPackageName: string
        }
        // biome-ignore lint/suspicious/noExplicitAny: as aws-lambda declares it
        custom?: any
        env: { platformVersion: string; platform: string; make: string; model: string; locale: string }
      }
    | undefined
  tenantId?: string | undefined
  getRemainingTimeInMillis(): number
  // biome-ignore lint/suspicious/noExplicitAny: declared as aws-lambda declares them (deprecated callbacks)
  done(error?: Error, result?: any): void
  fail(error: Error | string): void
  // biome-ignore lint/suspicious/noExplicitAny: as above
  succeed(messageOrObject: any): void
  // biome-ignore lint/suspicious/noExplicitAny: as above
  succeed(message: string, object: any): void
}

/** What the handler finds on `context.singleton`. */
export interface SingletonHandle {
  /** The lock's key in the store. */
  readonly key: string
  /**
   * The fencing token: pass it with every write, so a target can refuse a stale run. It resolves
   * once the store's clock has passed it (`Lease.fencingToken`): the run holds the lock from its
   * start, and only a handler that fences waits, at its first fenced write, often not at all.
   */
  fencingToken(options?: FencingTokenOptions): Promise<number>
  /** When the lease ends, by this process's clock (already shortened by the skew margin). */
  readonly expiresAt: Date
  /** Aborted when the lease is lost, or when the run ends (the invocation returned or timed out). */
  readonly signal: AbortSignal
  /**
   * The checkpoint of unfinished work: what an earlier run that did not complete (it threw,
   * timed out or crashed) last passed to `saveCheckpoint`, e.g. where it stopped. `undefined`
   * after a run that completed: a successful run clears it. (The record stores it as `state`.)
   */
  readonly checkpoint: JsonValue | undefined
  /**
   * Stores a checkpoint of this run's progress in the lock record (same token, conditional
   * write), for a retry to resume from if this run does not complete. Cleared when a run
   * completes, so the next tick starts afresh.
   */
  saveCheckpoint(checkpoint: JsonValue): Promise<void>
  /**
   * Where the work stands across runs (e.g. the last item processed), as the last run to call
   * `saveCursor` left it, completed or not, when this run began; `undefined` until one does.
   */
  readonly cursor: JsonValue | undefined
  /**
   * Stores `cursor` in the lock record (same token, conditional write), for every later run:
   * never cleared by the library, only replaced.
   */
  saveCursor(cursor: JsonValue): Promise<void>
  /** The tick this invocation stands for, when the event tells. */
  readonly tick: string | undefined
}

/** The context as the handler sees it behind `singleton()` or `withSingleton()`. */
export type SingletonContext<TContext = LambdaContext> = TContext & { singleton: SingletonHandle }
