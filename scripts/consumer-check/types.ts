// Type assertions a consumer's compiler must enforce from the published declarations alone:
// without @types/aws-lambda and with skipLibCheck (cdk init sets it), a type that resolves to
// `any` would let every line marked @ts-expect-error compile, and tsc then fails on the marker.
import middy from '@middy/core'
import { type LambdaContext, type SingletonContext, withSingleton } from 'lambda-singleton'
import { singleton } from 'lambda-singleton/middy'

declare const context: SingletonContext

// @ts-expect-error the fencing token is a number
export const wrongToken: string = context.singleton.token
// @ts-expect-error the function name is a string
export const wrongName: number = context.functionName
export const token: number = context.singleton.token

export const plain = withSingleton(async (_event: unknown, given) => {
  // @ts-expect-error the fencing token is a number, also as withSingleton infers the context
  const wrong: string = given.singleton.token
  return { wrong, request: given.awsRequestId }
})

export const withMiddy = middy<unknown, unknown, Error, SingletonContext>()
  .use(singleton())
  .handler(async (_event, given) => {
    // @ts-expect-error the fencing token is a number, also behind Middy
    const wrong: string = given.singleton.token
    return wrong
  })

// @ts-expect-error a LambdaContext has no such field: its type is declared, not any
export const missing: LambdaContext['noSuchField'] = 1
