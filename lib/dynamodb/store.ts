import {
  type AttributeValue,
  DynamoDBClient,
  GetItemCommand,
  PutItemCommand,
  UpdateItemCommand,
} from '@aws-sdk/client-dynamodb'
import { sendClassified, sharedClient, unexpectedAnswer } from '../aws/classify.js'
import { errorFields } from '../aws/errors.js'
import { dated, requestTimeoutMs, type SdkClient } from '../aws/send.js'
import { LockOptionsError, LockStoreError } from '../core/errors.js'
import {
  type ListKeysOptions,
  type LockKeyListing,
  type LockStore,
  type ReadResult,
  ReadStatus,
  type StoreCallOptions,
  type StoreLimits,
  type TakeRequest,
  type TakeResult,
  TakeStatus,
  type WriteResult,
  WriteStatus,
} from '../core/store.js'
import { type Attributes, MAX_ITEM_DEPTH, UnrepresentableError, unstorableAttribute } from './attributes.js'
import { Comparison, type Condition, hasMapsOrLists, sameItemCondition } from './condition.js'
import { DYNAMODB_ERRORS, DynamoDBErrorKind, keySchemaError } from './errors.js'
import {
  BODY_ATTRIBUTE,
  type ItemLayout,
  itemFor,
  keyOf,
  type ReadItem,
  readItem,
  VERSION_ATTRIBUTE,
  withoutKey,
} from './item.js'
import { keyAttributeClash } from './key-attributes.js'
import { takenItem, takeUpdate } from './take.js'

/**
 * The options, unless @aws-sdk/client-dynamodb (an optional peer dependency) is not installed:
 * then a consumer's compiler, under `skipLibCheck`, takes the SDK's types for `any` and would let
 * `new DynamoDBLockStore(...)` type-check only to fail at run time. `[T] extends [string]` holds
 * for `any` alone, so then no object fits, and tsc names the package in the missing property.
 */
export type DynamoDBLockStoreOptions = DynamoDBLockStoreSettings &
  ([DynamoDBClient] extends [string] ? DynamoDBSdkNotInstalled : unknown)

/** What the options demand when the SDK is missing: its name, as a property no object has. */
export interface DynamoDBSdkNotInstalled {
  readonly '@aws-sdk/client-dynamodb is not installed: npm install @aws-sdk/client-dynamodb': never
}

/** The store's settings, as `DynamoDBLockStoreOptions` takes them when the SDK is installed. */
export interface DynamoDBLockStoreSettings {
  /**
   * The client to send with. Give it `maxAttempts: 1` unless you know why not: the lock retries
   * by itself, and an SDK retry of a conditional write makes its answer ambiguous.
   * @default a client from the environment, shared by all stores, with `maxAttempts: 1`
   */
  readonly client?: DynamoDBClient
  readonly tableName: string
  /** Name of the table's partition key (type S); the lock key is its value. @default 'pk' */
  readonly partitionKey?: string
  /** For a table with a sort key (type S): its name and the value every lock item gets. */
  readonly sortKey?: { readonly name: string; readonly value: string }
  /** Timeout of each DynamoDB request, in ms. @default 5000 */
  readonly requestTimeoutMs?: number
}

/** DynamoDB's `Date` header has a resolution of one second. */
const DYNAMODB_CLOCK_RESOLUTION_MS = 1_000
/** Keys whose recent items a store remembers, to condition replaces without reading first. */
const KNOWN_ITEMS_LIMIT = 1_000
/** Recent items remembered per key. */
const KNOWN_ITEMS_PER_KEY = 4

type DynamoDBCommand = GetItemCommand | PutItemCommand | UpdateItemCommand

/** A replace whose condition failed on the very item it named (see `#replaceIfSame`). */
const UNCHANGED = Symbol('unchanged')

const defaultClient = sharedClient((config) => new DynamoDBClient(config))

/**
 * The lock store on DynamoDB conditional writes: one item per lock, the record's fields as
 * native attributes. `create` is a PutItem on `attribute_not_exists(<partition key>)`; `replace`
 * is a PutItem conditioned on the attributes of the item the etag names, so that any change of
 * them by anyone fails it: all of them when one condition can hold them (DynamoDB caps it at 300
 * operators and 4 KB), else the version, the record's own fields and as many others as fit (see
 * `sameItemCondition`). A field only added from outside, by UpdateItem, goes unnoticed.
 * `take` is a conditional UpdateItem over a released record (see `takeUpdate`), which a role
 * without dynamodb:UpdateItem makes a read instead.
 * Needs neither transactions nor `ReturnValuesOnConditionCheckFailure` (uses it when answered).
 * On an engine whose `=` fails on maps and lists (dynalite), compares them leaf by leaf instead;
 * an engine that fails the condition even so gets a `LockStoreError` that says so.
 */
