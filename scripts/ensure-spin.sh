# Sourced (by .ci/run): installs the model checker that `npm run model` runs (Debian's `spin`)
# and the C compiler its verifiers are built with, from Debian's repositories, when missing.
if ! command -v spin >/dev/null || ! command -v gcc >/dev/null; then
  echo "missing spin or gcc: installing them from Debian packages"
  _sudo=()
  ((EUID == 0)) || _sudo=(sudo)
  "${_sudo[@]}" apt-get update -q
  "${_sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends spin gcc libc6-dev
  unset _sudo
fi
spin -V
