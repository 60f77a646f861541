#!/usr/bin/env bash
# The layers of DESIGN.md section 2 and 10, checked two ways: the project
# headers each directory of src/ includes, and the internal symbols its
# objects need from other directories. The core depends on interfaces only
# (src/iface, src/flow, src/util); model clients and tool sources implement
# those interfaces beside the core and never call it.
source "$(dirname "$0")/_lib.sh"

# allowed DIR: the src/ directories DIR may include or call into.
allowed() {
  case $1 in
  util) echo "util" ;;
  flow) echo "flow util" ;;
  iface) echo "iface flow util" ;;
  core) echo "core iface flow util" ;;
  model | tools) echo "$1 iface util" ;;
  harness) echo "harness iface util" ;;
  store) echo "store util" ;;
  runtime) echo "runtime store flow iface util trace" ;;
  trace) echo "trace util" ;; # spans and the OTLP exporter
  http) echo "http util" ;;
  cli) echo "cli" ;; # the dexagents command: the public headers only
  *) echo "$1 iface flow util" ;; # a new layer: interfaces only until it is listed here
  esac
}

# public_too DIR: directories DIR may also reach through their public dexa_
# functions only (the ABI): the runtime is a host of dexa_dispatch, the HTTP
# routes are clients of the runtime (and of the MCP sign-in), and the dexagents command (src/cli,
# not part of the library) is a client of the whole ABI.
public_too() {
  case $1 in
  runtime) echo "core" ;;
  http) echo "runtime tools" ;;
  cli) echo "core flow iface model tools store runtime http util" ;;
  esac
}

dirs=$(cd src && ls -d */ | tr -d /)

for d in $dirs; do
  ok=" $(allowed "$d") "
  bad=""
  for f in src/"$d"/*.[ch]; do
    for inc in $(sed -n 's/^#include "\([a-z_]*\)\/.*"/\1/p' "$f"); do
      [[ $inc == dexagents ]] && continue
      [[ $ok == *" $inc "* ]] || bad="$bad $f->$inc"
    done
  done
  if [[ -z $bad ]]; then pass "src/$d includes only: $(allowed "$d") (and the public headers)"; else
    fail "src/$d includes only: $(allowed "$d") (and the public headers)" "$bad"; fi
done

if ! grep -q '#include "dexagents/dexagents.h"' src/core/*.[ch]; then
  pass "src/core does not include the umbrella header"
else
  fail "src/core does not include the umbrella header" "$(grep -l 'dexagents/dexagents.h' src/core/*.[ch])"
fi

# Symbols: which directory defines each dexa__ internal, and who needs it.
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
if ! compgen -G "$BUILD/src/core/*.o" >/dev/null; then
  fail "objects of $BUILD/src exist" "build the library first"
  summary
fi
for d in $dirs; do
  for o in "$BUILD"/src/"$d"/*.o; do
    nm --defined-only "$o" | awk -v d="$d" '$2 ~ /[TDBR]/ { print $3, d }'
  done
done | sort -u >"$tmp/defs"
for d in $dirs; do
  ok=" $(allowed "$d") " pub=" $(public_too "$d") "
  for o in "$BUILD"/src/"$d"/*.o; do nm -u "$o" | awk '{ print $2 }'; done | sort -u >"$tmp/undef"
  bad=$(join "$tmp/undef" "$tmp/defs" | while read -r sym owner; do
    [[ $ok == *" $owner "* ]] && continue
    [[ $sym != dexa__* && $pub == *" $owner "* ]] && continue
    echo "$sym($owner)"
  done | sort -u | head -n 20 | tr '\n' ' ')
  what=$(allowed "$d")
  [[ -n $(public_too "$d") ]] && what="$what, and the public functions of $(public_too "$d")"
  if [[ -z $bad ]]; then pass "objects of src/$d call only: $what"; else
    fail "objects of src/$d call only: $what" "$bad"; fi
done

summary
