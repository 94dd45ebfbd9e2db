#!/usr/bin/env bash
# Runs a command with an S3 endpoint in its environment:
# S3_ENDPOINT when it is set, otherwise the local Ceph engine (scripts/s3-local.sh).
#
#   scripts/with-s3.sh CMD [ARGS...]
set -euo pipefail

if (($# == 0)); then
  echo "usage: $0 CMD [ARGS...]" >&2
  exit 2
fi
if [[ -n ${S3_ENDPOINT:-} ]]; then
  exec "$@"
fi

s3_local() { bash "$(dirname "${BASH_SOURCE[0]}")/s3-local.sh" "$@"; }

if ! s3_local status >/dev/null; then
  if ! s3_local start; then
    echo "with-s3: could not start the local S3 engine. To use an existing S3 endpoint instead, set" \
      "S3_ENDPOINT, AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY and AWS_REGION." >&2
    exit 1
  fi
  # Stop only an engine we started; one a developer left running stays up.
  trap 's3_local stop' EXIT
  # Turn signals into a normal exit, so the EXIT trap runs.
  trap 'exit 130' INT
  trap 'exit 143' TERM
fi
eval "$(s3_local env)"

status=0
"$@" || status=$?
exit "$status"
