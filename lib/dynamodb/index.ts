// The DynamoDB backend, on its own subpath so that users of the S3 store never load this SDK.
export { DEFAULT_REQUEST_TIMEOUT_MS } from '../aws/send.js'
export { UnrepresentableError } from './attributes.js'
export { BODY_ATTRIBUTE, VERSION_ATTRIBUTE } from './item.js'
export { DynamoDBLockStore, type DynamoDBLockStoreOptions } from './store.js'
