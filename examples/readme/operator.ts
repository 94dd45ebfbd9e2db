// The operator's side, in code: what `lambda-singleton inspect` and `pause` do at a terminal.
import { LockOperator } from 'lambda-singleton/operator'
import { S3LockStore } from 'lambda-singleton/s3'

const operator = new LockOperator({
  store: new S3LockStore({ bucket: 'my-locks' }),
  key: 'locks/nightly-report',
  operator: 'alice@ops',
})

export async function pauseForMigration() {
  const info = await operator.inspect()
  if (info?.held) console.log(`${info.owner} holds it until ${info.expiresAt.toISOString()}`)
  // The running run finishes; every run after it skips until `resume`.
  await operator.pause({ note: 'migrating the table' })
}
