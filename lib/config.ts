/**
 * The contract between the CDK construct (which sets these) and the middleware (which reads them).
 * Kept in one place so the two halves cannot drift apart.
 */
export const LOCK_ENV = {
  /** Name of the S3 bucket holding the lock objects. */
  bucket: 'LAMBDA_SINGLETON_BUCKET',
  /** Key prefix under which lock objects live, e.g. `locks/`. */
  keyPrefix: 'LAMBDA_SINGLETON_KEY_PREFIX',
} as const

/** Default key prefix for lock objects. */
export const DEFAULT_KEY_PREFIX = 'locks/'

/**
 * The `source` of the payload that the construct's EventBridge Scheduler schedules send,
 * `{ source, schedule, scheduledTime }`, where `scheduledTime` is the tick's ISO time
 * (`<aws.scheduler.scheduled-time>`), used as the tick id for per-tick dedupe.
 */
export const SCHEDULER_EVENT_SOURCE = 'lambda-singleton.scheduler'
