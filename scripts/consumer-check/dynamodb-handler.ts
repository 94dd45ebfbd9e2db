// The consumer check's DynamoDB job: a plain handler behind withSingleton(), on the default store
// (LAMBDA_SINGLETON_TABLE).
import { withSingleton } from 'lambda-singleton'

export const handler = withSingleton(
  async (_event: unknown, context) => {
    context.singleton.signal.throwIfAborted()
    return { token: await context.singleton.fencingToken() }
  },
  { key: 'consumer-check' },
)
