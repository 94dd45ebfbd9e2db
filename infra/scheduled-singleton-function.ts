import { Duration, Token } from 'aws-cdk-lib'
import * as iam from 'aws-cdk-lib/aws-iam'
import * as lambda from 'aws-cdk-lib/aws-lambda'
import * as nodejs from 'aws-cdk-lib/aws-lambda-nodejs'
import * as logs from 'aws-cdk-lib/aws-logs'
import { Construct } from 'constructs'
import { LOCK_ENV, type LockStoreKind } from '../lib/config.js'
import { SingletonValidationError } from './errors.js'
import { acknowledgeWildcardResource } from './private/nag.js'
import { ScheduledSingleton, type ScheduledSingletonOptions } from './scheduled-singleton.js'

/** Lambda's hard limit on a function's timeout. */
const MAX_TIMEOUT = Duration.minutes(15)

/**
 * The EC2 actions of the AWS-managed AWSLambdaVPCAccessExecutionRole (v3): what Lambda does, with
 * the function's role, to attach it to its VPC's subnets.
 */
const VPC_ACCESS_ACTIONS = [
  'ec2:CreateNetworkInterface',
  'ec2:DescribeNetworkInterfaces',
  'ec2:DescribeSubnets',
  'ec2:DeleteNetworkInterface',
  'ec2:AssignPrivateIpAddresses',
  'ec2:UnassignPrivateIpAddresses',
] as const

/**
 * ESM bundles of CommonJS dependencies may call `require()` for Node built-ins, which ESM lacks;
 * this gives the bundle a real `require`.
 */
export const ESM_REQUIRE_BANNER =
  "import { createRequire } from 'node:module'; const require = createRequire(import.meta.url);"

/** Function settings that `ScheduledSingletonFunction` passes through to `NodejsFunction`. */
export type SingletonFunctionProps = Omit<
  nodejs.NodejsFunctionProps,
  'entry' | 'handler' | 'timeout' | 'code' | 'logRetention' | 'logRetentionRole' | 'logRetentionRetryOptions'
>

export interface ScheduledSingletonFunctionProps extends ScheduledSingletonOptions {
  /** Path of the handler's source file (`.ts` or `.js`), bundled with esbuild. */
  readonly entry: string

  /**
   * The exported handler's name in `entry`.
   *
   * @default 'handler'
   */
  readonly handler?: string

  /**
   * The longest a run may take, at most 15 minutes. By default the lease covers the whole
   * invocation, so this is also the longest the lock stays held after a crash.
   *
   * @default Duration.minutes(5)
   */
  readonly timeout?: Duration

  /**
   * Anything else about the function: memory, environment, runtime, tracing, VPC, role, log
   * group. `bundling` is merged over the defaults (ESM, minified, source maps, AWS SDK bundled);
   * with `format: OutputFormat.CJS`, the ES-module-only banner and `mainFields` are left out.
   *
   * @default nodejs24.x, a log group with one month's retention, and a role that may write to
   *   that log group and use the lock, nothing more (in a VPC, also manage the function's network
   *   interfaces, as AWSLambdaVPCAccessExecutionRole would, without its logs rights)
   */
  readonly functionProps?: SingletonFunctionProps
}

/**
 * A `NodejsFunction` run on EventBridge Scheduler schedules as a singleton: bundled with esbuild
 * (ESM, minified, source maps, AWS SDK bundled, since the runtime's SDK may predate S3
 * conditional writes), given the lock environment variables and a least-privilege grant on its
 * `LockBucket` (or `LockTable`), invoked with an event that carries the tick's scheduled time.
 */
export class ScheduledSingletonFunction extends Construct {
  /** The function. */
  readonly function: nodejs.NodejsFunction
  /** Its log group: the one in `functionProps.logGroup`, or one created here. */
  readonly logGroup: logs.ILogGroupRef
  /** The schedules, lock wiring, dead-letter queue, alarms and metrics. */
  readonly singleton: ScheduledSingleton
  /** The function's lock key below the store's key prefix: `lockKey`, or this construct's path. */
  readonly lockKey: string

