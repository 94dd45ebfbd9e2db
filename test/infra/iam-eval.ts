import type { Template } from 'aws-cdk-lib/assertions'

/**
 * A small evaluator of a synthesized role's identity policies, for template tests that ask "may
 * this role do X to that lock?" rather than match strings. It reads the role's statements as IAM
 * would for one request: an Allow whose action, resource and conditions all match, and no Deny that
 * matches. It knows only what the lock grants use (wildcards in actions and resources, and
 * `ForAllValues:StringEquals`/`StringLike` on `dynamodb:LeadingKeys`); anything else throws, so a
 * grant it cannot read is never silently judged.
 */

type CfnValue = string | number | boolean | null | CfnValue[] | { [key: string]: CfnValue }

interface Statement {
  readonly Effect: 'Allow' | 'Deny'
  readonly Action?: string | string[]
  readonly Resource?: CfnValue
  readonly Condition?: Record<string, Record<string, string | string[]>>
  readonly [other: string]: unknown
}

/** One request: an action on a resource, with the DynamoDB partition keys it touches, if any. */
export interface Request {
  readonly action: string
  /** The resource's ARN as `render` writes it, e.g. `<LocksBucket.Arn>/locks/Test/A`. */
  readonly resource: string
  readonly leadingKeys?: readonly string[]
}

/** An S3 object of a bucket made in the template, as a request names it. */
export const s3Object = (bucketId: string, key: string): string => `<${bucketId}.Arn>/${key}`

/** A table made in the template, as a request names it. */
export const tableArn = (tableId: string): string => `<${tableId}.Arn>`

/**
 * Renders a CloudFormation value as a string: `Fn::GetAtt` as `<Id.Attr>`, `Ref` as `<Id>`, joins
 * concatenated. Tokens never contain `*` or `?`, so a rendered ARN keeps only the policy's own
 * wildcards.
 */
export function render(value: CfnValue): string {
  if (typeof value === 'string') return value
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new Error(`cannot render ${JSON.stringify(value)}`)
  }
  const join = value['Fn::Join']
  if (Array.isArray(join)) {
    const [delimiter, parts] = join as [string, CfnValue[]]
    return parts.map(render).join(delimiter)
  }
  const getAtt = value['Fn::GetAtt']
  if (Array.isArray(getAtt)) return `<${String(getAtt[0])}.${String(getAtt[1])}>`
  if (typeof value.Ref === 'string') return `<${value.Ref}>`
  throw new Error(`cannot render ${JSON.stringify(value)}`)
}

/** IAM's `*` (any run of characters) and `?` (one character) matching. */
function globMatch(pattern: string, text: string, caseInsensitive = false): boolean {
  const source = pattern
    .split('')
    .map((c) => (c === '*' ? '.*' : c === '?' ? '.' : c.replace(/[\\^$.|+()[\]{}]/g, '\\$&')))
    .join('')
  return new RegExp(`^${source}$`, caseInsensitive ? 'is' : 's').test(text)
}

function conditionHolds(condition: Statement['Condition'], request: Request): boolean {
  for (const [operator, entries] of Object.entries(condition ?? {})) {
    for (const [key, expected] of Object.entries(entries)) {
      if (key !== 'dynamodb:LeadingKeys') throw new Error(`unsupported condition key ${key}`)
      const values = [expected].flat()
      const matches =
        operator === 'ForAllValues:StringEquals'
          ? (v: string) => values.includes(v)
          : operator === 'ForAllValues:StringLike'
            ? (v: string) => values.some((p) => globMatch(p, v))
            : undefined
      if (!matches) throw new Error(`unsupported condition operator ${operator}`)
      // ForAllValues over an empty set holds: the reason a lock grant names only item actions,
      // which always carry the partition key.
      if (!(request.leadingKeys ?? []).every(matches)) return false
    }
  }
  return true
}

function statementMatches(statement: Statement, request: Request): boolean {
  for (const unsupported of ['NotAction', 'NotResource', 'NotPrincipal']) {
    if (unsupported in statement) throw new Error(`unsupported element ${unsupported}`)
  }
  const actions = [statement.Action ?? []].flat()
  if (!actions.some((a) => globMatch(a, request.action, true))) return false
  const resources = (Array.isArray(statement.Resource) ? statement.Resource : [statement.Resource ?? '']).map(
    (r) => render(r as CfnValue),
  )
  if (!resources.some((r) => globMatch(r, request.resource))) return false
  return conditionHolds(statement.Condition, request)
}

/** AWS managed policies that grant CloudWatch Logs actions only: no lock action can match them. */
const LOGS_ONLY_POLICIES = [':iam::aws:policy/service-role/AWSLambdaBasicExecutionRole']

/** Every identity-policy statement attached to the role with this logical id. */
export function roleStatements(template: Template, roleId: string): Statement[] {
  const attached = Object.values(template.findResources('AWS::IAM::Policy')) as Array<{
    Properties: { Roles?: CfnValue[]; PolicyDocument: { Statement: Statement[] } }
  }>
  const role = template.findResources('AWS::IAM::Role')[roleId] as
    | {
        Properties: {
          ManagedPolicyArns?: unknown
          Policies?: Array<{ PolicyDocument: { Statement: Statement[] } }>
        }
      }
    | undefined
  if (!role) throw new Error(`no role ${roleId} in the template`)
  const managed = [role.Properties.ManagedPolicyArns ?? []].flat() as CfnValue[]
  const unknown = managed.map(render).filter((arn) => !LOGS_ONLY_POLICIES.some((name) => arn.endsWith(name)))
  if (unknown.length > 0)
    throw new Error(`${roleId} has managed policies this evaluator cannot read: ${unknown}`)
  return [
    ...attached
      .filter((p) => (p.Properties.Roles ?? []).some((r) => render(r) === `<${roleId}>`))
      .flatMap((p) => p.Properties.PolicyDocument.Statement),
    ...(role.Properties.Policies ?? []).flatMap((p) => p.PolicyDocument.Statement),
  ]
}

/** Whether the role's identity policies allow `request`: an Allow matches and no Deny does. */
export function roleMay(template: Template, roleId: string, request: Request): boolean {
  const statements = roleStatements(template, roleId).filter((s) => statementMatches(s, request))
  return statements.some((s) => s.Effect === 'Allow') && !statements.some((s) => s.Effect === 'Deny')
}

/**
 * What a lock holder needs, per store: the role may read and write `key` in that bucket or table
 * (on a table, writing is PutItem and the take's UpdateItem both).
 */
export function mayUseLock(
  template: Template,
  roleId: string,
  store: { readonly bucketId: string } | { readonly tableId: string },
  key: string,
): { read: boolean; write: boolean } {
  if ('bucketId' in store) {
    const resource = s3Object(store.bucketId, key)
    return {
      read: roleMay(template, roleId, { action: 's3:GetObject', resource }),
      write: roleMay(template, roleId, { action: 's3:PutObject', resource }),
    }
  }
  const resource = tableArn(store.tableId)
  const leadingKeys = [key]
  return {
    read: roleMay(template, roleId, { action: 'dynamodb:GetItem', resource, leadingKeys }),
    write:
      roleMay(template, roleId, { action: 'dynamodb:PutItem', resource, leadingKeys }) &&
      roleMay(template, roleId, { action: 'dynamodb:UpdateItem', resource, leadingKeys }),
  }
}
