#!/usr/bin/env bash
# Packs the npm tarball of bindings/node into DIR (default: the current
# directory) with its bundled dependency inside: node-api-headers, pinned
# exactly in package.json and by package-lock.json, so that
# `npm install --offline ./dexagents-<version>.tgz` builds the addon with no
# network and no Node headers on the system. The package's files are copied
# to a staging directory (the source tree gets no node_modules), `npm ci
# --ignore-scripts` installs the dependency there (from npm's cache, else
# the registry), and `npm pack` packs it. Prints the tarball's path.
set -eu
here=$(cd "$(dirname "$0")/.." && pwd)
dest=${1:-.}
mkdir -p "$dest"
dest=$(cd "$dest" && pwd)
stage=$(mktemp -d "${TMPDIR:-/tmp}/dexagents-pack.XXXXXX")
trap 'rm -rf "$stage"' EXIT
tar -C "$here" --exclude=./node_modules --exclude=./build --exclude='./*.tgz' -cf - . | tar -C "$stage" -xf -
if ! (cd "$stage" && npm ci --ignore-scripts --prefer-offline --no-audit --no-fund --loglevel=error) >"$stage/npm.log" 2>&1; then
  echo "pack: npm ci failed (no npm cache and no registry?): $(tail -n 5 "$stage/npm.log" | tr '\n' ' ')" >&2
  exit 1
fi
name=$(cd "$stage" && npm pack --silent --pack-destination "$dest" | tail -n 1)
echo "$dest/$name"
