// Types for the parts of dynamodb-lock-client 0.7 (plain JavaScript, untyped) the benchmark uses,
// from its README and index.js.
declare module 'dynamodb-lock-client' {
  import type { EventEmitter } from 'node:events'
  import type { DocumentClient } from 'aws-sdk/clients/dynamodb.js'

  export interface FailOpenConfig {
    readonly dynamodb: DocumentClient
    readonly lockTable: string
    readonly partitionKey: string
    readonly sortKey?: string
    readonly heartbeatPeriodMs?: number
    readonly leaseDurationMs: number
    readonly owner?: string
    readonly retryCount?: number
    readonly trustLocalTime?: boolean
  }

  /** `code` is `FailedToAcquireLock` when the lock was held (or a race was lost). */
  export type LockClientError = Error & { readonly code?: string }

  export interface Lock extends EventEmitter {
    /** Incremented with every fail-open acquisition; kept by heartbeats. */
    readonly fencingToken: number
    release(callback: (error?: LockClientError) => void): void
  }

  export class FailOpen {
    constructor(config: FailOpenConfig)
    acquireLock(id: string, callback: (error: LockClientError | undefined, lock: Lock) => void): void
  }
}
