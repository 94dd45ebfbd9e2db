import type { IConstruct } from 'constructs'

// aws-cdk-lib's own `ValidationError` is `@internal` and its constructor changed between 2.x
// releases, so constructs outside aws-cdk-lib cannot build one. Its public `Errors.isValidationError()`
// recognises errors by these two global symbols, which have been stable across 2.x: carrying them
// lets tooling that asks CDK "is this a validation error?" get the right answer for ours too.
const CONSTRUCT_ERROR_SYMBOL = Symbol.for('@aws-cdk/core.SynthesisError')
const VALIDATION_ERROR_SYMBOL = Symbol.for('@aws-cdk/core.ValidationError')

/**
 * Props that can never deploy, reported at synth time with the path of the construct they were
 * given to. `name` is `'ValidationError'`, and `Errors.isValidationError()` from aws-cdk-lib
 * accepts it, like the errors aws-cdk-lib's own constructs throw.
 */
export class SingletonValidationError extends Error {
  override readonly name = 'ValidationError'
  /** The path of the construct whose props failed, e.g. `Stack/NightlyReport`. */
  readonly constructPath: string

  constructor(message: string, scope: IConstruct) {
    super(`${message} (at ${scope.node.path})`)
    this.constructPath = scope.node.path
    Object.defineProperty(this, CONSTRUCT_ERROR_SYMBOL, { value: true })
    Object.defineProperty(this, VALIDATION_ERROR_SYMBOL, { value: true })
  }
}
