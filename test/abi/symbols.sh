#!/usr/bin/env bash
# Symbol check (libbpf check_abi style): the shared library exports exactly
# the functions of the version script, each dexa_-prefixed, versioned, and
# declared with DEXA_EXTERN in a public header; the header declares nothing
# that the version script does not export.
source "$(dirname "$0")/_lib.sh"

ver() { sed -n "s/^#define DEXA_VERSION_$1 \([0-9]*\)/\1/p" include/dexagents/version.h; }
MAJOR=$(ver MAJOR) MINOR=$(ver MINOR) PATCH=$(ver PATCH)
so="$LIBOUT/libdexagents.so.$MAJOR.$MINOR.$PATCH"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

map_symbols >"$tmp/map"
header_symbols >"$tmp/headers"

if [[ ! -f $so ]]; then
  fail "shared library $so exists" "not built"
  summary
fi
pass "shared library $so exists"

# Defined dynamic symbols, without the version node symbols (type A).
nm -D --defined-only "$so" | awk '$2 != "A" { print $3 }' >"$tmp/nm-versioned"
sed 's/@.*//' "$tmp/nm-versioned" | sort -u >"$tmp/exported"

if diff -u "$tmp/map" "$tmp/exported" >"$tmp/diff"; then
  pass "exported symbols equal the version script"
else
  fail "exported symbols equal the version script" \
    "--- version script, +++ exported by $so" "$(grep '^[-+][^-+]' "$tmp/diff" | head -n 40)"
fi

bad=$(grep -v '^dexa_' "$tmp/exported" | tr '\n' ' ')
if [[ -z $bad ]]; then pass "every exported symbol starts with dexa_"; else
  fail "every exported symbol starts with dexa_" "$bad"; fi

unversioned=$(grep -v '@@\?DEXAGENTS_[0-9]*\.[0-9]*$' "$tmp/nm-versioned" | tr '\n' ' ')
if [[ -z $unversioned ]]; then pass "every exported symbol has a DEXAGENTS_ version"; else
  fail "every exported symbol has a DEXAGENTS_ version" "$unversioned"; fi

undeclared=$(comm -23 "$tmp/map" "$tmp/headers" | tr '\n' ' ')
if [[ -z $undeclared ]]; then pass "every version-script symbol is declared DEXA_EXTERN in a public header"; else
  fail "every version-script symbol is declared DEXA_EXTERN in a public header" "$undeclared"; fi

unexported=$(comm -13 "$tmp/map" "$tmp/headers" | tr '\n' ' ')
if [[ -z $unexported ]]; then pass "every DEXA_EXTERN function is in the version script"; else
  fail "every DEXA_EXTERN function is in the version script" "$unexported"; fi

# One node per minor release: DEXAGENTS_<major>.<minor>, none newer than
# version.h, the first one DEXAGENTS_<major>.0, and no symbol in two nodes.
nodes=$(sed -e 's|/\*.*\*/||g' lib/libdexagents.map | grep -oE '^[[:space:]]*DEXAGENTS_[0-9]+\.[0-9]+' | tr -d ' \t')
first=$(head -n 1 <<<"$nodes")
badnode=""
for n in $nodes; do
  m=${n#DEXAGENTS_}
  [[ ${m%%.*} == "$MAJOR" && ${m#*.} -le $MINOR ]] || badnode="$badnode $n"
done
if [[ $first == "DEXAGENTS_$MAJOR.0" && -z $badnode ]]; then
  pass "version nodes are DEXAGENTS_$MAJOR.0 .. DEXAGENTS_$MAJOR.$MINOR"
else
  fail "version nodes are DEXAGENTS_$MAJOR.0 .. DEXAGENTS_$MAJOR.$MINOR" "nodes: $nodes"
fi
dups=$(sed -e 's|/\*.*\*/||g' lib/libdexagents.map | tr -s ' \t;' '\n' | grep -E '^dexa_' | sort | uniq -d | tr '\n' ' ')
if [[ -z $dups ]]; then pass "no symbol is listed twice in the version script"; else
  fail "no symbol is listed twice in the version script" "$dups"; fi

# SONAME and the development symlinks.
soname=$(readelf -d "$so" | sed -n 's/.*Library soname: \[\(.*\)\]/\1/p')
if [[ $soname == "libdexagents.so.$MAJOR" ]]; then pass "SONAME is libdexagents.so.$MAJOR"; else
  fail "SONAME is libdexagents.so.$MAJOR" "SONAME: $soname"; fi
if [[ $(readlink "$LIBOUT/libdexagents.so.$MAJOR") == "libdexagents.so.$MAJOR.$MINOR.$PATCH" &&
  $(readlink "$LIBOUT/libdexagents.so") == "libdexagents.so.$MAJOR" ]]; then
  pass "symlinks libdexagents.so -> .so.$MAJOR -> .so.$MAJOR.$MINOR.$PATCH"
else
  fail "symlinks libdexagents.so -> .so.$MAJOR -> .so.$MAJOR.$MINOR.$PATCH"
fi

# The static library carries no non-dexa global data or function names that
# could clash in a host (internal cross-file names use dexa__).
# (A sanitizer build adds its own __odr_asan/__asan/__ubsan globals.)
clash=$(nm --defined-only -g "$LIBOUT/libdexagents.a" 2>/dev/null | awk 'NF == 3 { print $3 }' |
  grep -v '^dexa_' | grep -Ev '^__(odr_asan|asan|ubsan|sancov)' | sort -u | tr '\n' ' ')
if [[ -z $clash ]]; then pass "every global of libdexagents.a starts with dexa_"; else
  fail "every global of libdexagents.a starts with dexa_" "$clash"; fi

summary
