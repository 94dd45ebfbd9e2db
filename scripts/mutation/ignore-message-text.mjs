// A Stryker ignorer: leaves unmutated the text of error and log messages, so that mutants that
// only reword a message (or the values spliced into it) neither cost a test run nor count in
// the score. What a failure *is* (its class, reason, retryable flag, fields) stays mutated.
import { declareValuePlugin, PluginKind } from '@stryker-mutator/api/plugin'

/** Local helpers that turn a message into an error: their first argument is the message. */
const ERROR_HELPERS = new Set(['fail', 'corrupted', 'refused'])
/** Functions whose argument at this index is message text. */
const MESSAGE_ARGUMENT = new Map([
  ['report', 1], // report(level, message, event)
  ['lose', 1], // this.#lose(reason, why, ...)
  ['refused', 1], // refused(key, message, reason) of lib/core/operator-write.ts
  ['validateTiming', 1], // validateTiming(timing, where, key): `where` prefixes the message
])

/** The name a callee goes by: `f`, `this.f`, `this.#f`, `this.#settings.f`. */
function calleeName(callee) {
  if (callee.type === 'Identifier') return callee.name
  if (callee.type === 'MemberExpression' && !callee.computed) {
    const { property } = callee
    if (property.type === 'Identifier') return property.name
    if (property.type === 'PrivateName') return property.id.name
  }
  return undefined
}

function messagePosition(path) {
  const parent = path.parentPath
  if (!parent) return undefined
  const { node } = parent
  const index = (node.arguments ?? []).indexOf(path.node)
  if (index < 0) return undefined
  const name = calleeName(node.callee)
  if (name === undefined) return undefined
  if (parent.isNewExpression() && /Error$/.test(name) && index === 0) return `new ${name}(message)`
  if (!parent.isCallExpression()) return undefined
  if (ERROR_HELPERS.has(name) && index === 0) return `${name}(message)`
  if (MESSAGE_ARGUMENT.get(name) === index) return `${name}(…, message)`
  return undefined
}

export const strykerPlugins = [
  declareValuePlugin(PluginKind.Ignore, 'message-text', {
    shouldIgnore(path) {
      const where = messagePosition(path)
      return where && `Message text (${where}): the words are not the behaviour.`
    },
  }),
]
