// The bundle sizes docs/install.md states are measured, not remembered: Middy handlers with and without
// singleton(), with and without S3 code of their own, bundled as ScheduledSingletonFunction
// bundles them (esbuild, ESM, minified, for an S3 lock). The figures must stay within
// a tolerance of what this measures, so that they cannot drift from the code or the SDK.
import { readFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { beforeAll, describe, expect, it } from 'vitest'
import { bundleLikeTheConstruct } from '../support/bundle.js'

const root = fileURLToPath(new URL('../..', import.meta.url))
const readme = readFileSync(`${root}docs/install.md`, 'utf8')
const fixture = (name: string) => `test/docs/fixtures/bundle-size/${name}.ts`
const kB = (bytes: number) => bytes / 1000

/** A figure docs/install.md states, in kB, found by the words around it. */
function stated(pattern: RegExp): number {
  const match = pattern.exec(readme.replace(/\s+/g, ' '))
  if (!match?.[1]) throw new Error(`docs/install.md states no figure matching ${pattern}`)
  return Number(match[1])
}

/** Within 10 %, or 3 kB for small figures: bundles move a little with every SDK release. */
function expectNear(statedKb: number, measuredKb: number, what: string): void {
  const tolerance = Math.max(3, measuredKb * 0.1)
  expect(
    Math.abs(statedKb - measuredKb),
    `${what}: docs/install.md says ${statedKb} kB, measured ${measuredKb.toFixed(1)} kB`,
  ).toBeLessThanOrEqual(tolerance)
}

let sizes: Record<'middy' | 'middyS3' | 'singleton' | 'singletonS3', number>
let libraryOwn: number

beforeAll(async () => {
  const [middy, middyS3, singleton, singletonS3] = await Promise.all(
    ['middy', 'middy-s3', 'singleton', 'singleton-s3'].map((name) =>
      bundleLikeTheConstruct(fixture(name), 's3'),
    ),
  )
  const bytes = (bundle: { code: string } | undefined) => Buffer.byteLength(bundle?.code ?? '')
  sizes = {
    middy: bytes(middy),
    middyS3: bytes(middyS3),
    singleton: bytes(singleton),
    singletonS3: bytes(singletonS3),
  }
  // The library's own code: what its sources (lib/) put into the bundle.
  const output = Object.values(singletonS3?.metafile.outputs ?? {}).find((o) => o.entryPoint !== undefined)
  libraryOwn = Object.entries(output?.inputs ?? {})
    .filter(([path]) => path.startsWith('lib/'))
    .reduce((sum, [, input]) => sum + input.bytesInOutput, 0)
}, 60_000)

describe('the bundle sizes of docs/install.md', () => {
  it('states what the library adds to a handler that already uses the S3 client', () => {
    expectNear(
      stated(/adds about (\d+) kB to a minified handler bundle that already uses `@aws-sdk\/client-s3`/),
      kB(sizes.singletonS3 - sizes.middyS3),
      'added to an S3 handler',
    )
  })

  it("states how much of that is the library's own code", () => {
    expectNear(stated(/\((\d+) kB of it the library's own code/), kB(libraryOwn), "the library's own code")
  })

  it('states what a handler that does not use S3 yet grows by, the S3 client included', () => {
    expectNear(
      stated(/and about (\d+) kB to one that does not use S3 yet/),
      kB(sizes.singleton - sizes.middy),
      'added to a handler without S3',
    )
  })

  it('names the SDK version it was measured with', () => {
    const { version } = JSON.parse(
      readFileSync(`${root}node_modules/@aws-sdk/client-s3/package.json`, 'utf8'),
    ) as { version: string }
    const [major, minor] = version.split('.')
    const named = /with `@aws-sdk\/client-s3` (\d+\.\d+)/.exec(readme.replace(/\s+/g, ' '))?.[1]
    expect(named).toBe(`${major}.${minor}`)
  })
})
