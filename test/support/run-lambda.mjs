// Runs a bundled Lambda handler in this (separate) Node process with lambda-local, as the
// Lambda runtime would, and prints its result as one JSON line. Usage: run-lambda.mjs BUNDLE EVENT_JSON
import lambdaLocal from 'lambda-local'

const [bundle, event] = process.argv.slice(2)
lambdaLocal.setLogger({ log() {}, info() {}, warn() {}, error() {}, transports: [] })
const result = await lambdaLocal.execute({
  lambdaPath: bundle,
  esm: true,
  event: JSON.parse(event ?? '{}'),
  timeoutMs: 30_000,
  verboseLevel: 0,
})
process.stdout.write(`${JSON.stringify({ result })}\n`)
