import { once } from 'node:events'
import { Worker } from 'node:worker_threads'
import { CreateTableCommand, DynamoDBClient } from '@aws-sdk/client-dynamodb'

/**
 * dynalite (DynamoDB on LevelDB, in memory) started in this process on a free port, with one
 * table keyed as LockTable keys it. It differs from DynamoDB where users meet it: it cannot
 * compare map and list attributes with `=`, ignores `ReturnValuesOnConditionCheckFailure`, and
 * has no transactions.
 */
export interface DynaliteEngine {
  readonly endpoint: string
  readonly client: DynamoDBClient
  readonly tableName: string
  /** Another client, on this engine or at `endpoint` (one attempt per call, like the library's default). */
  newClient(endpoint?: string): DynamoDBClient
  close(): Promise<void>
}

/**
 * In a worker thread of its own, without Vitest's `--conditions import`: under it, dynalite's
 * `require('big.js')` loads big.js's ES module, which is no constructor, and dynalite then
 * refuses every number ("cannot be converted to a numeric value").
 */
const SERVE = `
const { parentPort } = require('node:worker_threads')
const server = require('dynalite')({ createTableMs: 0, deleteTableMs: 0, updateTableMs: 0 })
server.listen(0, '127.0.0.1', () => parentPort.postMessage(server.address().port))
parentPort.on('message', () => server.close(() => process.exit(0)))
`

export async function startDynalite(): Promise<DynaliteEngine> {
  const worker = new Worker(SERVE, { eval: true, execArgv: [] })
  const [port] = (await once(worker, 'message')) as [number]
  const endpoint = `http://127.0.0.1:${port}`
  const clients: DynamoDBClient[] = []
  const newClient = (at = endpoint) => {
    const client = new DynamoDBClient({
      endpoint: at,
      region: 'us-east-1',
      credentials: { accessKeyId: 'dynalite', secretAccessKey: 'dynalite' },
      maxAttempts: 1,
    })
    clients.push(client)
    return client
  }
  const client = newClient()
  const tableName = 'lambda-singleton-locks'
  await client.send(
    new CreateTableCommand({
      TableName: tableName,
      BillingMode: 'PAY_PER_REQUEST',
      AttributeDefinitions: [{ AttributeName: 'pk', AttributeType: 'S' }],
      KeySchema: [{ AttributeName: 'pk', KeyType: 'HASH' }],
    }),
  )
  return {
    endpoint,
    client,
    tableName,
    newClient,
    close: async () => {
      for (const each of clients) each.destroy()
      worker.postMessage('close')
      await once(worker, 'exit')
    },
  }
}
