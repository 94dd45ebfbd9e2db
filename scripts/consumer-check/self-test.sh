#!/usr/bin/env bash
# Checks the consumer check: puts back, one at a time, each packaging bug of issue 10 in a
# scratch clone of the repository's HEAD, runs the consumer check there, and expects it to fail
# at the step named. Not part of CI (each run installs three projects); run it after changing
# the check. The edits target today's files: when one no longer applies, it says so and fails.
#
#   bash scripts/consumer-check/self-test.sh [NAME...]    (default: all)
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
if [[ -z ${CONSUMER_CHECK_ENGINES:-} ]]; then
  export CONSUMER_CHECK_ENGINES=1
  exec bash "$repo/scripts/with-engine.sh" dynamodb \
    bash "$repo/scripts/with-engine.sh" s3 bash "${BASH_SOURCE[0]}" "$@"
fi
scratch="$(mktemp -d "${TMPDIR:-/tmp}/lambda-singleton-self-test.XXXXXX")"
trap 'rm -rf "$scratch"' EXIT

edit_json() { # FILE JS-STATEMENTS (on `pkg`)
  node -e "
    const fs = require('node:fs'), pkg = JSON.parse(fs.readFileSync('$1', 'utf8'))
    $2
    fs.writeFileSync('$1', JSON.stringify(pkg, null, 2))"
}
replace() { # FILE FROM TO: fails when FROM is not in FILE
  node -e "
    const fs = require('node:fs'), [file, from, to] = process.argv.slice(1), text = fs.readFileSync(file, 'utf8')
    if (!text.includes(from)) { console.error('self-test: edit does not apply to ' + file); process.exit(1) }
    fs.writeFileSync(file, text.replace(from, to))" "$@"
}

# Each bug: how to put it back, and the step of the check that must fail.
bug3_sdk_dependency() {
  edit_json package.json "pkg.dependencies = { '@aws-sdk/client-s3': '^3.1169.0' }"
}
bug3_expect='pack from a clean tree'
bug4_cdk_floor() { edit_json package.json "pkg.peerDependencies['aws-cdk-lib'] = '^2.200.0'"; }
bug4_expect='cdk-app'
bug5_aws_lambda_types() {
  replace lib/lifecycle/context.ts 'export interface LambdaContext {' \
    "import type { Context } from 'aws-lambda'
export type LambdaContext = Context
interface UnusedLambdaContext {"
}
bug5_expect='esm-nodenext: one SDK copy'
bug6_own_endpoint_variable() {
  replace lib/s3/client.ts 'new S3Client({ maxAttempts: 1 })' \
    'new S3Client({ maxAttempts: 1, ...(process.env.S3_ENDPOINT && { endpoint: process.env.S3_ENDPOINT }) })'
}
bug6_expect='esm-nodenext: run the bundle'
bug7_cdk_import_only() { edit_json package.json "pkg.exports['./cdk'] = { types: './dist/infra/index.d.ts', import: './dist/infra/index.js' }"; }
bug7_expect='cdk-app'
bug8_no_prepare() { edit_json package.json "delete pkg.scripts.prepare"; }
bug8_expect='pack from a clean tree'
bug8_sources_shipped() {
  edit_json package.json "pkg.files = ['dist', 'lib', 'infra', 'README.md']
    for (const entry of Object.values(pkg.exports)) if (typeof entry === 'object') {
      entry.source = entry['lambda-singleton-source']; delete entry['lambda-singleton-source'] }"
}
bug8_sources_shipped_expect='pack from a clean tree'
bug8_no_license() { rm LICENSE; }
bug8_no_license_expect='pack from a clean tree'
bug8_no_repository() { edit_json package.json "delete pkg.repository; delete pkg.homepage; delete pkg.bugs"; }
bug8_no_repository_expect='pack from a clean tree'
# The construct's bundle as esbuild makes it by default: CommonJS builds of the SDK, no banner.
bug9_no_banner() {
  replace infra/scheduled-singleton-function.ts 'banner: ESM_REQUIRE_BANNER,' ''
  replace infra/scheduled-singleton-function.ts "mainFields: ['module', 'main']," ''
}
bug9_no_banner_expect='cdk-app'
bug9_store_at_import() {
  replace lib/lifecycle/lifecycle.ts '    this.#report = reporter(this.#config.logger, this.#config.onOutcome)' \
    "    this.#report = reporter(this.#config.logger, this.#config.onOutcome)
    if (!options.store && !process.env.LAMBDA_SINGLETON_BUCKET && !process.env.LAMBDA_SINGLETON_TABLE) {
      throw new LockOptionsError(\`\${where}: no lock store\`)
    }"
}
bug9_store_at_import_expect='esm-nodenext: run the bundle'
bug9_sdk_import_outside_branch() {
  replace lib/lifecycle/default-store.ts "await import('../dynamodb/store.js')" 'await importDynamoDBStore()'
  echo "async function importDynamoDBStore() { return import('../dynamodb/store.js') }" >>lib/lifecycle/default-store.ts
}
bug9_sdk_import_outside_branch_expect='esm-nodenext: bundle the handler by hand'

all=(bug3_sdk_dependency bug4_cdk_floor bug5_aws_lambda_types bug6_own_endpoint_variable bug7_cdk_import_only
  bug8_no_prepare bug8_sources_shipped bug8_no_license bug8_no_repository bug9_no_banner bug9_store_at_import
  bug9_sdk_import_outside_branch)
names=("$@")
((${#names[@]})) || names=("${all[@]}")

failures=0
for name in "${names[@]}"; do
  expect_var="${name}_expect"
  expect="${!expect_var:-}"
  [[ -n $expect ]] || expect_var="${name%%_*}_expect" expect="${!expect_var}"
  clone="$scratch/$name"
  git clone -q "$repo" "$clone"
  git -C "$clone" checkout -q "$(git -C "$repo" rev-parse HEAD)"
  ln -s "$repo/node_modules" "$clone/node_modules"
  start=$SECONDS
  if ! (cd "$clone" && "$name"); then
    echo "self-test: $name: the edit does not apply" >&2
    failures=$((failures + 1))
    continue
  fi
  log="$scratch/$name.log"
  if CONSUMER_CHECK_DIR="$scratch/$name-projects" bash "$clone/scripts/consumer-check/run.sh" >"$log" 2>&1; then
    echo "self-test: $name: the consumer check PASSED with the bug put back ($((SECONDS - start)) s)" >&2
    failures=$((failures + 1))
  elif failed="$(grep -o 'FAILED at step: .*' "$log" | sed 's/ (the projects.*//')" && [[ $failed == *"$expect"* ]]; then
    # The first telling line of the failed step's own output.
    reason="$(awk '/^--- /{section=""; next} {section = section $0 "\n"} END{printf "%s", section}' "$log" |
      grep -v 'nodedir\|FAILED at step\|"level":"INFO"' | grep -m 1 -iE 'error|inspect-tarball|invoke:|TS[0-9]+' || true)"
    echo "self-test: $name: caught at \"${failed#FAILED at step: }\" ($((SECONDS - start)) s): ${reason:0:220}"
  else
    echo "self-test: $name: failed, but not at \"$expect\": ${failed:-no step named}; log: $log" >&2
    trap - EXIT
    failures=$((failures + 1))
  fi
  rm -rf "$clone" "$scratch/$name-projects"
done
((failures == 0)) || {
  echo "self-test: $failures of ${#names[@]} bug(s) not caught as expected" >&2
  exit 1
}
echo "self-test: all ${#names[@]} bug(s) caught"
