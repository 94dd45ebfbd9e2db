/**
 * Marks on a run's timeline, for the traces (warm-trace.ts, cold-trace.ts): every SDK call of a
 * traced client is marked when the call starts (`initialize`), when its request goes on the wire
 * (`finalizeRequest`), when the answer comes back and when the call returns; the job marks its
 * handler's start and end. A run's wall time is then cut into segments between the marks.
 */
import type { MiddlewareStack } from '@smithy/types'

export interface Mark {
  readonly at: number
  readonly what: 'call' | 'send' | 'answer' | 'return' | 'handler' | 'handled'
  /** The call's operation (`PutItem`, `GetObject`…), on a call's marks. */
  readonly operation?: string
}

let marks: Mark[] = []
let tracing = false

/** Starts (or restarts) marking: the marks so far are dropped. */
export function startMarks(): void {
  tracing = true
  marks = []
}

/** The marks since `startMarks`. */
export function takeMarks(): readonly Mark[] {
  return marks
}

/** A mark, if a trace is under way (the job's handler calls this in every run: it costs nothing otherwise). */
export function mark(what: Mark['what'], operation?: string): void {
  if (tracing) marks.push({ at: performance.now(), what, ...(operation && { operation }) })
}

/** `client`, its calls marked (see the file's comment). */
// biome-ignore lint/suspicious/noExplicitAny: any client's stack; the marks read nothing of its types
export function traced<C extends { middlewareStack: MiddlewareStack<any, any> }>(client: C): C {
  client.middlewareStack.add(
    (next, context) => async (args) => {
      const operation = String((context as { commandName?: string }).commandName ?? '').replace(
        /Command$/,
        '',
      )
      mark('call', operation)
      const result = await next(args)
      mark('return', operation)
      return result
    },
    { step: 'initialize', priority: 'high', name: 'traceCall' },
  )
  client.middlewareStack.add(
    (next, context) => async (args) => {
      const operation = String((context as { commandName?: string }).commandName ?? '').replace(
        /Command$/,
        '',
      )
      mark('send', operation)
      try {
        return await next(args)
      } finally {
        mark('answer', operation)
      }
    },
    { step: 'finalizeRequest', priority: 'low', name: 'traceWire' },
  )
  return client
}
