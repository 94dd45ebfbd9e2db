#!/usr/bin/env bash
# A throwaway AWS DynamoDB Local (in memory): the DynamoDB engine for tests and local runs.
# Its jar ships inside the npm devDependency amplify-dynamodb-simulator; it runs on Java >= 11.
#
#   scripts/dynamodb-local.sh start|stop|status|env
#
# DYNAMODB_LOCAL_PORT     port on 127.0.0.1 (default 8600)
# DYNAMODB_LOCAL_DIR      log and pid file (default <repo>/.dynamodb-local; stop deletes it)
# DYNAMODB_LOCAL_JAR_DIR  the folder holding DynamoDBLocal.jar and DynamoDBLocal_lib
#                         (default <repo>/node_modules/amplify-dynamodb-simulator/emulator)
# DYNAMODB_LOCAL_TIMEOUT  seconds start may take (default 60)
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
port="${DYNAMODB_LOCAL_PORT:-8600}"
dir="$(realpath -m "${DYNAMODB_LOCAL_DIR:-$repo/.dynamodb-local}")"
jar_dir="$(realpath -m "${DYNAMODB_LOCAL_JAR_DIR:-$repo/node_modules/amplify-dynamodb-simulator/emulator}")"
timeout="${DYNAMODB_LOCAL_TIMEOUT:-60}"
endpoint="http://127.0.0.1:$port"

pid_file="$dir/dynamodb-local.pid"
log_file="$dir/dynamodb-local.log"
marker="$dir/.dynamodb-local"

log() { echo "dynamodb-local: $*" >&2; }
die() {
  log "$*"
  exit 1
}

pid_of() { # -> the engine's pid, if it is alive
  local pid command
  [[ -f $pid_file ]] || return 1
  pid="$(<"$pid_file")"
  [[ -n $pid && -r /proc/$pid/cmdline ]] || return 1
  # A stale pid file (after a reboot) may name someone else's process: check it is our jar and port.
  command="$(tr '\0' ' ' <"/proc/$pid/cmdline")"
  [[ $command == *"DynamoDBLocal.jar"* && $command == *"-port $port "* ]] || return 1
  echo "$pid"
}

answering() {
  # DynamoDB Local checks that a request names an access key, not that it is signed.
  curl -sf -m 2 -X POST "$endpoint" \
    -H 'Content-Type: application/x-amz-json-1.0' \
    -H 'X-Amz-Target: DynamoDB_20120810.ListTables' \
    -H 'Authorization: AWS4-HMAC-SHA256 Credential=local/20000101/us-east-1/dynamodb/aws4_request, SignedHeaders=host, Signature=0' \
    -d '{}' 2>/dev/null | grep -q '"TableNames"'
}

running() { pid_of >/dev/null && answering; }

port_busy() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

print_env() {
  cat <<EOF
export DYNAMODB_ENDPOINT=$endpoint
export AWS_ACCESS_KEY_ID=local
export AWS_SECRET_ACCESS_KEY=local
export AWS_REGION=us-east-1
EOF
}

kill_engine() {
  local pid i
  pid="$(pid_of)" || return 0
  # SIGKILL: the data lives in memory and is thrown away anyway.
  kill -9 "$pid" 2>/dev/null || true
  for ((i = 0; i < 100; i++)); do
    kill -0 "$pid" 2>/dev/null || return 0
    sleep 0.1
  done
}

wipe() {
  [[ -e $dir ]] || return 0
  # Only ever delete a directory this script created (or an empty one).
  if [[ -f $marker ]]; then
    rm -rf "$dir"
  else
    rmdir "$dir" 2>/dev/null || die "refusing to delete $dir: it was not created by $0"
  fi
}

fail_start() {
  log "$*"
  if [[ -s $log_file ]]; then
    echo "----- last lines of $log_file" >&2
    tail -n 20 "$log_file" >&2
  fi
  kill_engine
  log "state kept in $dir for inspection (the next start or stop deletes it)"
  exit 1
}

start() {
  if running; then
    log "already running at $endpoint ($dir)"
    print_env >"$dir/env"
    return 0
  fi
  command -v java >/dev/null || die "java is missing.
Install it with \`bash .ci/run\` or \`apt-get install openjdk-17-jre-headless\`,
or set DYNAMODB_ENDPOINT (with AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY and AWS_REGION) to an existing endpoint."
  command -v curl >/dev/null || die "curl is missing (apt-get install curl)"
  [[ -f $jar_dir/DynamoDBLocal.jar ]] ||
    die "no DynamoDBLocal.jar in $jar_dir: run \`npm ci\` (it comes with the devDependency amplify-dynamodb-simulator)"

  kill_engine
  wipe
  port_busy "$port" && die "127.0.0.1:$port is already in use by another process (choose another with DYNAMODB_LOCAL_PORT)"

  local began=$SECONDS deadline=$((SECONDS + timeout)) pid
  mkdir -p "$dir"
  touch "$marker"
  # -sharedDb: one set of tables whatever the credentials and region, so every client sees them.
  # Run from the state dir: the engine writes dynamodb-local-metadata.json into its working dir.
  # Its stdio goes to its log, so a caller reading our output is not kept waiting;
  # 9<&- keeps the lock held during start out of it.
  (
    cd "$dir"
    exec java -Djava.library.path="$jar_dir/DynamoDBLocal_lib" -jar "$jar_dir/DynamoDBLocal.jar" \
      -inMemory -sharedDb -port "$port" -disableTelemetry
  ) </dev/null >"$log_file" 2>&1 9<&- &
  pid=$!
  echo "$pid" >"$pid_file"

  until answering; do
    kill -0 "$pid" 2>/dev/null || fail_start "DynamoDB Local exited during start"
    ((SECONDS < deadline)) || fail_start "timed out after ${timeout}s waiting for $endpoint to answer"
    sleep 0.1
  done

  print_env >"$dir/env"
  log "running at $endpoint ($dir), pid $pid, started in $((SECONDS - began))s"
}

stop() {
  kill_engine
  wipe
  log "stopped"
}

status() {
  if running; then
    echo "running at $endpoint ($dir)"
  else
    echo "not running"
    return 1
  fi
}

case "${1:-}" in
start | stop)
  # Two concurrent starts (or a stop during a start) would trample each other's state.
  exec 9<"${BASH_SOURCE[0]}"
  flock 9
  "$1"
  ;;
status) status ;;
env)
  print_env
  if [[ -d $dir ]]; then print_env >"$dir/env"; fi
  ;;
*) die "usage: $0 start|stop|status|env" ;;
esac
