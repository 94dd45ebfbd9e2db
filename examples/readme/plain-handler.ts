// A plain Lambda handler (no Middy) behind withSingleton(): the same lifecycle and options.
import { type SingletonOptions, withSingleton } from 'lambda-singleton'

export interface ReportEvent {
  readonly day: string
}

// A factory, so a unit test can hand it an in-memory store; Lambda uses the default (S3).
export const makeHandler = (options: SingletonOptions<ReportEvent> = {}) =>
  withSingleton(async (event: ReportEvent, context) => {
    const { signal } = context.singleton
    signal.throwIfAborted() // the lease was lost: stop, someone else runs now
    // The token, for a target that checks it: awaited only where it is used.
    const token = await context.singleton.fencingToken({ signal })
    return { day: event.day, token }
  }, options)

export const handler = makeHandler()
