/**
 * Brings IAM statements written three ways (a synthesized CloudFormation template, a SAM
 * template, Terraform's `aws_iam_policy_document`) to one canonical form, with every reference
 * to a resource replaced by the placeholder the docs use (`arn:aws:s3:::LOCK_BUCKET`…), so that
 * the docs' snippets can be compared with what the constructs synthesize.
 */

/** The resources the snippets refer to, by role. */
export type Role = 'LockBucket' | 'LockTable' | 'Function' | 'LogGroup' | 'Key'

/** What `Ref` and each attribute of a resource stand for in the docs. */
const PLACEHOLDERS: Record<Role, Record<string, string>> = {
  LockBucket: { Ref: 'LOCK_BUCKET', Arn: 'arn:aws:s3:::LOCK_BUCKET' },
  LockTable: { Ref: 'LOCK_TABLE', Arn: 'arn:aws:dynamodb:REGION:ACCOUNT:table/LOCK_TABLE' },
  Function: { Ref: 'FUNCTION_NAME', Arn: 'arn:aws:lambda:REGION:ACCOUNT:function:FUNCTION_NAME' },
  // CloudFormation's Arn of a log group ends in `:*`; Terraform's does not.
  LogGroup: {
    Ref: '/aws/lambda/FUNCTION_NAME',
    Arn: 'arn:aws:logs:REGION:ACCOUNT:log-group:/aws/lambda/FUNCTION_NAME:*',
  },
  Key: { Ref: 'KEY_ID', Arn: 'arn:aws:kms:REGION:ACCOUNT:key/KEY_ID' },
}
const PSEUDO: Record<string, string> = {
  'AWS::Region': 'REGION',
  'AWS::AccountId': 'ACCOUNT',
  'AWS::Partition': 'aws',
  'AWS::StackName': 'STACK',
}

/** A statement with every list sorted and every single value made a list. */
export interface Statement {
  readonly Effect: string
  readonly Action: readonly string[]
  /** Absent in a trust policy. */
  readonly Resource?: readonly string[]
  readonly Principal?: Readonly<Record<string, readonly string[]>>
  readonly Condition?: Readonly<Record<string, Readonly<Record<string, readonly string[]>>>>
}

type Json = string | number | boolean | null | Json[] | { [key: string]: Json }
const list = (value: unknown): string[] => (Array.isArray(value) ? value : [value]).map(String).sort()
const mapValues = <T, U>(record: Record<string, T>, f: (value: T) => U): Record<string, U> =>
  Object.fromEntries(Object.entries(record).map(([key, value]) => [key, f(value)]))

/** A statement in IAM's own JSON shape (the docs' files, CloudFormation, SAM), intrinsics resolved. */
export function canonical(statement: Json): Statement {
  const s = statement as Record<string, Json>
  const principal = s.Principal as Record<string, Json> | undefined
  const condition = s.Condition as Record<string, Record<string, Json>> | undefined
  return {
    Effect: String(s.Effect),
    Action: list(s.Action),
    ...(s.Resource === undefined ? {} : { Resource: list(s.Resource) }),
    ...(principal ? { Principal: mapValues(principal, list) } : {}),
    ...(condition ? { Condition: mapValues(condition, (c) => mapValues(c, list)) } : {}),
  }
}

/** A statement of Terraform's `aws_iam_policy_document`, as @cdktf/hcl2json reads it. */
export function canonicalTerraform(
  statement: Record<string, Json>,
  resolve: (s: string) => string,
): Statement {
  const principals = (statement.principals ?? []) as Array<{ type: string; identifiers: string[] }>
  const conditions = (statement.condition ?? []) as Array<{
    test: string
    variable: string
    values: string[]
  }>
  const condition: Record<string, Record<string, string[]>> = {}
  for (const c of conditions)
    condition[c.test] = { ...condition[c.test], [c.variable]: list(c.values.map(resolve)) }
  return {
    Effect: String(statement.effect ?? 'Allow'),
    Action: list(statement.actions),
    ...(statement.resources === undefined
      ? {}
      : { Resource: list((statement.resources as string[]).map(resolve)) }),
    ...(principals.length > 0
      ? { Principal: Object.fromEntries(principals.map((p) => [p.type, list(p.identifiers)])) }
      : {}),
    ...(conditions.length > 0 ? { Condition: condition } : {}),
  }
}

/**
 * Resolves CloudFormation intrinsics (`Ref`, `Fn::GetAtt`, `Fn::Join`, `Fn::Sub`) to strings,
 * naming each logical id by its role in `roles`; anything else is an error, so that a snippet
 * that refers to something unexpected fails loudly. The test stack's account and region become
 * the docs' ACCOUNT and REGION.
 */
export function resolveCloudFormation(value: Json, roles: Readonly<Record<string, Role>>): Json {
  const attribute = (id: string, attr: string): string => {
    if (PSEUDO[id] !== undefined) return PSEUDO[id]
    const role = roles[id]
    const placeholder = role && PLACEHOLDERS[role][attr]
    if (!placeholder) throw new Error(`a reference to ${id}.${attr}, which the docs do not name`)
    return placeholder
  }
  const walk = (v: Json): Json => {
    if (typeof v === 'string')
      return v.replaceAll('111111111111', 'ACCOUNT').replaceAll('eu-west-1', 'REGION')
    if (Array.isArray(v)) return v.map(walk)
    if (v === null || typeof v !== 'object') return v
    const [key, arg] = Object.entries(v)[0] ?? []
    if (key === 'Ref') return attribute(String(arg), 'Ref')
    if (key === 'Fn::GetAtt') {
      const [id, attr] = Array.isArray(arg) ? arg.map(String) : String(arg).split('.')
      return attribute(String(id), String(attr))
    }
    if (key === 'Fn::Join') {
      const [separator, parts] = arg as [string, Json[]]
      return parts.map((part) => String(walk(part))).join(separator)
    }
    if (key === 'Fn::Sub') {
      const template = String(Array.isArray(arg) ? arg[0] : arg)
      return template.replace(/\$\{([^}.]+)(?:\.([^}]+))?\}/g, (_, id: string, attr?: string) =>
        attribute(id, attr ?? 'Ref'),
      )
    }
    return mapValues(v, walk)
  }
  return walk(value)
}

/** Resolves the `${…}` references of a Terraform string, by the reference's resource role. */
export function terraformResolver(roles: Readonly<Record<string, [Role, string]>>): (s: string) => string {
  return (s) =>
    s.replace(/\$\{([^}]+)\}/g, (_, reference: string) => {
      if (reference === 'data.aws_region.current.name') return 'REGION'
      if (reference === 'data.aws_caller_identity.current.account_id') return 'ACCOUNT'
      const known = roles[reference]
      if (!known) throw new Error(`a reference to ${reference}, which the docs do not name`)
      const [role, attribute] = known
      // Terraform's arn of a log group has no `:*`: the snippet adds it where IAM needs it.
      return role === 'LogGroup' && attribute === 'Arn'
        ? (PLACEHOLDERS.LogGroup.Arn as string).replace(/:\*$/, '')
        : (PLACEHOLDERS[role][attribute] as string)
    })
}
