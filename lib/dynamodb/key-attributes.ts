import { RECORD_FIELDS } from '../core/record.js'
import { BODY_ATTRIBUTE, VERSION_ATTRIBUTE } from './item.js'

/**
 * Why a lock table's key attribute (partition or sort key) may not be called `name`, or
 * undefined when it may. A lock item holds the record's fields and the store's own attributes
 * beside its key, so a key named like one of them clashes with it at the first write that
 * carries it: every acquisition writes `owner`, the first checkpoint `state`. Free of the SDK,
 * so that the constructs can check their props with it too.
 */
export function keyAttributeClash(name: string): string | undefined {
  if ((RECORD_FIELDS as readonly string[]).includes(name)) {
    return `"${name}" is a field of the lock record, which every lock item holds beside its key`
  }
  if (name === VERSION_ATTRIBUTE || name === BODY_ATTRIBUTE) {
    return `"${name}" is an attribute the DynamoDB store writes beside the record's fields`
  }
  return undefined
}
