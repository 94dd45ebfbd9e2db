import { engineSetup } from './engine-setup.js'

/** The s3 project's engine: `S3_ENDPOINT` when given, else the local Ceph RADOS Gateway. */
export default engineSetup({
  provide: 's3',
  title: 'the local S3 engine',
  script: 's3-local.sh',
  endpointVariable: 'S3_ENDPOINT',
  defaultCredential: '',
  howTo:
    'Integration tests need an S3 endpoint. Either install Ceph (run `bash .ci/run`, or ' +
    '`apt-get install ceph-mon ceph-osd radosgw ceph-common`) so the tests can start a local RADOS Gateway, ' +
    'or set S3_ENDPOINT, AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY and AWS_REGION to an existing endpoint.',
})
