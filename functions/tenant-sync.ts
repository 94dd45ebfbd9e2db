/**
 * Tenant sync: folds each tenant's incoming change files (`tenants/<tenant>/inbox/*.json`) into
 * its snapshot (`tenants/<tenant>/snapshot.json`), incrementally.
 *
 * One schedule per tenant, named after it; the lock key comes from the event, so tenants sync
 * in parallel while each tenant has at most one sync at a time. The snapshot is written with
 * `fencedPut`, which stamps the run's fencing token on it and refuses to overwrite a snapshot
 * written by a newer run: a sync that stalled and lost its lease cannot roll a tenant back.
 * Progress (the last inbox file applied) is a cursor in the lock object, kept across ticks, so
 * each run carries on where the last one stopped, even one that crashed or timed out.
 */
import { GetObjectCommand, ListObjectsV2Command, NoSuchKey, S3Client } from '@aws-sdk/client-s3'
import middy from '@middy/core'
import type { Context } from 'aws-lambda'
import type { JsonValue } from 'lambda-singleton'
import { type SingletonContext, type SingletonScheduleEvent, singleton } from 'lambda-singleton/middy'
import { fencedPut } from 'lambda-singleton/s3'

/** Where tenant inboxes and snapshots live (set by the example stack). */
export const DATA_BUCKET_ENV = 'DATA_BUCKET'

/** Inbox files applied per run, so a large backlog is worked off over several runs. */
const MAX_FILES_PER_RUN = 200

const TENANT_PATTERN = /^[a-z0-9][a-z0-9-]{0,62}$/

/** One change: upsert the record with this id, or delete it. */
interface Change {
  readonly id: string
  readonly deleted?: boolean
  readonly [field: string]: JsonValue | undefined
}

export interface Snapshot {
  readonly tenant: string
  readonly records: Record<string, JsonValue>
  /** The last inbox file folded in. */
  readonly lastFile: string | undefined
  readonly syncedAt: string
  /** The fencing token of the run that wrote this snapshot. */
  readonly token: number
}

const s3 = new S3Client({})

/** The tenant a tick is for: the schedule's name. Refuses anything that is not a plain tenant id. */
export function tenantOf(event: SingletonScheduleEvent): string {
  const tenant = event?.schedule
  if (typeof tenant !== 'string' || !TENANT_PATTERN.test(tenant)) {
    throw new Error(`tenant-sync: no valid tenant in the event's schedule name: ${JSON.stringify(tenant)}`)
  }
  return tenant
}

/** The lock key below the prefix: one lock per tenant. */
export function lockKeyOf(event: SingletonScheduleEvent, _context: Context): string {
  return `tenant-sync/${tenantOf(event)}`
}

async function tenantSync(event: SingletonScheduleEvent, context: SingletonContext) {
  const bucket = process.env[DATA_BUCKET_ENV]
  if (!bucket) throw new Error(`${DATA_BUCKET_ENV} is not set`)
  const tenant = tenantOf(event)
  const { signal, cursor, saveCursor } = context.singleton
  const snapshotKey = `tenants/${tenant}/snapshot.json`

  const previous = await readJson<Snapshot>(bucket, snapshotKey, signal)
  // The cursor is saved after the snapshot, so it may lag behind it, never lead it.
  const startAfter = cursorFile(cursor) ?? previous?.lastFile
  const files = await inboxFiles(bucket, tenant, startAfter, signal)
  if (files.length === 0) return { tenant, applied: 0 }

  const records: Record<string, JsonValue> = { ...previous?.records }
  for (const file of files) {
    const changes = (await readJson<{ changes?: Change[] }>(bucket, file, signal))?.changes ?? []
    for (const change of changes) applyChange(records, change)
  }
  signal.throwIfAborted()
  // Awaited only now: the reads above overlapped the token's wait (often the whole of it).
  const token = await context.singleton.fencingToken({ signal })

  const lastFile = files.at(-1)
  const snapshot: Snapshot = { tenant, records, lastFile, syncedAt: new Date().toISOString(), token }
  await fencedPut({
    s3,
    bucket,
    key: snapshotKey,
    token,
    body: JSON.stringify(snapshot),
    contentType: 'application/json',
    metadata: { tenant },
  })
  await saveCursor({ lastFile: lastFile ?? null })
  return { tenant, applied: files.length, records: Object.keys(records).length, token }
}

function applyChange(records: Record<string, JsonValue>, change: Change): void {
  if (typeof change?.id !== 'string') return
  const { id, deleted, ...fields } = change
  if (deleted) delete records[id]
  else records[id] = fields as Record<string, JsonValue>
}

function cursorFile(cursor: JsonValue | undefined): string | undefined {
  if (typeof cursor !== 'object' || cursor === null || Array.isArray(cursor)) return undefined
  return typeof cursor.lastFile === 'string' ? cursor.lastFile : undefined
}

async function inboxFiles(
  bucket: string,
  tenant: string,
  startAfter: string | undefined,
  signal: AbortSignal,
): Promise<string[]> {
  const files: string[] = []
  let continuationToken: string | undefined
  do {
    const page = await s3.send(
      new ListObjectsV2Command({
        Bucket: bucket,
        Prefix: `tenants/${tenant}/inbox/`,
        StartAfter: startAfter,
        ContinuationToken: continuationToken,
      }),
      { abortSignal: signal },
    )
    for (const object of page.Contents ?? []) {
      if (object.Key?.endsWith('.json')) files.push(object.Key)
    }
    continuationToken = page.IsTruncated ? page.NextContinuationToken : undefined
  } while (continuationToken && files.length < MAX_FILES_PER_RUN)
  return files.slice(0, MAX_FILES_PER_RUN)
}

async function readJson<T>(bucket: string, key: string, signal: AbortSignal): Promise<T | undefined> {
  try {
    const object = await s3.send(new GetObjectCommand({ Bucket: bucket, Key: key }), { abortSignal: signal })
    return JSON.parse((await object.Body?.transformToString()) ?? 'null') as T
  } catch (error) {
    if (error instanceof NoSuchKey) return undefined
    throw error
  }
}

export const handler = middy<SingletonScheduleEvent, unknown, Error, SingletonContext>()
  .use(singleton<SingletonScheduleEvent>({ key: lockKeyOf }))
  .handler(tenantSync)
