/**
 * Nightly report: once a night, sums up every tenant's snapshot into `reports/<date>.json`.
 *
 * Runs as a singleton with the defaults: the lock is named after the function, and a run that
 * finds another one in progress (a late retry, a duplicate delivery, a manual invoke) skips
 * instead of producing the report twice. A second delivery of a tick that already completed
 * is skipped as a duplicate. The report is written with `fencedPut`, so a run that lost its
 * lease mid-way can never overwrite the report of the run that took over.
 */
import { GetObjectCommand, ListObjectsV2Command, S3Client } from '@aws-sdk/client-s3'
import middy from '@middy/core'
import { type SingletonContext, type SingletonScheduleEvent, singleton } from 'lambda-singleton/middy'
import { fencedPut } from 'lambda-singleton/s3'

/** Where tenant snapshots are read and reports written (set by the example stack). */
export const DATA_BUCKET_ENV = 'DATA_BUCKET'

const SNAPSHOT_SUFFIX = '/snapshot.json'

export interface TenantSummary {
  readonly tenant: string
  readonly records: number
  readonly syncedAt: string | undefined
}

export interface NightlyReport {
  readonly date: string
  readonly generatedAt: string
  readonly tenants: readonly TenantSummary[]
  readonly totalRecords: number
  /** The fencing token of the run that wrote the report. */
  readonly token: number
}

const s3 = new S3Client({})

async function nightlyReport(event: SingletonScheduleEvent, context: SingletonContext) {
  const bucket = process.env[DATA_BUCKET_ENV]
  if (!bucket) throw new Error(`${DATA_BUCKET_ENV} is not set`)
  const { signal } = context.singleton
  // The tick's nominal time names the report, so a retry of the same tick rewrites the same object.
  const date = reportDate(event.scheduledTime)

  const tenants: TenantSummary[] = []
  for await (const key of snapshotKeys(bucket, signal)) {
    const snapshot = await readJson(bucket, key, signal)
    tenants.push(summarise(key, snapshot))
  }
  signal.throwIfAborted() // lease lost: a newer run owns the report now
  // Awaited only now: the reads above overlapped the token's wait (often the whole of it).
  const token = await context.singleton.fencingToken({ signal })

  const report: NightlyReport = {
    date,
    generatedAt: new Date().toISOString(),
    tenants,
    totalRecords: tenants.reduce((sum, tenant) => sum + tenant.records, 0),
    token,
  }
  const key = `reports/${date}.json`
  await fencedPut({
    s3,
    bucket,
    key,
    token,
    body: JSON.stringify(report, null, 2),
    contentType: 'application/json',
  })
  return { report: key, tenants: tenants.length, totalRecords: report.totalRecords, token }
}

/** `2026-11-21T03:00:00Z` → `2026-11-20`: a report made at night covers the day before. */
export function reportDate(scheduledTime: string | undefined, now: Date = new Date()): string {
  const at = scheduledTime ? new Date(scheduledTime) : now
  if (Number.isNaN(at.getTime())) throw new Error(`not a time: ${JSON.stringify(scheduledTime)}`)
  return new Date(at.getTime() - 86_400_000).toISOString().slice(0, 10)
}

async function* snapshotKeys(bucket: string, signal: AbortSignal): AsyncGenerator<string> {
  let continuationToken: string | undefined
  do {
    const page = await s3.send(
      new ListObjectsV2Command({ Bucket: bucket, Prefix: 'tenants/', ContinuationToken: continuationToken }),
      { abortSignal: signal },
    )
    for (const object of page.Contents ?? []) {
      if (object.Key?.endsWith(SNAPSHOT_SUFFIX)) yield object.Key
    }
    continuationToken = page.IsTruncated ? page.NextContinuationToken : undefined
  } while (continuationToken)
}

async function readJson(bucket: string, key: string, signal: AbortSignal): Promise<unknown> {
  const object = await s3.send(new GetObjectCommand({ Bucket: bucket, Key: key }), { abortSignal: signal })
  const text = (await object.Body?.transformToString()) ?? ''
  return JSON.parse(text) as unknown
}

function summarise(key: string, snapshot: unknown): TenantSummary {
  const tenant = key.slice('tenants/'.length, -SNAPSHOT_SUFFIX.length)
  const fields =
    typeof snapshot === 'object' && snapshot !== null ? (snapshot as Record<string, unknown>) : {}
  const records = fields.records
  return {
    tenant,
    records: typeof records === 'object' && records !== null ? Object.keys(records).length : 0,
    syncedAt: typeof fields.syncedAt === 'string' ? fields.syncedAt : undefined,
  }
}

export const handler = middy<SingletonScheduleEvent, unknown, Error, SingletonContext>()
  .use(singleton<SingletonScheduleEvent>())
  .handler(nightlyReport)
