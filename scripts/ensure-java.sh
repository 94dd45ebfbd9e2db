# Sourced (by .ci/run): installs the Java runtime that DynamoDB Local (the local DynamoDB engine)
# runs on, from Debian's repositories, when `java` is missing. Nothing to do when
# DYNAMODB_ENDPOINT names another engine.
if [[ -n ${DYNAMODB_ENDPOINT:-} ]]; then
  echo "using DYNAMODB_ENDPOINT=$DYNAMODB_ENDPOINT"
else
  if ! command -v java >/dev/null || ! command -v curl >/dev/null; then
    echo "missing java or curl: installing openjdk-17-jre-headless from Debian packages"
    _sudo=()
    ((EUID == 0)) || _sudo=(sudo)
    "${_sudo[@]}" apt-get update -q
    "${_sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends \
      openjdk-17-jre-headless curl
    unset _sudo
  fi
  java -version 2>&1 | head -n 1
fi
