import { MemoryLockStore } from '../../lib/memory/store.js'
import { describeLockStoreContract } from './contract.js'

describeLockStoreContract('memory', () => {
  // One store is the whole namespace: every "other process" shares it.
  const store = new MemoryLockStore()
  return {
    store: () => store,
    putRaw: async (key, body) => void store.putRaw(key, body),
    deleteRaw: async (key) => store.delete(key),
  }
})
