// Preloaded (NODE_OPTIONS=--import=…/hide-packages.mjs) to run a program as if the packages named
// in LAMBDA_SINGLETON_TEST_HIDDEN_PACKAGES (comma-separated) were not installed: importing one
// fails with the error Node gives for a package that is missing, ERR_MODULE_NOT_FOUND.
import { registerHooks } from 'node:module'

const hidden = (process.env.LAMBDA_SINGLETON_TEST_HIDDEN_PACKAGES ?? '').split(',').filter(Boolean)

registerHooks({
  resolve(specifier, context, nextResolve) {
    if (hidden.some((name) => specifier === name || specifier.startsWith(`${name}/`))) {
      const error = new Error(`Cannot find package '${specifier}' imported from ${context.parentURL}`)
      error.code = 'ERR_MODULE_NOT_FOUND'
      throw error
    }
    return nextResolve(specifier, context)
  },
})
