import { fileURLToPath } from 'node:url'
import { App, type PolicyViolation, Stack, Validations } from 'aws-cdk-lib'
import { AwsSolutionsChecks } from 'cdk-nag'
import type { IConstruct } from 'constructs'

/** An entry file for construct tests; bundling is skipped there, so its content does not matter. */
export const FIXTURE_ENTRY = fileURLToPath(new URL('./fixtures/handler.ts', import.meta.url))

/**
 * A stack in an app that skips asset bundling (empty `aws:cdk:bundling-stacks`), so construct
 * tests do not run esbuild; the example-app test bundles for real.
 */
export function testStack(id = 'Test'): Stack {
  const app = new App({ context: { 'aws:cdk:bundling-stacks': [] }, analyticsReporting: false })
  return new Stack(app, id, { env: { account: '111111111111', region: 'eu-west-1' } })
}

/** Runs `fn` and returns what it threw, failing when it does not throw. */
export function thrown(fn: () => unknown): Error {
  try {
    fn()
  } catch (error) {
    if (error instanceof Error) return error
    throw new Error(`threw a non-Error: ${String(error)}`)
  }
  throw new Error('expected an error, nothing was thrown')
}

export interface Finding {
  readonly rule: string
  readonly path: string
}

/** cdk-nag's AwsSolutions findings under `scope` that are not acknowledged. */
export function nagFindings(scope: IConstruct): Finding[] {
  return flatten(new AwsSolutionsChecks().validateScope(scope).violations)
}

/** Every AwsSolutions finding under `scope`, as if nothing were acknowledged. */
export function rawNagFindings(scope: IConstruct): Finding[] {
  const pack = new AwsSolutionsChecks()
  // The pack asks this private method whether a finding is acknowledged; answer "no" to see them all.
  Object.defineProperty(pack, 'isAcknowledged', { value: () => false })
  return flatten(pack.validateScope(scope).violations)
}

/** The AwsSolutions acknowledgements recorded under `scope`: rule id, where, and the reason. */
export function nagAcknowledgements(scope: IConstruct): Array<Finding & { reason: string }> {
  const out: Array<Finding & { reason: string }> = []
  for (const construct of scope.node.findAll()) {
    for (const entry of construct.node.metadata) {
      if (entry.type !== Validations.ACKNOWLEDGED_RULES_METADATA_KEY) continue
      for (const [id, reason] of Object.entries(entry.data as Record<string, string>)) {
        const rule = id.replace(/^annotation::/i, '')
        if (rule.startsWith('AwsSolutions-')) out.push({ rule, path: construct.node.path, reason })
      }
    }
  }
  return out
}

function flatten(violations: readonly PolicyViolation[]): Finding[] {
  return violations.flatMap((v) =>
    v.violatingResources.map((r) => ({
      rule: v.ruleName,
      path: r.constructPath ?? r.resourceLogicalId ?? '?',
    })),
  )
}
