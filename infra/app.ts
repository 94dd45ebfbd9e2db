/**
 * The example app: `npx cdk synth` (offline, no credentials) or `npx cdk deploy` (needs AWS
 * credentials and a bootstrapped account/region). cdk-nag's AwsSolutions checks run on every
 * synth; a finding that is not acknowledged with a reason fails it.
 */
import { App, Validations } from 'aws-cdk-lib'
import { AwsSolutionsChecks } from 'cdk-nag'
import { ExampleStack } from './example-stack.js'

const app = new App()
new ExampleStack(app, 'LambdaSingletonExample')
Validations.of(app).addPlugins(new AwsSolutionsChecks(app))
app.synth()
