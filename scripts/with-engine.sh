#!/usr/bin/env bash
# Runs a command with a local engine's endpoint in its environment: for `s3`, S3_ENDPOINT when
# it is set, otherwise the local Ceph engine (scripts/s3-local.sh); for `dynamodb`,
# DYNAMODB_ENDPOINT when it is set, otherwise DynamoDB Local (scripts/dynamodb-local.sh).
# An engine started here is stopped when the command ends; one already running stays up.
#
#   scripts/with-engine.sh s3|dynamodb CMD [ARGS...]
#   scripts/with-engine.sh s3 scripts/with-engine.sh dynamodb CMD [ARGS...]   (both)
set -euo pipefail

engine="${1:-}"
case "$engine" in
s3) given="${S3_ENDPOINT:-}" name="S3" variables="S3_ENDPOINT" ;;
dynamodb) given="${DYNAMODB_ENDPOINT:-}" name="DynamoDB" variables="DYNAMODB_ENDPOINT" ;;
*) given="" ;;
esac
if [[ -z ${name:-} ]] || (($# < 2)); then
  echo "usage: $0 s3|dynamodb CMD [ARGS...]" >&2
  exit 2
fi
shift
if [[ -n $given ]]; then
  exec "$@"
fi

local_engine() { bash "$(dirname "${BASH_SOURCE[0]}")/$engine-local.sh" "$@"; }

if ! local_engine status >/dev/null; then
  if ! local_engine start; then
    echo "with-engine: could not start the local $name engine. To use an existing endpoint instead," \
      "set $variables, AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY and AWS_REGION." >&2
    exit 1
  fi
  trap 'local_engine stop' EXIT
  # Turn signals into a normal exit, so the EXIT trap runs.
  trap 'exit 130' INT
  trap 'exit 143' TERM
fi
eval "$(local_engine env)"

status=0
"$@" || status=$?
exit "$status"
