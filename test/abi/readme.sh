#!/usr/bin/env bash
# The README's C example is test/abi/readme_example.c, byte for byte; it
# compiles cleanly, links with the static library and runs.
source "$(dirname "$0")/_lib.sh"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
src=test/abi/readme_example.c
awk '/^```c$/ { on = 1; next } /^```$/ { on = 0 } on' README.md >"$tmp/block.c"
if diff -u "$src" "$tmp/block.c" >"$tmp/diff"; then pass "README.md C block equals $src"; else
  fail "README.md C block equals $src" "$(head -n 30 "$tmp/diff")"; fi
for s in 'make run' 'make check'; do
  check "README.md shows \`$s\`" grep -q "^$s" README.md
done
check "$src compiles (gcc -Wall -Wextra -Werror)" gcc -std=c11 -Wall -Wextra -Werror -Iinclude -c "$src" -o "$tmp/ex.o"
if command -v clang >/dev/null; then
  check "$src compiles (clang -Wall -Wextra -Werror)" clang -std=c11 -Wall -Wextra -Werror -Iinclude -c "$src" -o "$tmp/ex2.o"
fi
libs=(-lcjson -lcurl -lmbedtls -lmbedx509 -lmbedcrypto -lmicrohttpd -lsqlite3 -lpq -lpthread -lm)
if cc $SAN_FLAGS -std=c11 -Iinclude -o "$tmp/ex" "$src" "$LIBOUT/libdexagents.a" "${libs[@]}" >"$tmp/log" 2>&1; then
  pass "$src links with $LIBOUT/libdexagents.a"
  if ! has sqlite; then
    skip "$src runs and prints the session's events" "this build has no SQLite store"
  elif out=$(cd "$tmp" && timeout 60 ./ex 2>&1) && grep -q '"events"' <<<"$out"; then
    pass "$src runs and prints the session's events"
  else
    fail "$src runs and prints the session's events" "$(head -n 20 <<<"$out")"
  fi
else
  fail "$src links with $LIBOUT/libdexagents.a" "$(grep -o "undefined reference to \`[a-z_0-9]*'" "$tmp/log" | sort -u | head -n 20)" "$(grep -v 'undefined reference' "$tmp/log" | head -n 5)"
fi
summary
