// `lambda-singleton/operator`: the operator's side of a lock, apart from the job's. `LockOperator`
// reads a lock and pauses, resumes, frees or repairs its job, as the CLI's commands of the same
// names do; a job's code needs none of it (its `Lock`, `withSingleton` and `singleton()` are on
// the root and on `/middy`).

export type { ForceReleaseOptions, JudgedLease } from './core/force-release.js'
export type { BlockedReason, LockInfo } from './core/lock-options.js'
export type { ResetOptions } from './core/reset.js'
export { LockOperator, type LockOperatorOptions } from './operator/lock-operator.js'
export type { PauseOptions, PauseResult, ResumeResult } from './schedule/pause-writes.js'
