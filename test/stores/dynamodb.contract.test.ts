import { DynamoDBLockStore } from '../../lib/dynamodb/index.js'
import { deleteItem, freshTable, putRawItem, testDynamoDBClient } from '../support/dynamodb.js'
import { type ContractTarget, describeLockStoreContract } from './contract.js'
import { describeTokenAttacks } from './token-attacks.js'

async function target(): Promise<ContractTarget> {
  const client = testDynamoDBClient()
  const tableName = await freshTable(client, 'contract')
  const key = (k: string) => ({ pk: { S: k } })
  const clients = [client]
  return {
    store: () => new DynamoDBLockStore({ client, tableName }),
    putRaw: (k, body) => putRawItem(client, tableName, key(k), body),
    deleteRaw: (k) => deleteItem(client, tableName, key(k)),
    storeAt: (endpoint, requestTimeoutMs) => {
      const elsewhere = testDynamoDBClient({ endpoint })
      clients.push(elsewhere)
      return new DynamoDBLockStore({ client: elsewhere, tableName, requestTimeoutMs })
    },
    // DynamoDB keeps neither the order of an outsider's fields nor the spelling of its numbers.
    outsideBodiesVerbatim: false,
    close: () => {
      for (const each of clients) each.destroy()
    },
  }
}

describeLockStoreContract('DynamoDB', target)
describeTokenAttacks('DynamoDB', target)
