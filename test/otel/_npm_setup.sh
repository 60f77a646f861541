#!/usr/bin/env bash
# Installs the pinned npm packages of the OTLP receiver (test/otel/package.json
# and package-lock.json: @opentelemetry/otlp-transformer, whose compiled
# opentelemetry-proto definitions decode the export, and protobufjs) into
# $BUILD/npm-otel, never into the source tree; again only when the lock
# changed. Prints the node_modules directory; exits 1 with the reason on
# stderr when npm is missing or the registry cannot be reached.
set -u
cd "$(dirname "$0")/../.." || exit 1
dir=${NPM_DIR:-$PWD/${BUILD:-build}/npm-otel}
mods=$dir/node_modules
if ! { [[ -f $mods/@opentelemetry/otlp-transformer/package.json ]] &&
  cmp -s test/otel/package-lock.json "$dir/package-lock.json"; }; then
  command -v npm >/dev/null || { echo "npm is not installed" >&2; exit 1; }
  mkdir -p "$dir" 2>/dev/null || { echo "cannot create $dir" >&2; exit 1; }
  cp test/otel/package.json test/otel/package-lock.json "$dir/"
  if ! (cd "$dir" && timeout 300 npm ci --ignore-scripts --no-audit --no-fund --loglevel=error >"$dir/npm.log" 2>&1); then
    echo "npm ci failed (offline?): $(tail -n 3 "$dir/npm.log" | tr '\n' ' ')" >&2
    exit 1
  fi
fi
echo "$mods"
