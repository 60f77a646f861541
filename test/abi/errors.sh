#!/usr/bin/env bash
# Every DEXA_E_* code of errors.h is in the library's table (src/util/errors.c),
# in the unit test's list (test/unit/test_errors.c) and in dexagents-errors(7);
# numbers are unique and each lies in its class range.
source "$(dirname "$0")/_lib.sh"
mapfile -t rows < <(sed -n 's/^[[:space:]]*\(DEXA_E_[A-Z0-9_]*\)[[:space:]]*=[[:space:]]*\(-[0-9]*\).*/\1 \2/p' include/dexagents/errors.h)
((${#rows[@]} > 0)) || { fail "errors.h declares codes"; summary; }
for f in src/util/errors.c test/unit/test_errors.c man/man7/dexagents-errors.7; do
  missing=""
  for r in "${rows[@]}"; do grep -q "\b${r% *}\b" "$f" || missing="$missing ${r% *}"; done
  if [[ -z $missing ]]; then pass "$f names every code"; else fail "$f names every code" "missing:$missing"; fi
done
dups=$(printf '%s\n' "${rows[@]}" | awk '{ print $2 }' | sort | uniq -d | tr '\n' ' ')
if [[ -z $dups ]]; then pass "code numbers are unique"; else fail "code numbers are unique" "$dups"; fi
bad=""
for r in "${rows[@]}"; do
  n=${r#* }; n=${n#-}
  [[ $n =~ ^[1239][0-9][0-9]$ ]] || bad="$bad ${r% *}"
done
if [[ -z $bad ]]; then pass "every code is in a class range (-1xx, -2xx, -3xx, -9xx)"; else
  fail "every code is in a class range (-1xx, -2xx, -3xx, -9xx)" "$bad"; fi
summary