export class DynamoDBLockStore implements LockStore, LockKeyListing {
  readonly clockResolutionMs = DYNAMODB_CLOCK_RESOLUTION_MS
  /** An item nests at most 32 levels, and numbers have a range: checked before a checkpoint is written. */
  readonly limits: StoreLimits
  readonly client: DynamoDBClient
  readonly tableName: string
  /** Name of the table's partition key, whose value is the lock key. */
  readonly partitionKey: string
  readonly requestTimeoutMs: number
  readonly #layout: ItemLayout
  /**
   * The last few items written or read per key, by etag: what a replace of that etag must find.
   * A few, not one: answers to concurrent calls arrive in any order, and a late answer with an
   * older item must not make us forget the newer one our next replace will name.
   */
  readonly #known = new Map<string, Map<string, Attributes>>()
  /** Leaves once this engine is found to fail `=` on maps and lists (dynalite); never back. */
  #comparison: Comparison = Comparison.Whole
  /** Set by the first AccessDenied of a take's UpdateItem: takes read from then on; never back. */
  #updateDenied = false

  constructor(options: DynamoDBLockStoreOptions) {
    if (typeof options.tableName !== 'string' || options.tableName.length === 0) {
      throw new LockOptionsError('tableName must be a non-empty string')
    }
    const partitionKey = options.partitionKey ?? 'pk'
    if (typeof partitionKey !== 'string' || partitionKey.length === 0) {
      throw new LockOptionsError('partitionKey must be a non-empty string')
    }
    const { sortKey } = options
    if (sortKey && (!sortKey.name || typeof sortKey.value !== 'string' || sortKey.name === partitionKey)) {
      throw new LockOptionsError('sortKey needs a name (other than the partition key) and a string value')
    }
    refuseClash('partitionKey', partitionKey)
    if (sortKey) refuseClash('sortKey.name', sortKey.name)
    const timeout = requestTimeoutMs(options.requestTimeoutMs)
    this.client = options.client ?? defaultClient()
    this.tableName = options.tableName
    this.partitionKey = partitionKey
    this.requestTimeoutMs = timeout
    this.#layout = { partitionKey, ...(sortKey && { sortKey: { name: sortKey.name, value: sortKey.value } }) }
    const reserved = [VERSION_ATTRIBUTE, BODY_ATTRIBUTE, partitionKey, ...(sortKey ? [sortKey.name] : [])]
    this.limits = {
      recordDepth: MAX_ITEM_DEPTH,
      // The item keeps these beside the record's fields: a field named so could not be written.
      unstorable: (field, value) =>
        reserved.includes(field)
          ? `"${field}" is an attribute this store keeps beside the record's fields (its version, its text or its key)`
          : unstorableAttribute(field, value),
    }
  }

  /** Stores sending through one client share what their locks learn of DynamoDB's clock. */
  get clockSource(): object {
    return this.client
  }

  /**
   * Every lock key in the table that starts with `prefix`, sorted (`LockKeyListing`): a Scan,
   * which needs dynamodb:Scan and which locking never sends. Its code is loaded only when a
   * listing is asked for.
   */
  async listKeys(prefix: string, options?: ListKeysOptions): Promise<string[]> {
    const { listDynamoDBKeys } = await import('./list-keys.js')
    const { partitionKey, sortKey } = this.#layout
    return listDynamoDBKeys(
      { client: this.client, tableName: this.tableName, partitionKey, sortKey },
      prefix,
      options,
    )
  }

  async read(key: string, options: StoreCallOptions = {}): Promise<ReadResult> {
    const { item, date } = await this.#get(key, options)
    if (!item) return { status: ReadStatus.Absent, ...date }
    const { body, etag } = this.#learn(key, item)
    return { status: ReadStatus.Found, body, etag, ...date }
  }

