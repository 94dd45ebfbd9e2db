// LockBucket and LockTable are one kind of thing to the constructs that schedule jobs: an
// ILockStore, used through its members alone (no class test anywhere in infra/).
import { readdirSync, readFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { Token } from 'aws-cdk-lib'
import { describe, expect, it } from 'vitest'
import { type ILockStore, LockBucket, LockTable } from '../../infra/index.js'
import { testStack } from './support.js'

const infra = fileURLToPath(new URL('../../infra/', import.meta.url))

describe('ILockStore', () => {
  const stack = testStack()
  const keyed = new LockTable(stack, 'Keyed', { partitionKey: 'lock_id' })
  const stores: readonly [string, ILockStore, string, string, string[]][] = [
    ['LockBucket', new LockBucket(stack, 'Bucket'), 's3', '--bucket', []],
    ['LockTable', new LockTable(stack, 'Table'), 'dynamodb', '--table', []],
    ['LockTable with its own key', keyed, 'dynamodb', '--table', ['--partition-key', 'lock_id']],
  ]

  it.each(stores)(
    '%s names itself to exec, and its kind as the runtime does',
    (_, store, kind, flag, rest) => {
      const [given, name, ...more] = store.execOptions()
      expect(given).toBe(flag)
      expect(Token.isUnresolved(name)).toBe(true) // the bucket's or table's name, known at deploy
      expect(more).toEqual(rest)
      expect(store.kind).toBe(kind)
    },
  )

  it('is the only way the scheduled constructs tell the stores apart', () => {
    for (const file of readdirSync(infra).filter((name) => name.endsWith('.ts'))) {
      const code = readFileSync(`${infra}${file}`, 'utf8')
      expect(code, file).not.toMatch(/instanceof Lock(Bucket|Table)\b/)
    }
  })
})
