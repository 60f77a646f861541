#!/usr/bin/env bash
# The compatibility check of the ABI baseline: test/abi/compat_app.c is
# compiled against the public headers of the commit that last wrote
# abi/libdexagents.abi (git show; the working tree's headers when there is no
# baseline or no git history), linked against the SONAME only, and run with
# LD_LIBRARY_PATH set to the freshly built library. An application built
# against 1.0 must keep working with every later 1.x library.
source "$(dirname "$0")/_lib.sh"
ver=$(sed -n 's/^#define DEXA_VERSION_STRING "\(.*\)"/\1/p' include/dexagents/version.h)
so="$LIBOUT/libdexagents.so.$ver"
work=$(mktemp -d) || exit 2
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/include/dexagents" "$work/lib"
rev=""
# abi/BASELINE names the release commit whose headers the baseline describes;
# without it, the commit that last wrote the baseline.
if [[ -f abi/libdexagents.abi ]] && git rev-parse --git-dir >/dev/null 2>&1; then
  if [[ -f abi/BASELINE ]]; then
    rev=$(sed -n 's/^commit \([0-9a-f]\{40\}\)$/\1/p' abi/BASELINE)
  else
    rev=$(git log -1 --format=%H -- abi/libdexagents.abi 2>/dev/null)
  fi
fi
if [[ -n $rev ]]; then
  for h in $(git ls-tree --name-only "$rev" include/dexagents/); do
    git show "$rev:$h" >"$work/include/dexagents/$(basename "$h")"
  done
  echo "headers of the baseline commit ${rev:0:12}"
else
  cp include/dexagents/*.h "$work/include/dexagents/"
  echo "no committed baseline: headers of the working tree"
fi
if [[ -n $SAN_FLAGS ]]; then
  skip "application built against the baseline runs with the new library" "sanitizer build"
  summary
fi
if ! has sqlite; then # it runs a session on a ":memory:" store
  skip "application built against the baseline runs with the new library" "this build has no SQLite store"
  summary
fi
# Link against the SONAME alone (as an application built on another machine).
ln -s "$(cd "$(dirname "$so")" && pwd)/$(basename "$so")" "$work/lib/libdexagents.so"
check "compat_app builds against the baseline's headers" \
  cc -std=c11 -Wall -Wextra -Werror -I"$work/include" test/abi/compat_app.c -L"$work/lib" \
  -ldexagents -lpthread -o "$work/compat_app"
if [[ -x $work/compat_app ]]; then
  check "it needs libdexagents.so.1" bash -c "readelf -d '$work/compat_app' | grep -q 'NEEDED.*libdexagents.so.1'"
  if log=$(LD_LIBRARY_PATH="$LIBOUT" timeout 60 "$work/compat_app" 2>&1); then
    pass "application built against the baseline runs with the new library"
  else
    fail "application built against the baseline runs with the new library" "$(printf '%s' "$log" | tail -n 20)"
  fi
fi
summary