  /**
   * DynamoDB's date, from an eventually consistent GetItem of the key attribute alone: half the
   * read units of a read (consistency does not matter to a date).
   */
  async probeDate(key: string, options: StoreCallOptions = {}): Promise<number | undefined> {
    const command = new GetItemCommand({
      TableName: this.tableName,
      Key: keyOf(this.#layout, key),
      ProjectionExpression: '#key',
      ExpressionAttributeNames: { '#key': this.#layout.partitionKey },
    })
    const call = await this.#send(key, command, options)
    return call.date.serverDate
  }

  async create(key: string, body: string, options: StoreCallOptions = {}): Promise<WriteResult> {
    const absent = { clauses: ['attribute_not_exists(#key)'], names: {}, values: {} }
    return (await this.#put(key, body, absent, options)).result
  }

  /**
   * Takes a released lock in one UpdateItem (`LockStore.take`, see `takeUpdate`). DynamoDB
   * answers with one item: the one before (`ALL_OLD`); the one written is computed from it as the
   * update computed it (`takenItem`), and remembered, so that the holder's next write needs no
   * read. It has no text (`lock_body`): it reads by its attributes, named by their digest, until
   * that write puts the whole record again. A role that may not UpdateItem (granted GetItem and
   * PutItem only, as before `take` existed) fails nothing: its first refusal makes this store
   * read instead, and the lock goes on from that read as without `take`.
   */
  async take(key: string, take: TakeRequest, options: StoreCallOptions = {}): Promise<TakeResult> {
    if (this.#updateDenied) return this.#takeByReading(key, options)
    const update = takeUpdate(this.#layout.partitionKey, take)
    const command = new UpdateItemCommand({
      TableName: this.tableName,
      Key: keyOf(this.#layout, key),
      ...update,
      ReturnValues: 'ALL_OLD',
      ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
    })
    const call = await this.#send(key, command, options).catch((error: unknown) => {
      if (!isAccessDenied(error)) throw error
      return undefined
    })
    if (!call) {
      this.#updateDenied = true
      return this.#takeByReading(key, options)
    }
    if (call.kind === 'ok') {
      const old = (call.output as { Attributes?: Attributes }).Attributes
      if (!old) throw this.#unexpected(key, 'UpdateItem', new Error('the answer carries no item (ALL_OLD)'))
      const written = takenItem(old, update)
      const previous = readItem(this.#layout, old)
      if (previous.unrepresentable) return this.#giveBack(key, old, written, options)
      const { body, etag } = readItem(this.#layout, written)
      this.#remember(key, etag, written)
      return { status: TakeStatus.Taken, body, etag, previous: previous.body, ...call.date }
    }
    if (call.kind === DynamoDBErrorKind.Conflict) {
      throw new LockStoreError(`${this.#request('UpdateItem', key)} met a transaction in progress`, {
        key,
        retryable: true,
        cause: call.error,
      })
    }
    // A failed condition comes with the item as it is; none means there is none (an engine
    // that does not send it, dynalite, makes the lock create, fail and read: one request more).
    const item = (call.error as { Item?: Attributes }).Item
    const current: ReadResult = item
      ? { status: ReadStatus.Found, ...this.#learn(key, item), ...call.date }
      : { status: ReadStatus.Absent, ...call.date }
    return { status: TakeStatus.NotTaken, current, ...call.date }
  }

  /**
   * Puts back `old`, which a take wrote over (`written`) though no lock can read it (a set, a
   * binary value: the lock refuses it with `LockCorruptedError`), so that the take writes nothing
   * there, as a read first would not have: a PutItem of the very item, on the condition that the
   * take's write is still there (its version, token and owner). Answers with what is there then.
   */
  async #giveBack(
    key: string,
    old: Attributes,
    written: Attributes,
    options: StoreCallOptions,
  ): Promise<TakeResult> {
    const command = new PutItemCommand({
      TableName: this.tableName,
      Item: old,
      ConditionExpression: '#version = :version AND #token = :token AND #owner = :owner',
      ExpressionAttributeNames: { '#version': VERSION_ATTRIBUTE, '#token': 'token', '#owner': 'owner' },
      ExpressionAttributeValues: {
        ':version': written[VERSION_ATTRIBUTE] as AttributeValue,
        ':token': written.token as AttributeValue,
        ':owner': written.owner as AttributeValue,
      },
      ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
    })
    const call = await this.#send(key, command, options)
    if (call.kind === DynamoDBErrorKind.Conflict) {
      throw new LockStoreError(
        `${this.#request('PutItem', key)}, giving back an item a take wrote over, met a transaction in progress`,
        { key, retryable: true, cause: call.error },
      )
    }
    // Put back, or written since by someone else (none: deleted): what is there now.
    const item = call.kind === 'ok' ? old : (call.error as { Item?: Attributes }).Item
    const current: ReadResult = item
      ? { status: ReadStatus.Found, ...this.#learn(key, item), ...call.date }
      : { status: ReadStatus.Absent, ...call.date }
    return { status: TakeStatus.NotTaken, current, ...call.date }
  }

  /** A take by a role that may not UpdateItem: what a consistent read finds, taken by no one. */
  async #takeByReading(key: string, options: StoreCallOptions): Promise<TakeResult> {
    const current = await this.read(key, options)
    return { status: TakeStatus.NotTaken, current, ...dated(current.serverDate) }
  }

  async replace(
    key: string,
    body: string,
    etag: string,
    options: StoreCallOptions = {},
  ): Promise<WriteResult> {
    let expected = this.#known.get(key)?.get(etag)
    if (!expected) {
      // Not an item this store saw lately: find out what the etag stands for now.
      const { item, date } = await this.#get(key, options)
      if (!item) return { status: WriteStatus.Absent, ...date }
      if (this.#learn(key, item).etag !== etag) return { status: WriteStatus.PreconditionFailed, ...date }
      expected = item
    }
    const first = await this.#replaceIfSame(key, body, etag, expected, options)
    if (first !== UNCHANGED) return first
    // The engine failed a condition that the item it holds meets: dynalite's `=` is false for
    // every map and list. Compared leaf by leaf, the same condition holds there.
    if (this.#comparison === Comparison.Leaves || !hasMapsOrLists(withoutKey(this.#layout, expected))) {
      throw this.#conditionNotUnderstood(key, etag)
    }
    this.#comparison = Comparison.Leaves
    const second = await this.#replaceIfSame(key, body, etag, expected, options)
    if (second !== UNCHANGED) return second
    throw this.#conditionNotUnderstood(key, etag)
  }

  /**
   * A PutItem on the condition that the item is still `expected` (named `etag`). `UNCHANGED`
   * when the engine failed the condition and yet holds that very item, which DynamoDB never
   * does: it sends the item with a failed condition, and this store's items change with each write.
   */
  async #replaceIfSame(
    key: string,
    body: string,
    etag: string,
    expected: Attributes,
    options: StoreCallOptions,
  ): Promise<WriteResult | typeof UNCHANGED> {
    const same = sameItemCondition(withoutKey(this.#layout, expected), this.#comparison)
    const condition = { ...same, clauses: ['attribute_exists(#key)', ...same.clauses] }
    const { result, current } = await this.#put(key, body, condition, options)
    if (result.status !== WriteStatus.PreconditionFailed) return result
    if (current) {
      this.#learn(key, current)
      return result
    }
    // No item in the answer: either there is none, or the engine does not send it (dynalite).
    const { item } = await this.#get(key, options)
    if (!item) return { status: WriteStatus.Absent, ...dated(result.serverDate) }
    return this.#learn(key, item).etag === etag ? UNCHANGED : result
  }

  /** The engine refused, even leaf by leaf, a condition that the item it holds meets. */
  #conditionNotUnderstood(key: string, etag: string): LockStoreError {
    return new LockStoreError(
      `${this.#request('PutItem', key)} was answered ConditionalCheckFailedException, yet the item ` +
        `still holds every attribute the condition names (etag ${etag}), compared whole and leaf by ` +
        'leaf: this engine does not evaluate condition expressions as DynamoDB does; nothing was written',
      { key, retryable: false },
    )
  }

  /**
   * A conditional PutItem of `body`: the result, and the item the engine sent with a failed
   * condition (DynamoDB does, on `ReturnValuesOnConditionCheckFailure`; dynalite does not).
   */
  async #put(
    key: string,
    body: string,
    condition: Condition,
    options: StoreCallOptions,
  ): Promise<{ result: WriteResult; current?: Attributes }> {
    let written: { item: Attributes; etag: string }
    try {
      written = itemFor(this.#layout, key, body)
    } catch (error) {
      if (!(error instanceof UnrepresentableError)) throw error
      throw new LockStoreError(
        `DynamoDB cannot store the body for "${key}" in ${this.tableName} as it is: ${error.message}`,
        { key, retryable: false, cause: error },
      )
    }
    const hasValues = Object.keys(condition.values).length > 0
    const command = new PutItemCommand({
      TableName: this.tableName,
      Item: written.item,
      ConditionExpression: condition.clauses.join(' AND '),
      ExpressionAttributeNames: { '#key': this.#layout.partitionKey, ...condition.names },
      ...(hasValues && { ExpressionAttributeValues: condition.values }),
      // Saves the read that tells "changed" from "gone" where the engine supports it.
      ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
    })
    const call = await this.#send(key, command, options)
    if (call.kind === 'ok') {
      this.#remember(key, written.etag, written.item)
      return { result: { status: WriteStatus.Written, etag: written.etag, ...call.date } }
    }
    if (call.kind === DynamoDBErrorKind.Conflict)
      return { result: { status: WriteStatus.Conflict, ...call.date } }
    // The SDK may have retried a write whose first try landed: then the failure is our own doing.
    const result = { status: WriteStatus.PreconditionFailed, ambiguous: call.retried, ...call.date }
    const current = (call.error as { Item?: Attributes }).Item
    return current ? { result, current } : { result }
  }

  async #get(
    key: string,
    options: StoreCallOptions,
  ): Promise<{ item?: Attributes; date: { serverDate?: number } }> {
    const command = new GetItemCommand({
      TableName: this.tableName,
      Key: keyOf(this.#layout, key),
      ConsistentRead: true,
    })
    const call = await this.#send(key, command, options)
    if (call.kind !== 'ok') throw this.#unexpected(key, 'GetItem', call.error)
    const item = (call.output as { Item?: Attributes }).Item
    return item ? { item, date: call.date } : { date: call.date }
  }

  /** Reads an item for the core and remembers it, so that a replace of its etag needs no read. */
  #learn(key: string, item: Attributes): ReadItem {
    const read = readItem(this.#layout, item)
    this.#remember(key, read.etag, item)
    return read
  }

  #remember(key: string, etag: string, item: Attributes): void {
    const items = this.#known.get(key) ?? new Map<string, Attributes>()
    items.delete(etag)
    items.set(etag, item)
    if (items.size > KNOWN_ITEMS_PER_KEY) items.delete(items.keys().next().value ?? etag)
    this.#known.delete(key)
    this.#known.set(key, items)
    if (this.#known.size > KNOWN_ITEMS_LIMIT) {
      const oldest = this.#known.keys().next().value
      if (oldest !== undefined) this.#known.delete(oldest)
    }
  }

  /** Sends one command with a timeout; failures the protocol does not act on become `LockStoreError`. */
  async #send(key: string, command: DynamoDBCommand, options: StoreCallOptions) {
    const what = this.#request(operationOf(command), key)
    const call = await sendClassified(this.client as SdkClient<DynamoDBCommand, object>, command, {
      timeoutMs: this.requestTimeoutMs,
      signal: options.signal,
      errors: DYNAMODB_ERRORS,
      what,
      key,
      misconfigured: (error) => keySchemaError(error, this.#layout, what, key),
    })
    return { ...call, date: dated(call.serverDate) }
  }

  #unexpected(key: string, operation: string, error: unknown): LockStoreError {
    return unexpectedAnswer(this.#request(operation, key), key, error)
  }

  /** A request, for messages: `DynamoDB GetItem of "key" in table`. */
  #request(operation: string, key: string): string {
    return `DynamoDB ${operation} of "${key}" in ${this.tableName}`
  }
}

/** A key attribute named like a record field would fail at run time: refuse it now. */
function refuseClash(option: string, name: string): void {
  const clash = keyAttributeClash(name)
  if (clash)
    throw new LockOptionsError(`${option} cannot be "${name}": ${clash}; name the table's key otherwise`)
}

/** The store's error for DynamoDB's AccessDeniedException: the role may not send that request. */
function isAccessDenied(error: unknown): boolean {
  if (!(error instanceof LockStoreError)) return false
  const { name, Code } = errorFields<{ name: unknown; Code: unknown }>(error.cause)
  return (Code ?? name) === 'AccessDeniedException'
}

function operationOf(command: DynamoDBCommand): string {
  if (command instanceof GetItemCommand) return 'GetItem'
  return command instanceof UpdateItemCommand ? 'UpdateItem' : 'PutItem'
}
