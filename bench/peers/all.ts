/**
 * Every peer the comparison drives, by a name a new process can be given: the bench makes them
 * here, and so does a process of its own (new-process.ts), from the same plain setup.
 */
import { type DynamoDBEngine, dynamodbEngine, type S3Engine, s3EngineOn } from '../engines.js'
import type { Contender } from './contender.js'

export const PEER_IDS = [
  'singleton-s3',
  'singleton-dynamodb',
  'naive-s3',
  'lock-client',
  'powertools',
] as const
export type PeerId = (typeof PEER_IDS)[number]

/** What every peer is made from: plain data, passed to a new process as JSON. */
export interface PeerSetup {
  readonly s3Endpoint: string
  readonly bucket: string
  readonly dynamodbEndpoint: string
  readonly tables: { readonly singleton: string; readonly lockClient: string; readonly powertools: string }
  /** dynamodb-lock-client's lease. */
  readonly leaseMs: number
}

/** Makes one peer, importing only its own module. */
export async function makePeer(id: PeerId, setup: PeerSetup): Promise<Contender> {
  const s3 = (): S3Engine => s3EngineOn(setup.s3Endpoint, setup.bucket)
  const dynamodb = (): DynamoDBEngine => dynamodbEngine(setup.dynamodbEndpoint)
  switch (id) {
    case 'singleton-s3':
      return (await import('./singleton.js')).singletonOnS3(s3())
    case 'singleton-dynamodb':
      return (await import('./singleton.js')).singletonOnDynamoDB(dynamodb(), setup.tables.singleton)
    case 'naive-s3':
      return (await import('./naive-s3.js')).naiveS3Lock(s3())
    case 'lock-client':
      return (await import('./lock-client.js')).lockClient(dynamodb(), setup.tables.lockClient, setup.leaseMs)
    case 'powertools':
      return (await import('./powertools.js')).powertoolsIdempotency(dynamodb(), setup.tables.powertools)
  }
}
