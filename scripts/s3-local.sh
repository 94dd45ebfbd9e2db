#!/usr/bin/env bash
# A throwaway one-node Ceph RADOS Gateway: the S3 engine for tests and local runs.
#
#   scripts/s3-local.sh start|stop|status|env|restart-rgw
#
# restart-rgw kills radosgw (SIGKILL, as a crash would) and starts it again; the monitor and the
# OSD keep running, so every bucket and object is kept. The soak test (scripts/soak) uses it.
#
# S3_LOCAL_PORT      S3 port on 127.0.0.1 (default 7480)
# S3_LOCAL_MON_PORT  Ceph monitor port (default: S3 port + 1)
# S3_LOCAL_DIR       all state, logs and pid files (default <repo>/.s3-local; stop deletes it)
# S3_LOCAL_TIMEOUT   seconds start may take (default 90)
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
port="${S3_LOCAL_PORT:-7480}"
mon_port="${S3_LOCAL_MON_PORT:-$((port + 1))}"
# Absolute: the path ends up in ceph.conf, and the daemons chdir to /.
dir="$(realpath -m "${S3_LOCAL_DIR:-$repo/.s3-local}")"
timeout="${S3_LOCAL_TIMEOUT:-90}"
endpoint="http://127.0.0.1:$port"
access_key=lambdasingletonaccess
secret_key=lambdasingletonsecret

conf="$dir/ceph.conf"
marker="$dir/.s3-local"
setup_log="$dir/log/setup.log"
# Every Ceph tool reads this instead of /etc/ceph/ceph.conf, so a system cluster is never touched.
export CEPH_CONF="$conf"

# "name binary" of each daemon, in stop order; the name is the one in its pid file.
daemons=("client.rgw.a radosgw" "osd.0 ceph-osd" "mon.a ceph-mon")

log() { echo "s3-local: $*" >&2; }
die() {
  log "$*"
  exit 1
}

pid_of() { # name binary -> the daemon's pid, if it is alive
  local file="$dir/run/$1.pid" pid command
  [[ -f $file ]] || return 1
  pid="$(<"$file")"
  [[ -n $pid && -r /proc/$pid/cmdline ]] || return 1
  # Check the binary too: after a reboot a stale pid file may name someone else's process.
  command="$(tr '\0' ' ' <"/proc/$pid/cmdline")"
  [[ $command == *"$2"* ]] || return 1
  echo "$pid"
}

daemons_alive() {
  local d
  for d in "${daemons[@]}"; do
    # shellcheck disable=SC2086 # split "name binary"
    pid_of $d >/dev/null || return 1
  done
}

answering() {
  local body
  body="$(curl -sf -m 2 "$endpoint" 2>/dev/null)" && [[ $body == *'<ListAllMyBucketsResult'* ]]
}

running() { daemons_alive && answering; }

port_busy() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

print_env() {
  cat <<EOF
export S3_ENDPOINT=$endpoint
export AWS_ACCESS_KEY_ID=$access_key
export AWS_SECRET_ACCESS_KEY=$secret_key
export AWS_REGION=us-east-1
EOF
}

