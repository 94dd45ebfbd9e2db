import { App } from 'aws-cdk-lib'
import { Match, Template } from 'aws-cdk-lib/assertions'
import { describe, expect, it } from 'vitest'
import { ReportingStack } from '../../infra/examples/existing-stack.js'
import { LOCK_ENV } from '../../lib/config.js'
import { FIXTURE_ENTRY, nagFindings } from './support.js'

const app = new App({ context: { 'aws:cdk:bundling-stacks': [] }, analyticsReporting: false })
const stack = new ReportingStack(app, 'Reporting', { reportsEntry: FIXTURE_ENTRY })
const template = Template.fromStack(stack)

describe('the "add to an existing stack" example', () => {
  it('wires the existing function and keeps the locks in the existing bucket', () => {
    template.resourceCountIs('AWS::S3::Bucket', 1)
    template.hasResourceProperties('AWS::Lambda::Function', {
      Environment: {
        Variables: {
          [LOCK_ENV.bucket]: { Ref: Match.stringLikeRegexp('^Jobs') },
          [LOCK_ENV.keyPrefix]: 'locks/',
        },
      },
    })
    template.hasResourceProperties('AWS::S3::BucketPolicy', {
      PolicyDocument: {
        Statement: Match.arrayWith([
          Match.objectLike({
            Effect: 'Deny',
            Action: 's3:PutObject',
            Condition: Match.objectLike({ Null: Match.anyValue() }),
          }),
        ]),
      },
    })
    const expressions = Object.values(
      template.findResources('AWS::Scheduler::Schedule') as Record<
        string,
        { Properties: { ScheduleExpression: string } }
      >,
    ).map((s) => s.Properties.ScheduleExpression)
    expect(expressions).toEqual(['rate(1 hour)', 'cron(30 23 L * ? *)'])
  })

  it('adds no cdk-nag finding of its own: what is left belongs to the resources the stack already had', () => {
    expect(nagFindings(app)).toEqual([
      { rule: 'AwsSolutions-S1', path: 'Reporting/Jobs/Resource' },
      {
        rule: 'AwsSolutions-IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/AWSLambdaBasicExecutionRole]',
        path: 'Reporting/Reports/ServiceRole/Resource',
      },
    ])
  })
})
