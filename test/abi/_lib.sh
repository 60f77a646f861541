# Shared by the test/abi scripts: counts checks and prints the summary line
# in the format of test/testing.h ("ok   name", "FAIL name", "skip name").
set -u
cd "$(dirname "${BASH_SOURCE[0]}")/../.." || exit 2
BUILD="${BUILD:-build}"
LIBOUT="${LIBOUT:-lib}"
SAN_FLAGS="${SAN_FLAGS:-}"
t_pass=0 t_fail=0 t_skip=0

pass() { t_pass=$((t_pass + 1)); echo "ok   $1"; }
fail() {
  t_fail=$((t_fail + 1))
  echo "FAIL $1"
  shift
  local l
  for l in "$@"; do printf '%s\n' "$l" | sed 's/^/    /'; done
}
skip() { t_skip=$((t_skip + 1)); echo "skip $1"; echo "    skipped: $2"; }
# check NAME COMMAND...: passes when the command succeeds; shows its output otherwise.
check() {
  local name=$1 log
  shift
  if log=$("$@" 2>&1); then pass "$name"; else fail "$name" "$(printf '%s' "$log" | head -n 30)"; fi
}
summary() {
  if ((t_skip)); then
    echo "$t_pass passed, $t_fail failed, $t_skip skipped"
  else
    echo "$t_pass passed, $t_fail failed"
  fi
  ((t_fail == 0))
  exit
}

# has FEATURE: the build in $BUILD has it (its features file, written by the
# Makefile; see dexa_build_has(3)). Without the file: every feature.
has() { [[ ! -f $BUILD/features ]] || grep -qx "$1" "$BUILD/features"; }

# The exported functions, from the version script (every node).
map_symbols() {
  sed -e 's|/\*.*\*/||g' lib/libdexagents.map | tr -s ' \t;' '\n' | grep -E '^dexa_[A-Za-z0-9_]+$' | sort -u
}
# The functions declared with DEXA_EXTERN in the public headers.
header_symbols() {
  cat include/dexagents/*.h | perl -0777 -ne 's{/\*.*?\*/}{}gs; while (/DEXA_EXTERN\b[^;{]*?\b(dexa_\w+)\s*\(/g) { print "$1\n" }' | sort -u
}
