// The consumer check's jest test in the `cdk init` app, run by the template's own `npm test`
// (jest with @swc/jest, CommonJS): it loads `lambda-singleton/cdk` through `require`, synthesizes
// the stack (bundling the handler) and asserts on the template, as a CDK user's first test does.
import { Match, Template } from 'aws-cdk-lib/assertions'
import * as cdk from 'aws-cdk-lib/core'
import { CdkAppStack } from '../lib/cdk-app-stack'

test('the scheduled singleton synthesizes with its lock bucket and its schedule', () => {
  const app = new cdk.App()
  const template = Template.fromStack(new CdkAppStack(app, 'ConsumerCheckStack'))

  template.resourceCountIs('AWS::S3::Bucket', 1)
  template.hasResourceProperties('AWS::Scheduler::Schedule', {
    ScheduleExpression: 'cron(0 3 * * ? *)',
  })
  template.hasResourceProperties('AWS::Lambda::Function', {
    Environment: { Variables: Match.objectLike({ LAMBDA_SINGLETON_BUCKET: Match.anyValue() }) },
  })
})
