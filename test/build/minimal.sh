#!/usr/bin/env bash
# make check-minimal inside make check: builds the MINIMAL=1 variant in
# build-minimal (no third-party library but cJSON: a few seconds, the parts
# left out are not compiled) and runs the tests that apply to it. Its output
# is shown indented; its total is this test's total. Only the plain build
# runs it (a sanitizer or another build dir would only repeat it).
set -u
cd "$(dirname "$0")/../.." || exit 2
if [[ ${BUILD:-build} != build || -n ${SAN_FLAGS:-} || ${BUILD_MINIMAL_NESTED:-} ]]; then
  echo "skip make check-minimal: run by the plain make check only"
  echo "0 passed, 0 failed, 1 skipped"
  exit 0
fi
out=$(BUILD_MINIMAL_NESTED=1 make --no-print-directory check-minimal 2>&1)
status=$?
sed 's/^/    /' <<<"$out"
summary=$(grep -E '^[0-9]+ passed, [0-9]+ failed(, [0-9]+ skipped)?$' <<<"$out" | tail -n 1)
if [[ -z $summary ]]; then
  echo "FAIL make check-minimal: no total (exit status $status)"
  echo "0 passed, 1 failed"
  exit 1
fi
echo "$summary"
exit "$status"
