/**
 * The price list every cost in the benchmark uses: AWS list prices in us-east-1 as published in
 * 2026 (on-demand DynamoDB after its November 2024 cut), in US dollars per million requests (on
 * DynamoDB, per million request units).
 * Storage, data transfer and Lambda time are left out: requests are what the peers differ in.
 */

/**
 * S3 Standard: PUT, COPY, POST and LIST $0.005 per 1,000 requests; GET and others $0.0004 per
 * 1,000; DELETE free. A refused conditional write (412) is a request like any other.
 * `HeadBucket` and `ListObjectsV2` are here for requests a lock might send besides its
 * protocol's (to learn the store's clock, say).
 */
export const S3_PRICES = {
  PutObject: 5,
  GetObject: 0.4,
  HeadObject: 0.4,
  DeleteObject: 0,
  HeadBucket: 0.4,
  ListObjectsV2: 5,
} as const

/**
 * DynamoDB on demand: $0.625 per million write request units, $0.125 per million read request
 * units. A write consumes a unit per KB of the item, a strongly consistent read a unit per 4 KB
 * (an eventually consistent one half), and a conditional write whose condition fails still
 * consumes its units. So these prices are per unit: the job rows price the units the engine
 * reports (peers/units.ts), as a lambda-singleton record that holds its history is about 4 KB
 * (4 units a write); dynamodb-lock-client's items and the lock-level rows' records (no history)
 * are under 1 KB, one unit per request.
 */
export const DYNAMODB_PRICES = {
  PutItem: 0.625,
  UpdateItem: 0.625,
  DeleteItem: 0.625,
  GetItem: 0.125,
  /** Control-plane requests are not billed. */
  DescribeTable: 0,
} as const

/** What `counts` (requests by operation) cost at `prices`, in US dollars per million repetitions. */
export function costPerMillion(
  prices: Readonly<Record<string, number>>,
  counts: ReadonlyMap<string, number>,
  who: string,
): number {
  let dollars = 0
  for (const [operation, count] of counts) {
    const price = prices[operation]
    if (price === undefined) throw new Error(`no price for ${who} ${operation}`)
    dollars += count * price
  }
  return dollars
}
