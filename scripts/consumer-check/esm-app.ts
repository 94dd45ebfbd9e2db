// The ESM project's CDK app (bin/app.ts there): the same stack as the `cdk init` project's.
import { App } from 'aws-cdk-lib/core'
import { CdkAppStack } from '../src/cdk-app-stack.js'

const app = new App()
new CdkAppStack(app, 'CdkAppStack')
