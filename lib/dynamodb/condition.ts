import type { AttributeValue } from '@aws-sdk/client-dynamodb'
import { RECORD_FIELDS } from '../core/record.js'
import type { Attributes } from './attributes.js'
import { BODY_ATTRIBUTE, VERSION_ATTRIBUTE } from './item.js'

/** A condition expression's clauses with the placeholders they use. */
export interface Condition {
  readonly clauses: readonly string[]
  readonly names: Record<string, string>
  readonly values: Attributes
}

/** How a condition compares an attribute with the value it expects. */
export const Comparison = {
  /** `#a = :v`, maps and lists whole: what DynamoDB and DynamoDB Local evaluate. */
  Whole: 'whole',
  /**
   * Maps and lists by their type, their size and each element in turn, down to the scalars:
   * for an engine whose `=` is false for any map or list (dynalite). Longer, so used only there:
   * DynamoDB caps an expression at 4 KB.
   */
  Leaves: 'leaves',
} as const
export type Comparison = (typeof Comparison)[keyof typeof Comparison]

/**
 * What one condition may hold: DynamoDB refuses an expression of more than 300 operators and
 * functions (each `=` and each `AND` counts) or 4 KB. Less, to leave room for the store's own
 * clause on the key.
 */
export const CONDITION_BUDGET = { operators: 290, length: 4_000 } as const

/**
 * The condition that the item still holds `expected`'s attributes (its key aside), as far as one
 * condition can say. First the version attribute, which every write of this store changes (an
 * outsider's item has none: the first replace adds one, and that must fail all others, so then
 * it must still be absent); then the record's own fields and the body text, each as the item
 * holds it or still absent (so that a record field added from outside fails it too), and the
 * rest in name order, each compared whole or not at all, while the budget lasts. On an item of
 * more attributes than that (about 130), an outsider's in-place edit of one left out goes
 * unnoticed.
 */
export function sameItemCondition(
  expected: Attributes,
  comparison: Comparison,
  budget: ConditionBudget = CONDITION_BUDGET,
): Condition {
  const builder = new ConditionBuilder(comparison)
  const version = expected[VERSION_ATTRIBUTE]
  if (version) builder.equal(builder.name(VERSION_ATTRIBUTE), version)
  else builder.absent(builder.name(VERSION_ATTRIBUTE))
  for (const name of compared(expected)) {
    const mark = builder.mark()
    const value = expected[name]
    // A record field the item lacks must still be absent: added from outside (a console's
    // UpdateItem that pauses the job), it would otherwise be dropped by this write.
    if (value === undefined) builder.absent(builder.name(name))
    else builder.equal(builder.name(name), value)
    if (!builder.within(budget)) builder.rollBack(mark)
  }
  return builder
}

/** What a condition may hold: operators and functions, and characters of expression. */
export interface ConditionBudget {
  readonly operators: number
  readonly length: number
}

/**
 * The attributes to compare besides the version, in the order they matter: the record's own
 * fields and the body text, each as it is or as absent; then the rest of the item, by name.
 */
function compared(expected: Attributes): string[] {
  const first: readonly string[] = [...RECORD_FIELDS, BODY_ATTRIBUTE]
  const rest = Object.keys(expected)
    .filter((name) => name !== VERSION_ATTRIBUTE && !first.includes(name))
    .sort()
  return [
    ...first.filter((name) => Object.hasOwn(expected, name)),
    ...first.filter((name) => !Object.hasOwn(expected, name)),
    ...rest,
  ]
}

/** Whether comparing `item` leaf by leaf would differ from comparing it whole. */
export function hasMapsOrLists(item: Attributes): boolean {
  return Object.values(item).some((value) => value.M !== undefined || value.L !== undefined)
}

interface Mark {
  readonly clauses: number
  readonly operators: number
  readonly names: number
  readonly values: number
}

class ConditionBuilder implements Condition {
  readonly clauses: string[] = []
  readonly names: Record<string, string> = {}
  readonly values: Attributes = {}
  readonly #comparison: Comparison
  readonly #nameIds = new Map<string, string>()
  readonly #valueIds = new Map<string, string>()
  /** Operators and functions in the clauses, the ANDs between them aside. */
  #operators = 0

  constructor(comparison: Comparison) {
    this.#comparison = comparison
  }

  /** Where the condition stands, to roll back to. */
  mark(): Mark {
    return {
      clauses: this.clauses.length,
      operators: this.#operators,
      names: this.#nameIds.size,
      values: this.#valueIds.size,
    }
  }

  /** Forgets every clause and placeholder added since `mark`: DynamoDB refuses unused ones. */
  rollBack(mark: Mark): void {
    this.clauses.length = mark.clauses
    this.#operators = mark.operators
    for (const [name, id] of [...this.#nameIds].slice(mark.names)) {
      this.#nameIds.delete(name)
      delete this.names[id]
    }
    for (const [text, id] of [...this.#valueIds].slice(mark.values)) {
      this.#valueIds.delete(text)
      delete this.values[id]
    }
  }

  /** Whether the clauses joined with AND stay within `budget`. */
  within(budget: ConditionBudget): boolean {
    const joins = Math.max(this.clauses.length - 1, 0)
    const length = this.clauses.reduce((sum, clause) => sum + clause.length, joins * ' AND '.length)
    return this.#operators + joins <= budget.operators && length <= budget.length
  }

  /** The placeholder of an attribute or map key name (names may hold any character). */
  name(name: string): string {
    let id = this.#nameIds.get(name)
    if (id === undefined) {
      id = `#a${this.#nameIds.size}`
      this.#nameIds.set(name, id)
      this.names[id] = name
    }
    return id
  }

  equal(path: string, value: AttributeValue): void {
    if (this.#comparison === Comparison.Leaves && value.M !== undefined) {
      const entries = Object.entries(value.M)
      this.#shaped(path, 'M', entries.length)
      for (const [key, element] of entries) this.equal(`${path}.${this.name(key)}`, element)
    } else if (this.#comparison === Comparison.Leaves && value.L !== undefined) {
      this.#shaped(path, 'L', value.L.length)
      for (const [index, element] of value.L.entries()) this.equal(`${path}[${index}]`, element)
    } else {
      this.#push(`${path} = ${this.#value(value)}`, 1)
    }
  }

  /** A map or list of this size: without the type, an empty map would match an empty string. */
  #shaped(path: string, type: 'M' | 'L', size: number): void {
    this.#push(`attribute_type(${path}, ${this.#value({ S: type })})`, 1)
    this.#push(`size(${path}) = ${this.#value({ N: String(size) })}`, 2)
  }

  /** The attribute at `path` must not exist. */
  absent(path: string): void {
    this.#push(`attribute_not_exists(${path})`, 1)
  }

  #push(clause: string, operators: number): void {
    this.clauses.push(clause)
    this.#operators += operators
  }

  /** One placeholder per distinct value: many leaves share a few values (sizes, types, 0). */
  #value(value: AttributeValue): string {
    const text = JSON.stringify(value)
    let id = this.#valueIds.get(text)
    if (id === undefined) {
      id = `:v${this.#valueIds.size}`
      this.#valueIds.set(text, id)
      this.values[id] = value
    }
    return id
  }
}