  constructor(scope: Construct, id: string, props: ScheduledSingletonFunctionProps) {
    super(scope, id)
    const timeout = props.timeout ?? Duration.minutes(5)
    if (!timeout.isUnresolved() && timeout.toSeconds() > MAX_TIMEOUT.toSeconds()) {
      throw new SingletonValidationError(
        `timeout ${timeout.toHumanString()} is over Lambda's 15 minute limit; for longer jobs, ` +
          'give the middleware a ttlMs and run the work elsewhere (ECS, Step Functions)',
        this,
      )
    }
    if (!timeout.isUnresolved() && timeout.toSeconds() < 1) {
      throw new SingletonValidationError('timeout must be at least 1 second', this)
    }
    if (!Token.isUnresolved(props.entry) && props.entry.length === 0) {
      throw new SingletonValidationError('entry is empty: give the path of the handler file', this)
    }

    const given = props.functionProps ?? {}
    const storeKind: LockStoreKind = props.lockTable ? 'dynamodb' : 's3'
    this.logGroup =
      given.logGroup ??
      new logs.LogGroup(this, 'LogGroup', {
        retention: logs.RetentionDays.ONE_MONTH,
      })
    const role = given.role ?? this.createRole(this.logGroup)
    // In a VPC, Lambda makes the function's network interfaces with its role, as the function is
    // created: so the function waits for this policy.
    const vpcAccess = given.vpc && !given.role ? this.createVpcAccessPolicy(role) : undefined

    const format = given.bundling?.format ?? nodejs.OutputFormat.ESM
    this.function = new nodejs.NodejsFunction(this, 'Function', {
      runtime: lambda.Runtime.NODEJS_24_X,
      ...given,
      entry: props.entry,
      handler: props.handler ?? 'handler',
      timeout,
      logGroup: this.logGroup,
      role,
      environment: { NODE_OPTIONS: '--enable-source-maps', ...given.environment },
      bundling: {
        format,
        minify: true,
        sourceMap: true,
        bundleAwsSDK: true,
        // Only in an ES module: the banner is an `import` and reads `import.meta`, which a CommonJS
        // bundle cannot load; esbuild's own main fields then fit the CommonJS output.
        ...(format === nodejs.OutputFormat.ESM
          ? {
              // Prefer the ES module builds of dependencies (the AWS SDK ships both).
              mainFields: ['module', 'main'],
              banner: ESM_REQUIRE_BANNER,
            }
          : {}),
        ...given.bundling,
        // The store is known here: the middleware's branch for the other one (and its SDK) drops out.
        define: { [`process.env.${LOCK_ENV.store}`]: JSON.stringify(storeKind), ...given.bundling?.define },
      },
    })

    if (vpcAccess) this.function.node.addDependency(vpcAccess)

    this.singleton = new ScheduledSingleton(this, 'Singleton', {
      ...props,
      function: this.function,
      // This construct's path, not its function's: the key stays if the function is replaced.
      lockKey: props.lockKey ?? this.node.path,
    })
    this.lockKey = this.singleton.lockKey
  }

  /**
   * A role that can write this function's logs, instead of the AWS-managed
   * AWSLambdaBasicExecutionRole (which may create any log group and write to all of them).
   */
  private createRole(logGroup: logs.ILogGroupRef): iam.Role {
    const role = new iam.Role(this, 'ServiceRole', {
      description: 'Execution role of a singleton function',
      assumedBy: new iam.ServicePrincipal('lambda.amazonaws.com'),
    })
    role.addToPrincipalPolicy(
      new iam.PolicyStatement({
        actions: ['logs:CreateLogStream', 'logs:PutLogEvents'],
        resources: [logGroup.logGroupRef.logGroupArn],
      }),
    )
    return role
  }

  /**
   * What Lambda needs to run the function in a VPC: the network-interface actions of the
   * AWS-managed AWSLambdaVPCAccessExecutionRole, without its CloudWatch Logs actions on every log
   * group. A policy of its own, so that its acknowledged wildcard covers it and nothing else.
   */
  private createVpcAccessPolicy(role: iam.IRole): iam.Policy {
    const policy = new iam.Policy(this, 'VpcAccessPolicy', {
      roles: [role],
      statements: [new iam.PolicyStatement({ actions: [...VPC_ACCESS_ACTIONS], resources: ['*'] })],
    })
    acknowledgeWildcardResource(
      policy,
      '*',
      'Lambda creates, describes and deletes the network interfaces of a function in a VPC with its ' +
        'role; EC2 cannot scope DescribeNetworkInterfaces or DescribeSubnets to a resource, and the ' +
        "interfaces' IDs are not known before Lambda makes them. These are the EC2 actions of " +
        'AWSLambdaVPCAccessExecutionRole, nothing more.',
    )
    return policy
  }
}
