/**
 * CloudWatch Logs JSON filter patterns, the subset the task's metric filters use:
 * `{ ($.a = "x") && ($.b.c != 0) || ($.d IS TRUE) }`. Anything else (wildcards, EXISTS, arrays,
 * unquoted strings, regexes) is refused, not guessed at: a pattern this cannot read fails the test.
 */

type Condition =
  | { readonly kind: 'and' | 'or'; readonly left: Condition; readonly right: Condition }
  | {
      readonly kind: 'compare'
      readonly path: readonly string[]
      readonly op: string
      readonly value: string | number
    }
  | { readonly kind: 'is'; readonly path: readonly string[]; readonly value: boolean }

const TOKEN =
  /\s*(\(|\)|&&|\|\||!=|>=|<=|=|>|<|IS\b|TRUE\b|FALSE\b|\$(?:\.[A-Za-z_][A-Za-z0-9_]*)+|"(?:[^"\\*]|\\.)*"|-?[0-9]+(?:\.[0-9]+)?)/y

function tokens(body: string): string[] {
  const found: string[] = []
  TOKEN.lastIndex = 0
  while (TOKEN.lastIndex < body.length) {
    if (/^\s*$/.test(body.slice(TOKEN.lastIndex))) break
    const at = TOKEN.lastIndex
    const match = TOKEN.exec(body)
    if (!match?.[1]) throw new Error(`filter pattern: cannot read ${JSON.stringify(body.slice(at))}`)
    found.push(match[1])
  }
  return found
}

/** Parses `{ … }`; throws on any syntax outside the subset. */
export function parseFilterPattern(pattern: string): Condition {
  const body = /^\s*\{(.*)\}\s*$/s.exec(pattern)?.[1]
  if (body === undefined) throw new Error(`filter pattern: not a JSON pattern: ${pattern}`)
  const list = tokens(body)
  let at = 0
  const peek = () => list[at]
  const take = (expected?: string) => {
    const token = list[at++]
    if (token === undefined || (expected !== undefined && token !== expected))
      throw new Error(`filter pattern: expected ${expected ?? 'more'} at token ${at} of ${pattern}`)
    return token
  }
  // CloudWatch gives && and || no precedence over each other: refuse a mix without parentheses.
  const expression = (): Condition => {
    let left = term()
    const joiner = peek()
    while (peek() === '&&' || peek() === '||') {
      if (peek() !== joiner)
        throw new Error(`filter pattern: && and || mixed without parentheses: ${pattern}`)
      take()
      left = { kind: joiner === '&&' ? 'and' : 'or', left, right: term() }
    }
    return left
  }
  const term = (): Condition => {
    if (peek() !== '(') return comparison()
    take('(')
    const inner = expression()
    take(')')
    return inner
  }
  const comparison = (): Condition => {
    const path = take().slice(2).split('.')
    const op = take()
    if (op === 'IS') {
      const value = take()
      if (value !== 'TRUE' && value !== 'FALSE') throw new Error(`filter pattern: IS ${value} unsupported`)
      return { kind: 'is', path, value: value === 'TRUE' }
    }
    if (!['=', '!=', '>', '<', '>=', '<='].includes(op)) throw new Error(`filter pattern: operator ${op}`)
    const literal = take()
    if (literal.startsWith('"')) {
      if (op !== '=' && op !== '!=') throw new Error(`filter pattern: ${op} on a string`)
      return { kind: 'compare', path, op, value: JSON.parse(literal) as string }
    }
    if (!/^-?[0-9]/.test(literal)) throw new Error(`filter pattern: unquoted value ${literal}`)
    return { kind: 'compare', path, op, value: Number(literal) }
  }
  const condition = expression()
  if (at !== list.length) throw new Error(`filter pattern: left over ${list.slice(at).join(' ')}`)
  return condition
}

/** The value at `$.a.b` of a parsed line, or undefined. */
export function valueAt(line: unknown, path: readonly string[]): unknown {
  let value = line
  for (const field of path) {
    if (typeof value !== 'object' || value === null || Array.isArray(value)) return undefined
    value = (value as Record<string, unknown>)[field]
  }
  return value
}

const NUMERIC: Record<string, (a: number, b: number) => boolean> = {
  '=': (a, b) => a === b,
  '!=': (a, b) => a !== b,
  '>': (a, b) => a > b,
  '<': (a, b) => a < b,
  '>=': (a, b) => a >= b,
  '<=': (a, b) => a <= b,
}

/** Whether a JSON log line matches: a missing field, or one of another type, matches nothing. */
export function matches(condition: Condition, line: unknown): boolean {
  switch (condition.kind) {
    case 'and':
      return matches(condition.left, line) && matches(condition.right, line)
    case 'or':
      return matches(condition.left, line) || matches(condition.right, line)
    case 'is':
      return valueAt(line, condition.path) === condition.value
    case 'compare': {
      const value = valueAt(line, condition.path)
      if (typeof condition.value === 'string') {
        if (typeof value !== 'string') return false
        return condition.op === '=' ? value === condition.value : value !== condition.value
      }
      if (typeof value !== 'number') return false
      return NUMERIC[condition.op]?.(value, condition.value) ?? false
    }
  }
}
