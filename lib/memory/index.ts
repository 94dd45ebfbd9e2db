// `lambda-singleton/memory`: an in-memory store, for unit tests of handlers and of the protocol.
export { MemoryLockStore, type MemoryLockStoreOptions } from './store.js'
