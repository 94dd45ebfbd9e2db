#!/usr/bin/env bash
# `npm test`: types, lint, then every test project. The S3 tests start the local engine
# themselves (test/support/global-setup.ts) unless S3_ENDPOINT is set.
# Likewise the DynamoDB tests start DynamoDB Local (test/support/dynamodb-setup.ts) unless
# DYNAMODB_ENDPOINT is set.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
# shellcheck source=scripts/ensure-node.sh
source scripts/ensure-node.sh
npx tsc -p tsconfig.json --noEmit
npx biome check .
# The public surface: the committed API reports (api/*.api.md) must match the built declarations.
npm run --silent api:check
# The default reporter for people; a JSON one for .ci/run's closing count (scripts/test-summary.mjs).
# Under CI the people's output is also kept (reports/vitest/output.log), so that the end of a long CI
# log can repeat vitest's own closing lines.
run_vitest() {
  npx vitest run --reporter=default --reporter=json --outputFile.json=reports/vitest/results.json "$@"
}
if [[ -n "${CI:-}" ]]; then
  mkdir -p reports/vitest
  run_vitest "$@" 2>&1 | tee reports/vitest/output.log
else
  run_vitest "$@"
fi
