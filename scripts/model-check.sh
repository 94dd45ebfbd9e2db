#!/usr/bin/env bash
# Checks the Promela model of the lease protocol (model/lease-protocol.pml) with spin: an
# exhaustive search of every configuration at the CI bounds, which must find no error, and of
# each known defect put back, which must find one (a model that cannot find them checks nothing).
# Prints, per configuration, the states stored and explored, the time, and for a counterexample
# the assertion it broke and its length; exits 1 on any unexpected result.
#
#   bash scripts/model-check.sh              every configuration (about 4 min on 2 idle cores before
#                                            the take's five, about 7 with them)
#   bash scripts/model-check.sh NAME...      only those (e.g. unique-outside defect-no-wait)
#   MODEL_JOBS=N                             searches at once (default 2)
#   MODEL_OUT=DIR                            where to keep the builds and trails (default: a temporary folder)
#   MODEL_DEFINES='-DLATE_LEASE'              spin -D flags added to every configuration: put a defect back
#                                            everywhere, and the configurations that pass must fail
#
# Needs spin (Debian package `spin`) and a C compiler.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

model=$PWD/model/lease-protocol.pml
jobs=${MODEL_JOBS:-2}
out=${MODEL_OUT:-$(mktemp -d "${TMPDIR:-/tmp}/lease-model.XXXXXX")}
mkdir -p "$out"

for tool in spin "${CC:-gcc}"; do
  command -v "$tool" >/dev/null || {
    echo "model-check: $tool is missing (apt-get install spin gcc)" >&2
    exit 2
  }
done

# name | expected: pass, or the property a counterexample must break | spin -D flags
# Outside, crash, lost answer and operator each get a configuration of their own: all at once
# would take far longer than CI can wait, and each fault's effect is on the lock object alone.
configs=(
  "unique-outside|pass|-DLOSTS=0 -DCRASHES=0 -DOPS=0"
  "unique-crash|pass|-DDELETES=0 -DWRITEBACKS=0 -DLOSTS=0 -DOPS=0"
  "unique-lost-answer|pass|-DDELETES=0 -DCRASHES=0 -DOPS=0"
  "unique-operator|pass|-DDELETES=0 -DWRITEBACKS=0 -DLOSTS=0 -DCRASHES=0"
  "hash-outside|pass|-DHASH_ETAGS -DLOSTS=0 -DCRASHES=0 -DOPS=0"
  "same-instance|pass|-DSAMEINST -DDELETES=0 -DWRITEBACKS=0 -DOPS=0 -DREPLACES=0"
  "three-calls|pass|-DNCALLS=3 -DMAXT=6 -DDELETES=0 -DWRITEBACKS=0 -DLOSTS=0 -DCRASHES=0 -DOPS=0 -DREPLACES=0"
  "blind-outside|pass|-DBLIND -DLOSTS=0 -DCRASHES=0 -DOPS=0"
  "blind-taken-twice|pass|-DBLIND -DMAXACQ=2 -DMAXRENEW=0 -DMAXT=6 -DDELETES=0 -DLOSTS=0 -DCRASHES=0 -DOPS=0 -DREPLACES=0"
  "blind-lost-answer|pass|-DBLIND -DDELETES=0 -DCRASHES=0 -DOPS=0"
  "blind-crash|pass|-DBLIND -DDELETES=0 -DWRITEBACKS=0 -DLOSTS=0 -DOPS=0"
  "blind-operator|pass|-DBLIND -DDELETES=0 -DWRITEBACKS=0 -DLOSTS=0 -DCRASHES=0"
  "defect-no-wait|TOKENS|-DNO_WAIT -DWRITEBACKS=0 -DLOSTS=0 -DCRASHES=0 -DOPS=0 -DREPLACES=0"
  "defect-start-after-replaced|LEASE|-DLATE_LEASE -DDELETES=0 -DWRITEBACKS=0 -DLOSTS=0 -DCRASHES=0 -DOPS=0"
  "defect-self-takeover|MUTEX|-DSELF_TAKEOVER -DSAMEINST -DDELETES=0 -DWRITEBACKS=0 -DLOSTS=0 -DCRASHES=0 -DOPS=0 -DREPLACES=0"
  "defect-fence-same-bytes|FENCE|-DHASH_ETAGS -DFENCE_SAME_BYTES -DDELETES=0 -DWRITEBACKS=0 -DLOSTS=0 -DCRASHES=0 -DOPS=0 -DREPLACES=0"
  "defect-blind-no-raise|TOKENS|-DBLIND -DNO_RAISE -DMAXACQ=2 -DMAXRENEW=0 -DMAXT=6 -DDELETES=0 -DLOSTS=0 -DCRASHES=0 -DOPS=0 -DREPLACES=0"
  "window-deleted-during-wait|TOKENS|-DSTRICT_TOKENS -DWRITEBACKS=0 -DLOSTS=0 -DCRASHES=0 -DOPS=0 -DREPLACES=0"
  "window-written-back-while-settling|LEASE|-DSTRICT_REVIVED -DDELETES=0 -DCRASHES=0 -DOPS=0"
)

