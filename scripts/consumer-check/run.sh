#!/usr/bin/env bash
# The consumer check: what a team that installs the package gets. Packs the package from a clean
# tree, inspects the tarball, installs it from the registry's point of view into three fresh
# projects outside the repository, and in each type-checks, bundles, runs and synthesizes:
#
#   esm-nodenext  "type": "module", NodeNext, strict, skipLibCheck, no @types/aws-lambda; the
#                 SDK floors (the lowest @aws-sdk/client-s3 the peer range allows), the latest
#                 aws-cdk-lib in range. A Middy handler bundled by hand as docs/without-cdk.md says, run
#                 against S3; a stack synthesized; the CLI run from the installed package.
#   esm-bundler   moduleResolution Bundler; a withSingleton handler on DynamoDB (the lowest
#                 @aws-sdk/client-dynamodb in range), bundled with the `source` condition set
#                 and esbuild's default main fields (the SDK's CommonJS builds: the banner's case);
#                 type-checked again with skipLibCheck off and the type packages the README names.
#   cdk-app       `cdk init app --language typescript` unchanged (CommonJS, NodeNext), on the
#                 lowest aws-cdk-lib in range; the handler directory marked ESM as docs/cdk.md
#                 says; `tsc`, the template's jest (CommonJS: the package's `require` build) on a
#                 test that synthesizes the stack, and `cdk synth` as the template runs them; the
#                 bundle the construct made is run against S3. No esbuild is added: tsx brings it.
#
# Versions come from package.json: the floors from peerDependencies, the tools from
# devDependencies. npm's cache is reused (prefer-offline). The engines are the local ones
# (scripts/with-engine.sh), or S3_ENDPOINT / DYNAMODB_ENDPOINT.
#
# CONSUMER_CHECK_DIR   where to make the projects (default: a new directory under $TMPDIR)
# CONSUMER_CHECK_KEEP  1 keeps them afterwards
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
here="$repo/scripts/consumer-check"

if [[ -z ${CONSUMER_CHECK_ENGINES:-} ]]; then
  export CONSUMER_CHECK_ENGINES=1
  # DynamoDB outside, S3 inside: the S3 engine's keys are the ones left in the environment
  # (DynamoDB Local checks no signature).
  exec bash "$repo/scripts/with-engine.sh" dynamodb \
    bash "$repo/scripts/with-engine.sh" s3 bash "${BASH_SOURCE[0]}" "$@"
fi

