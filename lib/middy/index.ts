// `lambda-singleton/middy`: the middleware, and the types a handler behind it is written with.
// Errors and the rest of the options' types are on the root, `lambda-singleton`.
export type { SingletonScheduleEvent } from '../config.js'
export type { FencingTokenOptions } from '../core/lease.js'
export type { LambdaContext, SingletonContext, SingletonHandle } from '../lifecycle/handler-context.js'
export type { SingletonOptions } from '../lifecycle/options.js'
export { isSkipResult, type SkipResult } from '../lifecycle/skip.js'
export { singleton } from './singleton.js'
