// Type assertions a consumer's compiler must enforce from the published declarations alone:
// without @types/aws-lambda and with skipLibCheck (cdk init sets it), a type that resolves to
// `any` would let every line marked @ts-expect-error compile, and tsc then fails on the marker.
import middy from '@middy/core'
import { type LambdaContext, type SingletonContext, withSingleton } from 'lambda-singleton'
import { singleton } from 'lambda-singleton/middy'

declare const context: SingletonContext

// @ts-expect-error the fencing token resolves to a number
export const wrongToken: Promise<string> = context.singleton.fencingToken()
// @ts-expect-error there is no synchronous token: it is awaited once the store's clock has passed it
export const syncToken: number = context.singleton.token
// @ts-expect-error the function name is a string
export const wrongName: number = context.functionName
export const token: Promise<number> = context.singleton.fencingToken()

export const plain = withSingleton(async (_event: unknown, given) => {
  // @ts-expect-error the fencing token resolves to a number, also as withSingleton infers the context
  const wrong: string = await given.singleton.fencingToken()
  return { wrong, request: given.awsRequestId }
})

export const withMiddy = middy<unknown, unknown, Error, SingletonContext>()
  .use(singleton())
  .handler(async (_event, given) => {
    // @ts-expect-error the fencing token resolves to a number, also behind Middy
    const wrong: string = await given.singleton.fencingToken()
    return wrong
  })

// @ts-expect-error a LambdaContext has no such field: its type is declared, not any
export const missing: LambdaContext['noSuchField'] = 1
