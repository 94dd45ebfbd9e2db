import { Stack, Validations } from 'aws-cdk-lib'
import type { IConstruct } from 'constructs'

type CfnValue = string | number | boolean | null | undefined | CfnValue[] | { [key: string]: CfnValue }

/**
 * Renders a resolved CloudFormation value the way cdk-nag names it in a finding id
 * (`Fn::GetAtt` as `<Id.Attr>`, `Ref` as `<Id>`, joins concatenated), so an acknowledgement can
 * name exactly one finding instead of silencing a whole rule.
 */
function flatten(value: CfnValue): string {
  if (value === undefined) return ''
  if (typeof value === 'string') return value.replace(/\$\{/g, '<').replace(/\}/g, '>')
  if (typeof value === 'object' && value !== null && !Array.isArray(value)) {
    const join = value['Fn::Join']
    if (Array.isArray(join)) {
      const [delimiter, items] = join as [string, CfnValue[]]
      return items.map(flatten).join(delimiter)
    }
    if (value['Fn::Sub'] !== undefined) return flatten(value['Fn::Sub'])
    const getAtt = value['Fn::GetAtt']
    if (Array.isArray(getAtt)) return `<${flatten(getAtt[0])}.${flatten(getAtt[1])}>`
    if (value['Fn::ImportValue'] !== undefined) return flatten(value['Fn::ImportValue'])
    if (value.Ref !== undefined) return `<${flatten(value.Ref)}>`
  }
  return JSON.stringify(value)
}

/**
 * Acknowledges cdk-nag's AwsSolutions-IAM5 finding for one wildcard resource in a policy under
 * `on`, and only that one: any other wildcard still shows up.
 */
export function acknowledgeWildcardResource(on: IConstruct, resourceArn: string, reason: string): void {
  const resolved = Stack.of(on).resolve(resourceArn) as CfnValue
  Validations.of(on).acknowledge({ id: `AwsSolutions-IAM5[Resource::${flatten(resolved)}]`, reason })
}

/** Acknowledges one whole-resource cdk-nag rule (no finding suffix) on `on` and below. */
export function acknowledgeRule(on: IConstruct, id: string, reason: string): void {
  Validations.of(on).acknowledge({ id, reason })
}

/**
 * Acknowledges cdk-nag's AwsSolutions-IAM5 finding for one wildcard action (e.g.
 * `kms:GenerateDataKey*`) in a policy under `on`, and only that one.
 */
export function acknowledgeWildcardAction(on: IConstruct, action: string, reason: string): void {
  Validations.of(on).acknowledge({ id: `AwsSolutions-IAM5[Action::${action}]`, reason })
}
