import type { AttributeValue } from '@aws-sdk/client-dynamodb'
import type { Attributes } from './attributes.js'
import { VERSION_ATTRIBUTE } from './item.js'

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
 * The condition that the item holds exactly `expected`'s attributes (its key aside): any change
 * of them by anyone fails it. An outsider's item has no version: the first replace adds one,
 * and that must fail all others, so then the version must still be absent.
 */
export function sameItemCondition(expected: Attributes, comparison: Comparison): Condition {
  const builder = new ConditionBuilder(comparison)
  for (const [name, value] of Object.entries(expected)) builder.equal(builder.name(name), value)
  if (!(VERSION_ATTRIBUTE in expected))
    builder.clauses.push(`attribute_not_exists(${builder.name(VERSION_ATTRIBUTE)})`)
  return builder
}

/** Whether comparing `item` leaf by leaf would differ from comparing it whole. */
export function hasMapsOrLists(item: Attributes): boolean {
  return Object.values(item).some((value) => value.M !== undefined || value.L !== undefined)
}

class ConditionBuilder implements Condition {
  readonly clauses: string[] = []
  readonly names: Record<string, string> = {}
  readonly values: Attributes = {}
  readonly #comparison: Comparison
  readonly #nameIds = new Map<string, string>()
  readonly #valueIds = new Map<string, string>()

  constructor(comparison: Comparison) {
    this.#comparison = comparison
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
      this.clauses.push(`${path} = ${this.#value(value)}`)
    }
  }

  /** A map or list of this size: without the type, an empty map would match an empty string. */
  #shaped(path: string, type: 'M' | 'L', size: number): void {
    this.clauses.push(
      `attribute_type(${path}, ${this.#value({ S: type })})`,
      `size(${path}) = ${this.#value({ N: String(size) })}`,
    )
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
