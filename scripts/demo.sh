#!/usr/bin/env bash
# The main job: installs what is missing (Node.js >= 22, Ceph, npm dependencies), boots the
# local S3 engine, and runs the demo (scripts/demo.ts) against it. Set S3_ENDPOINT to use another.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
# shellcheck source=scripts/ensure-node.sh
source scripts/ensure-node.sh
# shellcheck source=scripts/ensure-ceph.sh
source scripts/ensure-ceph.sh >/dev/null
[[ -d node_modules/@aws-sdk/client-s3 ]] || npm ci --no-audit --no-fund --loglevel=error
exec bash scripts/with-engine.sh s3 npx tsx --conditions=lambda-singleton-source scripts/demo.ts
