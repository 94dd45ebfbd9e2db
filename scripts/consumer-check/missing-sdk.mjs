// A project without the optional @aws-sdk/client-dynamodb that sets LAMBDA_SINGLETON_TABLE: the
// first invocation must say which package is missing (a LockOptionsError), not fail on a bare
// module resolution error. Run from the consumer project, unbundled.
import { withSingleton } from 'lambda-singleton'

process.env.LAMBDA_SINGLETON_TABLE = 'locks'
delete process.env.LAMBDA_SINGLETON_BUCKET
const handler = withSingleton(async () => 'ran', { key: 'consumer-check' })
const error = await handler({}, {}).then(
  (result) => new Error(`it ran: ${result}`),
  (rejected) => rejected,
)
if (error?.name !== 'LockOptionsError' || !/@aws-sdk\/client-dynamodb is not installed/.test(error.message)) {
  console.error('missing-sdk: expected a LockOptionsError naming @aws-sdk/client-dynamodb, got', error)
  process.exit(1)
}
console.log(`missing-sdk: ok: ${error.message}`)
