// `lambda-singleton/dynamodb`: the lock store on a DynamoDB table, on its own subpath so that
// users of the S3 store never load this SDK.
export { UnrepresentableError } from './attributes.js'
export {
  DynamoDBLockStore,
  type DynamoDBLockStoreOptions,
  type DynamoDBLockStoreSettings,
  type DynamoDBSdkNotInstalled,
} from './store.js'
