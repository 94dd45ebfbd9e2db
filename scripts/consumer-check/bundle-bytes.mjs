// What the library adds to a minified handler bundle, from esbuild's metafile: the bytes of the
// output that come from lambda-singleton's own files, beside the whole bundle's.
//
//   node bundle-bytes.mjs META_JSON LABEL
import { readFileSync } from 'node:fs'

const [metafile, label = 'bundle'] = process.argv.slice(2)
const meta = JSON.parse(readFileSync(metafile, 'utf8'))
for (const [file, output] of Object.entries(meta.outputs)) {
  if (file.endsWith('.map')) continue
  const inputs = Object.entries(output.inputs)
  const library = inputs
    .filter(([input]) => input.includes('node_modules/lambda-singleton/'))
    .reduce((sum, [, input]) => sum + input.bytesInOutput, 0)
  const sdk = inputs
    .filter(([input]) => /node_modules\/@(aws-sdk|smithy|aws-crypto)\//.test(input))
    .reduce((sum, [, input]) => sum + input.bytesInOutput, 0)
  const kB = (bytes) => `${(bytes / 1000).toFixed(1)} kB`
  console.log(
    `bundle-bytes: ${label}: ${kB(output.bytes)} in all, lambda-singleton ${kB(library)} (${library} bytes), AWS SDK ${kB(sdk)}`,
  )
}
