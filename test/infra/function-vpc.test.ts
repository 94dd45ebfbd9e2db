import { Duration, type Stack } from 'aws-cdk-lib'
import { Template } from 'aws-cdk-lib/assertions'
import * as ec2 from 'aws-cdk-lib/aws-ec2'
import * as s3 from 'aws-cdk-lib/aws-s3'
import { ScheduleExpression } from 'aws-cdk-lib/aws-scheduler'
import { describe, expect, it } from 'vitest'
import { LockBucket, ScheduledSingletonFunction } from '../../infra/index.js'
import { roleMay, roleStatements, s3Object } from './iam-eval.js'
import { FIXTURE_ENTRY, nagAcknowledgements, nagFindings, rawNagFindings, testStack } from './support.js'

const ref = (stack: Stack, construct: { node: { defaultChild?: unknown } }) =>
  stack.getLogicalId(construct.node.defaultChild as never)

/** The ENI actions of AWSLambdaVPCAccessExecutionRole (v3): what Lambda does in the function's VPC. */
const ENI_ACTIONS = [
  'ec2:CreateNetworkInterface',
  'ec2:DescribeNetworkInterfaces',
  'ec2:DescribeSubnets',
  'ec2:DeleteNetworkInterface',
  'ec2:AssignPrivateIpAddresses',
  'ec2:UnassignPrivateIpAddresses',
]

/** A function in an isolated VPC (with flow logs), on a lock bucket that logs its access. */
function vpcSetup() {
  const stack = testStack()
  const vpc = new ec2.Vpc(stack, 'Vpc', {
    natGateways: 0,
    subnetConfiguration: [{ name: 'isolated', subnetType: ec2.SubnetType.PRIVATE_ISOLATED }],
  })
  vpc.addFlowLog('FlowLogs')
  const accessLogs = new s3.Bucket(stack, 'AccessLogs', {
    enforceSSL: true,
    blockPublicAccess: s3.BlockPublicAccess.BLOCK_ALL,
  })
  const lockBucket = new LockBucket(stack, 'Locks', { bucketProps: { serverAccessLogsBucket: accessLogs } })
  const job = new ScheduledSingletonFunction(stack, 'Job', {
    entry: FIXTURE_ENTRY,
    lockBucket,
    lockKey: 'job',
    schedules: [{ name: 'hourly', expression: ScheduleExpression.rate(Duration.hours(1)) }],
    functionProps: { vpc },
  })
  return { stack, job, lockBucket, template: Template.fromStack(stack) }
}

describe('ScheduledSingletonFunction in a VPC', () => {
  const { stack, job, lockBucket, template } = vpcSetup()
  const roleId = ref(stack, job.function.role as never)
  const bucketId = ref(stack, lockBucket.createdBucket as never)

  it('keeps its own role, with no AWS managed policy', () => {
    expect(job.function.role?.node.path).toBe('Test/Job/ServiceRole')
    const role = template.findResources('AWS::IAM::Role')[roleId] as { Properties: Record<string, unknown> }
    expect(role.Properties.ManagedPolicyArns).toBeUndefined()
  })

  it('may manage its network interfaces, which Lambda does in the VPC in its name, and use its lock', () => {
    for (const action of ENI_ACTIONS) {
      expect(roleMay(template, roleId, { action, resource: '*' }), action).toBe(true)
    }
    expect(
      roleMay(template, roleId, { action: 's3:PutObject', resource: s3Object(bucketId, 'locks/job') }),
    ).toBe(true)
    // Not logs:CreateLogGroup, which the managed policies would have given on every log group.
    expect(roleMay(template, roleId, { action: 'logs:CreateLogGroup', resource: '*' })).toBe(false)
    expect(roleMay(template, roleId, { action: 'ec2:RunInstances', resource: '*' })).toBe(false)
    const actions = roleStatements(template, roleId).flatMap((s) => [s.Action ?? []].flat())
    expect(actions.filter((a) => a.startsWith('ec2:')).sort()).toEqual([...ENI_ACTIONS].sort())
  })

  it('is created after the policy that lets Lambda make its network interfaces', () => {
    const fnId = ref(stack, job.function)
    const fn = template.findResources('AWS::Lambda::Function')[fnId] as { DependsOn?: string[] }
    const policies = Object.entries(template.findResources('AWS::IAM::Policy'))
      .filter(([, p]) => JSON.stringify(p).includes('ec2:CreateNetworkInterface'))
      .map(([id]) => id)
    expect(policies).toHaveLength(1)
    expect(fn.DependsOn).toEqual(expect.arrayContaining(policies))
  })

  it('has no unacknowledged AwsSolutions finding', () => {
    expect(nagFindings(stack)).toEqual([])
  })

  it('acknowledges only findings that exist, each with a reason', () => {
    const raw = rawNagFindings(stack)
    for (const ack of nagAcknowledgements(stack)) {
      expect(ack.reason.length).toBeGreaterThan(40)
      expect(raw.some((f) => f.rule === ack.rule && f.path.startsWith(`${ack.path}/`))).toBe(true)
    }
  })
})