# The assertion text spin prints for each property.
property_of() {
  case "$1" in
  *'T>=tgt_max'*) echo FENCE ;;
  *'T>last_token'*) echo TOKENS ;;
  *'hold['*) echo MUTEX ;;
  *'(ousted[c])||'*) echo LEASE ;;
  *) echo unknown ;;
  esac
}

# Builds and searches one configuration; writes its one-line result to $out/<name>/result.
check() {
  local name=$1 expected=$2 flags=$3 dir=$out/$1
  mkdir -p "$dir"
  cp "$model" "$dir/"
  local started=$SECONDS
  flags="$flags ${MODEL_DEFINES:-}"
  # shellcheck disable=SC2086 # the flags are words on purpose
  (cd "$dir" && spin $flags -a lease-protocol.pml >spin.txt 2>&1 &&
    "${CC:-gcc}" -O2 -w -DSAFETY -DCOLLAPSE -DMEMLIM=6000 -o pan pan.c >cc.txt 2>&1) || {
    echo "$name|BUILD FAILED (see $dir)|0|0|0|" >"$dir/result"
    return
  }
  # A hash table of 2^26 slots: the largest configurations store 30 to 61 million states, which
  # 2^24 slots chain three or four deep (blind-taken-twice: 333 s against 375, 3.6 GB either way).
  (cd "$dir" && ./pan -E -m1000000 -w26 >pan.txt 2>&1) || true
  local stored explored errors depth violated found=pass
  stored=$(awk '/states, stored/ { print $1; exit }' "$dir/pan.txt")
  explored=$(awk '/transitions \(= stored\+matched\)/ { print $1; exit }' "$dir/pan.txt")
  errors=$(sed -n 's/.*errors: \([0-9]*\).*/\1/p' "$dir/pan.txt" | head -n 1)
  depth=$(sed -n 's/.*assertion violated.*(at depth \([0-9]*\)).*/\1/p' "$dir/pan.txt" | head -n 1)
  violated=$(grep -m 1 'assertion violated' "$dir/pan.txt" || true)
  if grep -q 'max search depth too small' "$dir/pan.txt"; then
    found='DEPTH LIMIT'
  elif [[ -z $errors ]]; then
    found='NO RESULT'
  elif ((errors > 0)); then
    found=$(property_of "$violated")
  fi
  echo "$name|$found|${stored:-0}|${explored:-0}|$((SECONDS - started))|${depth:-}" >"$dir/result"
}

selected=("$@")
running=0
started=$SECONDS
for config in "${configs[@]}"; do
  IFS='|' read -r name expected flags <<<"$config"
  if ((${#selected[@]})) && [[ ! " ${selected[*]} " == *" $name "* ]]; then continue; fi
  check "$name" "$expected" "$flags" &
  running=$((running + 1))
  if ((running >= jobs)); then
    wait -n || true
    running=$((running - 1))
  fi
done
wait

failures=0
printf '%-36s %-8s %-8s %12s %14s %6s  %s\n' configuration expected found 'states stored' 'transitions' 'time' 'counterexample'
for config in "${configs[@]}"; do
  IFS='|' read -r name expected _ <<<"$config"
  [[ -f $out/$name/result ]] || continue
  IFS='|' read -r _ found stored explored seconds depth <"$out/$name/result"
  verdict=ok
  [[ $found == "$expected" ]] || {
    verdict=UNEXPECTED
    failures=$((failures + 1))
  }
  trail=''
  [[ -n $depth ]] && trail="$depth steps: $out/$name/lease-protocol.pml.trail"
  printf '%-36s %-8s %-8s %12s %14s %5ss  %s %s\n' "$name" "$expected" "$found" "$stored" "$explored" "$seconds" "$trail" \
    "$([[ $verdict == ok ]] || echo "<- $verdict")"
done
echo "replay a counterexample: cd <its folder> && spin -t -p -g <its -D flags> lease-protocol.pml"
echo "model check: $failures unexpected result(s), $((SECONDS - started)) s"
((failures == 0))