work="${CONSUMER_CHECK_DIR:-$(mktemp -d "${TMPDIR:-/tmp}/lambda-singleton-consumer.XXXXXX")}"
work="$(realpath -m "$work")"
if [[ $work == "$repo" || $work == "$repo"/* ]]; then
  echo "consumer-check: CONSUMER_CHECK_DIR must be outside the repository" >&2
  exit 2
fi
mkdir -p "$work"

current_step=setup
finish() {
  local status=$?
  if ((status != 0)); then
    echo "consumer-check: FAILED at step: $current_step (the projects are kept in $work)" >&2
  elif [[ ${CONSUMER_CHECK_KEEP:-} != 1 ]]; then
    rm -rf "$work"
  fi
}
trap finish EXIT

export npm_config_prefer_offline=true npm_config_update_notifier=false npm_config_fund=false \
  npm_config_audit=false CDK_DISABLE_CLI_TELEMETRY=true
cdk="$repo/node_modules/.bin/cdk"
s3_endpoint="${S3_ENDPOINT:?}"
dynamodb_endpoint="${DYNAMODB_ENDPOINT:?}"
# The SDK's own variables, the one way the README documents (S3_ENDPOINT is the test scripts').
export AWS_ENDPOINT_URL_S3="$s3_endpoint" AWS_ENDPOINT_URL_DYNAMODB="$dynamodb_endpoint"
run_id="$(node -p 'Math.random().toString(36).slice(2, 8)')"
started=$SECONDS

# Runs a step in this shell, under `set -e` (a function called from an `if` would run without it).
step() {
  local start=$SECONDS
  current_step=$1
  shift
  echo "· $current_step"
  "$@"
  echo "    done in $((SECONDS - start)) s"
}

package_field() { node -p "require('$repo/package.json').$1['$2']"; }
# The lowest version a peer range allows: ^3.700.0 -> 3.700.0.
floor() { package_field peerDependencies "$1" | sed -E 's/^(\^|~|>=)//'; }
peer() { package_field peerDependencies "$1"; }
dev() { package_field devDependencies "$1"; }

# Runs a command with its output in a log: the last line is shown, all of it when it fails.
logged() { # LOG COMMAND...
  local log=$1
  shift
  if "$@" >"$log" 2>&1; then
    tail -n 1 "$log"
  else
    cat "$log" >&2
    return 1
  fi
}

install() { # DIR SPEC...
  local dir=$1
  shift
  (cd "$dir" && npm install --loglevel=error "$@" >"$dir/npm-install.log" 2>&1) || {
    cat "$dir/npm-install.log" >&2
    return 1
  }
}

pack() {
  # From a clean tree, as from a fresh clone or a git install: `prepare` must build dist/.
  rm -rf "$repo/dist"
  (cd "$repo" && npm pack --pack-destination "$work" --loglevel=error >/dev/null)
  tarball="$(ls "$work"/lambda-singleton-*.tgz)"
  node "$here/inspect-tarball.mjs" "$tarball"
  # Are the types wrong: every entry point, as TypeScript resolves it under node10, node16 from
  # CommonJS and from ESM, and bundler, finds declarations of the module format Node.js loads.
  (cd "$repo" && npx --no-install attw "$tarball" >"$work/attw.log" 2>&1) || {
    cat "$work/attw.log" >&2
    return 1
  }
  echo "attw: every entry point has its types under node10, node16 (CommonJS, ESM) and bundler"
}

make_projects() {
  local esm="$work/esm-nodenext" bundler="$work/esm-bundler" app="$work/cdk-app"
  mkdir -p "$esm/src" "$esm/lambda" "$esm/bin" "$bundler/src" "$app"
  echo '{ "name": "consumer-esm-nodenext", "private": true, "type": "module" }' >"$esm/package.json"
  cp "$here/tsconfig.nodenext.json" "$esm/tsconfig.json"
  cp "$here/s3-handler.ts" "$esm/lambda/handler.ts"
  cp "$here/types.ts" "$here/cdk-app-stack.ts" "$esm/src/"
  cp "$here/esm-app.ts" "$esm/bin/app.ts"

  echo '{ "name": "consumer-esm-bundler", "private": true, "type": "module" }' >"$bundler/package.json"
  cp "$here/tsconfig.bundler.json" "$bundler/tsconfig.json"
  cp "$here/dynamodb-handler.ts" "$bundler/src/handler.ts"
  cp "$here/types.ts" "$bundler/src/types.ts"

  # The template exactly as `cdk init` writes it; then our stack over its generated one, and the
  # handler in a directory marked ESM (what the README tells a cdk init user to do).
  (cd "$app" && "$cdk" init app --language typescript --generate-only --no-notices >"$work/cdk-init.log" 2>&1) || {
    cat "$work/cdk-init.log" >&2
    return 1
  }
  cp "$here/cdk-app-stack.ts" "$app/lib/cdk-app-stack.ts"
  mkdir -p "$app/lambda"
  cp "$here/s3-handler.ts" "$app/lambda/handler.ts"
  echo '{ "type": "module" }' >"$app/lambda/package.json"
  # Its own jest test (CommonJS, through @swc/jest) is replaced by one of the stack; the CLI is the
  # repository's. esbuild is not added: the template's tsx brings it, which the README counts on.
  rm -f "$app"/test/*.test.ts
  cp "$here/cdk-app.test.ts" "$app/test/cdk-app.test.ts"
  node -e "
    const fs = require('node:fs'), file = '$app/package.json', pkg = JSON.parse(fs.readFileSync(file, 'utf8'))
    delete pkg.devDependencies['aws-cdk']
    pkg.dependencies['aws-cdk-lib'] = '$(floor aws-cdk-lib)'
    fs.writeFileSync(file, JSON.stringify(pkg, null, 2))"

  for dir in "$esm" "$bundler" "$app"; do cp "$here/invoke.mjs" "$dir/"; done
  cp "$here/missing-sdk.mjs" "$esm/"

  # The three installs overlap: they wait on the network and the disk, not the CPU.
  local pids=() pid failed=0
  install "$esm" "$tarball" "@aws-sdk/client-s3@$(floor @aws-sdk/client-s3)" \
    "@middy/core@$(dev @middy/core)" "aws-cdk-lib@$(peer aws-cdk-lib)" "constructs@$(peer constructs)" \
    "esbuild@$(dev esbuild)" "tsx@$(dev tsx)" "typescript@$(dev typescript)" "@types/node@$(dev @types/node)" &
  pids+=($!)
  # With the type packages the README names for skipLibCheck off (Middy 7's declarations import
  # aws-lambda and its durable SDK; the SDK's, Node's).
  install "$bundler" "$tarball" "@aws-sdk/client-dynamodb@$(floor @aws-sdk/client-dynamodb)" \
    "@aws-sdk/client-s3@$(peer @aws-sdk/client-s3)" "esbuild@$(dev esbuild)" \
    "typescript@$(dev typescript)" "@middy/core@$(dev @middy/core)" \
    "@types/aws-lambda@$(dev @types/aws-lambda)" "@aws/durable-execution-sdk-js@^2.0.0" \
    "@types/node@$(dev @types/node)" &
  pids+=($!)
  install "$app" "$tarball" "@aws-sdk/client-s3@$(peer @aws-sdk/client-s3)" \
    "@middy/core@$(dev @middy/core)" &
  pids+=($!)
  for pid in "${pids[@]}"; do wait "$pid" || failed=1; done
  return "$failed"
}

# --- esm-nodenext
esm_types() {
  cd "$work/esm-nodenext"
  if [[ -e node_modules/@types/aws-lambda ]]; then
    echo "@types/aws-lambda got installed: the check of the published types would prove nothing" >&2
    return 1
  fi
  local copies
  copies="$(find node_modules -path '*/@aws-sdk/client-s3/package.json' | wc -l)"
  if ((copies != 1)); then
    echo "$copies copies of @aws-sdk/client-s3 installed (the user's $(floor @aws-sdk/client-s3) and the package's own?)" >&2
    return 1
  fi
  npx --no-install tsc -p tsconfig.json
}

esm_bundle() {
  cd "$work/esm-nodenext"
  # docs/without-cdk.md's bundling command, as SAM, Terraform or Serverless users run it
  # (test/docs/docs.unit.test.ts keeps the page's flags and these the same).
  npx --no-install esbuild lambda/handler.ts --bundle --platform=node --target=node24 --format=esm \
    --minify --sourcemap --main-fields=module,main \
    --banner:js="import { createRequire } from 'node:module'; const require = createRequire(import.meta.url);" \
    --define:process.env.LAMBDA_SINGLETON_STORE='"s3"' \
    --outfile=out/handler.mjs --metafile=out/meta.json --log-level=warning
  node "$here/bundle-bytes.mjs" out/meta.json 'S3 + Middy handler (SDK floor)'
}

esm_run() {
  cd "$work/esm-nodenext"
  logged invoke.log node invoke.mjs out/handler.mjs s3 "cc-esm-$run_id"
  logged missing-sdk.log node missing-sdk.mjs
}

esm_synth() {
  cd "$work/esm-nodenext"
  logged synth.log "$cdk" synth --app 'npx tsx bin/app.ts' --output cdk.out --quiet --no-notices
  grep -q LAMBDA_SINGLETON_BUCKET cdk.out/CdkAppStack.template.json
}

cli_inspect() { # PROJECT STORE_ARGS...
  local dir=$1 output
  shift
  cd "$dir"
  npx --no-install lambda-singleton --help >/dev/null
  output="$(npx --no-install lambda-singleton inspect "$@" --key locks/consumer-check --json)"
  # Two runs so far: the record counts them (tokens follow the store's clock, not +1).
  if ! node -e 'const { record } = JSON.parse(require("fs").readFileSync(0, "utf8")); process.exit(record.run === 2 && record.token > 0 ? 0 : 1)' <<<"$output"; then
    echo "the CLI's inspect shows no record of the second run:" >&2
    echo "$output" >&2
    return 1
  fi
}

# --- esm-bundler
bundler_check() {
  cd "$work/esm-bundler"
  npx --no-install tsc -p tsconfig.json
  # skipLibCheck off, as the README's note says: every declaration file is checked, ours and the
  # SDK's included. exactOptionalPropertyTypes goes off for it: the durable SDK's own declarations
  # do not compile under it (TS2344 in its logger types), whatever the package does.
  npx --no-install tsc -p tsconfig.json --skipLibCheck false --exactOptionalPropertyTypes false
  # `source` is a condition many toolchains set: it must not lead into files the package lacks.
  # esbuild's default main fields pick the SDK's CommonJS builds: the banner alone must carry them.
  npx --no-install esbuild src/handler.ts --bundle --platform=node --target=node24 --format=esm \
    --minify --conditions=source \
    --banner:js="import { createRequire } from 'node:module'; const require = createRequire(import.meta.url);" \
    --define:process.env.LAMBDA_SINGLETON_STORE='"dynamodb"' \
    --outfile=out/handler.mjs --metafile=out/meta.json --log-level=warning
  node "$here/bundle-bytes.mjs" out/meta.json 'DynamoDB + withSingleton handler (SDK floor, CommonJS builds)'
  if grep -q 'PutObjectCommand' out/handler.mjs; then
    echo "the DynamoDB bundle contains the S3 client" >&2
    return 1
  fi
  logged invoke.log node invoke.mjs out/handler.mjs dynamodb "cc-bundler-$run_id"
}

# --- cdk-app (cdk init)
cdk_app_check() {
  cd "$work/cdk-app"
  npx --no-install tsc # the template's `npm run build`
  # The template's own `npm test`: jest through @swc/jest, CommonJS, `require('lambda-singleton/cdk')`.
  npm test --silent >jest.log 2>&1 || {
    cat jest.log >&2
    return 1
  }
  echo "jest: the template's npm test synthesized the stack through require('lambda-singleton/cdk')"
  logged synth.log "$cdk" synth --quiet --no-notices
  local bundle
  bundle="$(grep -l "consumer-check/output" cdk.out/asset.*/index.mjs | head -n 1 || true)"
  [[ -n $bundle ]] || {
    echo "no bundled handler in cdk.out" >&2
    return 1
  }
  logged invoke.log node invoke.mjs "$bundle" s3 "cc-cdk-$run_id"
}

step "pack from a clean tree, inspect the tarball" pack
step "make the projects (cdk init for one), npm install the tarball" make_projects
step "esm-nodenext: one SDK copy, no @types/aws-lambda; tsc (handler, types, stack)" esm_types
step "esm-nodenext: bundle the handler by hand (docs/without-cdk.md's esbuild command)" esm_bundle
step "esm-nodenext: run the bundle against S3; a missing optional SDK is named" esm_run
step "esm-nodenext: cdk synth" esm_synth
step "esm-nodenext: the CLI from the installed package (S3)" cli_inspect "$work/esm-nodenext" \
  --bucket "cc-esm-$run_id" --endpoint "$s3_endpoint"
step "esm-bundler: tsc (skipLibCheck on, then off), bundle (condition source, CommonJS SDK builds), run against DynamoDB" \
  bundler_check
step "esm-bundler: the CLI from the installed package (DynamoDB)" cli_inspect \
  "$work/esm-bundler" --table "cc-bundler-$run_id" --endpoint "$dynamodb_endpoint"
step "cdk-app (cdk init, aws-cdk-lib $(floor aws-cdk-lib)): tsc, jest, cdk synth, run the construct's bundle" \
  cdk_app_check
echo "consumer-check: all steps passed in $((SECONDS - started)) s"
