# Sourced (by .ci/run and scripts/demo.sh): installs the Ceph packages the local S3 engine needs,
# from Debian's repositories, when any is missing. Nothing to do when S3_ENDPOINT names another engine.
if [[ -n ${S3_ENDPOINT:-} ]]; then
  echo "using S3_ENDPOINT=$S3_ENDPOINT"
else
  _missing=()
  for _command in ceph-mon ceph-osd radosgw radosgw-admin ceph monmaptool curl; do
    command -v "$_command" >/dev/null || _missing+=("$_command")
  done
  if ((${#_missing[@]})); then
    echo "missing ${_missing[*]}: installing Ceph from Debian packages"
    _sudo=()
    ((EUID == 0)) || _sudo=(sudo)
    "${_sudo[@]}" apt-get update -q
    "${_sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends \
      ceph-mon ceph-osd radosgw ceph-common curl
  fi
  ceph --version
  unset _missing _command _sudo
fi
