#!/usr/bin/env bash
# Header test (libgit2 tests/headertest): every public header, and the
# umbrella dexagents.h, compiles alone, included twice, as C99, C11 and C++11
# with -Wall -Wextra -pedantic -Werror, with gcc and clang.
source "$(dirname "$0")/_lib.sh"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

cflags=(-Wall -Wextra -pedantic -Werror -Wundef -Wshadow -Wstrict-prototypes -Wmissing-prototypes
  -Wcast-qual -Wconversion -Wsign-conversion -Iinclude)
cxxflags=(-Wall -Wextra -pedantic -Werror -Wundef -Wshadow -Wold-style-cast -Wzero-as-null-pointer-constant
  -Iinclude)

compilers=()
for cc in gcc clang; do command -v $cc >/dev/null && compilers+=("$cc"); done
for h in include/dexagents/*.h; do
  name=${h#include/}
  printf '#include <%s>\n#include <%s>\nint main(void) { return 0; }\n' "$name" "$name" >"$tmp/t.c"
  printf '#include <%s>\n#include <%s>\nint main() { return 0; }\n' "$name" "$name" >"$tmp/t.cpp"
  for cc in gcc clang; do
    cxx=$([[ $cc == gcc ]] && echo g++ || echo clang++)
    if ! command -v $cc >/dev/null || ! command -v $cxx >/dev/null; then
      skip "$name with $cc" "$cc or $cxx not installed (make deps-check)"
      continue
    fi
    for std in c99 c11; do
      check "$name alone as $std ($cc)" $cc -std=$std "${cflags[@]}" -c "$tmp/t.c" -o "$tmp/t.o"
    done
    check "$name alone as c++11 ($cxx)" $cxx -std=c++11 "${cxxflags[@]}" -c "$tmp/t.cpp" -o "$tmp/t.o"
  done
done

# The umbrella includes every public header, so a user needs only it.
missing=""
for h in include/dexagents/*.h; do
  b=${h##*/}
  [[ $b == dexagents.h ]] && continue
  grep -q "^#include \"$b\"" include/dexagents/dexagents.h || missing="$missing $b"
done
if [[ -z $missing ]]; then pass "dexagents.h includes every public header"; else
  fail "dexagents.h includes every public header" "missing:$missing"; fi

# Public identifiers carry the prefix (curl test1167): every macro, type and
# enum constant the headers define starts with dexa_/DEXA_ (guards too).
bad=$(cat include/dexagents/*.h | perl -0777 -ne '
  s{/\*.*?\*/}{}gs;
  while (/^\s*#\s*define\s+(\w+)/mg) { print "$1\n" }
  while (/\btypedef\b[^;{]*?\b(\w+)\s*;/g) { print "$1\n" }
  while (/\}\s*(\w+)\s*;/g) { print "$1\n" }
  while (/\btypedef\b[^;{]*?\(\s*\*\s*(\w+)\s*\)/g) { print "$1\n" }
  while (/\benum\s+\w*\s*\{([^}]*)\}/g) { for (split /,/, $1) { print "$1\n" if /^\s*([A-Za-z_]\w*)/ } }
  while (/\b(?:struct|enum)\s+(\w+)/g) { print "$1\n" }' |
  grep -vE '^(dexa_|DEXA_|DEXAGENTS_)' | sort -u | tr '\n' ' ')
if [[ -z $bad ]]; then pass "public identifiers start with dexa_ or DEXA_"; else
  fail "public identifiers start with dexa_ or DEXA_" "$bad"; fi

summary