kill_daemons() {
  local d pids=() pid i
  for d in "${daemons[@]}"; do
    # shellcheck disable=SC2086 # split "name binary"
    pid="$(pid_of $d)" && pids+=("$pid")
  done
  ((${#pids[@]})) || return 0
  # SIGKILL: all state is thrown away anyway, and a clean shutdown takes ~2 s per daemon.
  kill -9 "${pids[@]}" 2>/dev/null || true
  # Wait until they are gone (~1.5 s), so their ports are free for the next start.
  for pid in "${pids[@]}"; do
    for ((i = 0; i < 100; i++)); do
      kill -0 "$pid" 2>/dev/null || break
      sleep 0.1
    done
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
  local f
  log "$*"
  for f in "$dir"/log/*.log; do
    [[ -s $f ]] || continue
    echo "----- last lines of $f" >&2
    tail -n 15 "$f" >&2
  done
  kill_daemons
  log "state kept in $dir for inspection (the next start or stop deletes it)"
  exit 1
}

step() { # description command... : runs it within what is left of the start timeout
  local left=$((deadline - SECONDS))
  ((left > 0)) || fail_start "timed out after ${timeout}s before: $1"
  echo "### $1" >>"$setup_log"
  # 9<&-: daemons must not inherit the lock held during start.
  timeout "$left" "${@:2}" 9<&- >>"$setup_log" 2>&1 || fail_start "failed: $1"
}

write_conf() {
  # \$name is a Ceph metavariable (mon.a, osd.0, client.rgw.a).
  cat >"$conf" <<EOF
[global]
fsid = $fsid
mon_host = [v2:127.0.0.1:$mon_port]
public_addr = 127.0.0.1
ms_bind_msgr1 = false
auth_cluster_required = none
auth_service_required = none
auth_client_required = none
# Daemons default to "secure" connections to the monitor, which need cephx keys.
ms_mon_client_mode = crc
keyring = /dev/null
run_dir = $dir/run
pid_file = $dir/run/\$name.pid
admin_socket = $dir/run/\$name.asok
log_file = $dir/log/\$name.log
crash_dir = $dir/crash
# One OSD: single-replica pools, few placement groups per pool.
osd_pool_default_size = 1
osd_pool_default_min_size = 1
mon_allow_pool_size_one = true
mon_warn_on_pool_no_redundancy = false
osd_pool_default_pg_num = 8
osd_pool_default_pgp_num = 8
osd_pool_default_pg_autoscale_mode = off
osd_crush_chooseleaf_type = 0
# The monitor refuses to start below 5% free disk; a CI runner's disk may well be that full.
mon_data_avail_crit = 1

[mon]
mon_data = $dir/mon
# Map changes are batched for 1 s by default: radosgw's first boot makes a dozen in a row
# (a pool and its application tag each), which made start take 12 s instead of 2.
paxos_propose_interval = 0.05

[osd]
osd_data = $dir/osd
osd_objectstore = memstore
memstore_device_bytes = 1073741824

[client.rgw.a]
rgw_data = $dir/rgw
# Without tcp_nodelay every GET waits ~40 ms for a delayed ACK.
rgw_frontends = beast endpoint=127.0.0.1:$port tcp_nodelay=1
EOF
}

start() {
  if running; then
    log "already running at $endpoint ($dir)"
    print_env >"$dir/env"
    return 0
  fi

  local bin missing=()
  for bin in ceph-mon ceph-osd radosgw radosgw-admin ceph monmaptool curl; do
    command -v "$bin" >/dev/null || missing+=("$bin")
  done
  if ((${#missing[@]})); then
    die "missing commands: ${missing[*]}.
Install them with \`bash .ci/run\` or \`apt-get install ceph-mon ceph-osd radosgw ceph-common curl\`,
or set S3_ENDPOINT (with AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY and AWS_REGION) to an existing S3 endpoint."
  fi

  # Leftovers of a crashed or half-started engine.
  kill_daemons
  wipe

  local p
  for p in "$port" "$mon_port"; do
    if port_busy "$p"; then
      die "127.0.0.1:$p is already in use by another process (choose other ports with S3_LOCAL_PORT / S3_LOCAL_MON_PORT)"
    fi
  done

  local began=$SECONDS
  deadline=$((SECONDS + timeout))
  mkdir -p "$dir"/{run,log,crash,mon,osd,rgw}
  touch "$marker"
  fsid="$(</proc/sys/kernel/random/uuid)"
  write_conf

  local osd_uuid
  osd_uuid="$(</proc/sys/kernel/random/uuid)"
  step "create the monitor map" monmaptool --create --fsid "$fsid" --addv a "[v2:127.0.0.1:$mon_port]" "$dir/monmap"
  step "create the monitor" ceph-mon -i a --mkfs --monmap "$dir/monmap"
  step "start the monitor" ceph-mon -i a
  step "register the OSD" ceph osd new "$osd_uuid" 0
  step "create the OSD" ceph-osd -i 0 --mkfs --osd-uuid "$osd_uuid"
  step "start the OSD" ceph-osd -i 0
  # radosgw creates its pools and default zone itself; it answers HTTP once they exist.
  step "start radosgw" radosgw -n client.rgw.a

  until answering; do
    daemons_alive || fail_start "a Ceph daemon died during start"
    ((SECONDS < deadline)) || fail_start "timed out after ${timeout}s waiting for $endpoint to answer"
    sleep 0.2
  done

  step "create the S3 user" radosgw-admin user create --uid lambda-singleton \
    --display-name "lambda-singleton tests" --access-key "$access_key" --secret-key "$secret_key"

  # Proves the credentials work, and creates rgw's bucket pools now rather than in the first test.
  local bucket="$endpoint/s3-local-warmup" method
  for method in PUT DELETE; do
    step "$method a bucket" curl -sSf -X "$method" "$bucket" --aws-sigv4 aws:amz:us-east-1:s3 \
      --user "$access_key:$secret_key" -H 'x-amz-content-sha256: UNSIGNED-PAYLOAD'
  done

  print_env >"$dir/env"
  log "running at $endpoint ($dir), started in $((SECONDS - began))s"
}

restart_rgw() {
  running || die "not running at $endpoint ($dir): nothing to restart"
  local began=$SECONDS pid i
  pid="$(pid_of client.rgw.a radosgw)"
  kill -9 "$pid" 2>/dev/null || true
  for ((i = 0; i < 100; i++)); do
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.1
  done
  local deadline=$((SECONDS + timeout))
  echo "### restart radosgw" >>"$setup_log"
  # 9<&-: the daemon must not inherit the lock held during the restart.
  timeout "$timeout" radosgw -n client.rgw.a 9<&- >>"$setup_log" 2>&1 || fail_restart "radosgw did not start again"
  until answering; do
    daemons_alive || fail_restart "radosgw died during its restart"
    ((SECONDS < deadline)) || fail_restart "timed out after ${timeout}s waiting for $endpoint to answer again"
    sleep 0.1
  done
  log "radosgw restarted at $endpoint in $((SECONDS - began))s"
}

# Unlike a failed start, a failed restart leaves the monitor and the OSD (and their data) alone.
fail_restart() {
  log "$*"
  tail -n 15 "$dir/log/client.rgw.a.log" >&2 || true
  exit 1
}

stop() {
  kill_daemons
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
start | stop | restart-rgw)
  # Two concurrent starts (or a stop during a start) would trample each other's state.
  exec 9<"${BASH_SOURCE[0]}"
  flock 9
  "${1//-/_}"
  ;;
status) status ;;
env)
  print_env
  if [[ -d $dir ]]; then print_env >"$dir/env"; fi
  ;;
*) die "usage: $0 start|stop|status|env|restart-rgw" ;;
esac
