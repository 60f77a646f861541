#!/usr/bin/env bash
# Installs the pinned npm packages of examples/restate (its package.json and
# package-lock.json: the Restate SDK and the Restate server, whose binary the
# package ships) into $BUILD/npm-restate, never into the source tree, and
# links the in-tree Node bindings there as `dexagents`. Install scripts are
# not run (the server's package would send install telemetry). Prints the
# node_modules directory; exits 1 with the reason on stderr when npm is
# missing or the registry cannot be reached.
set -u
cd "$(dirname "$0")/../.." || exit 1
dir=${NPM_DIR:-$PWD/${BUILD:-build}/npm-restate}
src=examples/restate
mods=$dir/node_modules
if ! { [[ -f $mods/@restatedev/restate-sdk/package.json && -f $mods/@restatedev/restate-server/package.json ]] &&
  cmp -s "$src/package-lock.json" "$dir/package-lock.json"; }; then
  command -v npm >/dev/null || { echo "npm is not installed" >&2; exit 1; }
  mkdir -p "$dir" 2>/dev/null || { echo "cannot create $dir" >&2; exit 1; }
  cp "$src/package.json" "$src/package-lock.json" "$dir/"
  if ! (cd "$dir" && timeout 600 npm ci --ignore-scripts --no-audit --no-fund --loglevel=error >"$dir/npm.log" 2>&1); then
    echo "npm ci failed (offline?): $(tail -n 3 "$dir/npm.log" | tr '\n' ' ')" >&2
    exit 1
  fi
fi
ln -sfn "$PWD/bindings/node" "$mods/dexagents"
echo "$mods"
