#!/bin/sh
# Builds the N-API addon bindings/node/build/dexagents.node with the system C
# compiler (no node-gyp, no download): Node's headers from /usr/include/node
# (Debian's nodejs / libnode-dev), else from the npm package node-api-headers
# installed into bindings/node/node_modules (ignored by git). The addon links
# libdexagents.so.1 from LIBOUT (default lib/) with a RUNPATH to it, so
# LD_LIBRARY_PATH still wins.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
LIBOUT=${LIBOUT:-lib}
CC=${CC:-cc}
case $LIBOUT in /*) libdir=$LIBOUT ;; *) libdir=$root/$LIBOUT ;; esac
if [ -f "${NODE_INCLUDE:-/usr/include/node}/node_api.h" ]; then
  inc=${NODE_INCLUDE:-/usr/include/node}
else
  inc=$here/node_modules/node-api-headers/include
  if [ ! -f "$inc/node_api.h" ]; then
    (cd "$here" && npm install --no-save --no-audit --no-fund node-api-headers >/dev/null)
  fi
fi
mkdir -p "$here/build"
out=$here/build/dexagents.node
src=$here/src/addon.c
# Rebuild only when the source, the headers or the library changed.
if [ -f "$out" ] && [ "$out" -nt "$src" ] && [ "$out" -nt "$libdir/libdexagents.so.1" ] &&
  [ -z "$(find "$root/include/dexagents" -newer "$out" -name '*.h')" ]; then
  exit 0
fi
echo "node: $out"
# -DNODE_GYP_MODULE_NAME: the name node-gyp would define.
$CC -std=c11 -D_GNU_SOURCE -O2 -g -fPIC -shared -fvisibility=hidden \
  -Wall -Wextra -Wno-unused-parameter -Wno-missing-field-initializers \
  -DNODE_GYP_MODULE_NAME=dexagents -I"$inc" -I"$root/include" \
  -o "$out.tmp" "$src" -L"$libdir" -l:libdexagents.so.1 -lpthread \
  -Wl,-rpath,"$libdir"
mv "$out.tmp" "$out"
