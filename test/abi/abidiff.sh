#!/usr/bin/env bash
# ABI check against the reviewed baseline abi/libdexagents.abi (abigail-tools):
# any abidiff status but added symbols fails, because a layout break only sets
# bit 4 (see /work/shared/reference/c-style.md 3.5). The baseline is written
# by `make abi-update` at release time, once every 1.0 symbol exists.
source "$(dirname "$0")/_lib.sh"
ver=$(sed -n 's/^#define DEXA_VERSION_STRING "\(.*\)"/\1/p' include/dexagents/version.h)
so="$LIBOUT/libdexagents.so.$ver"
if ! command -v abidiff >/dev/null; then
  skip "abidiff against abi/libdexagents.abi" "abigail-tools not installed (make deps-check)"
elif [[ ! -f abi/libdexagents.abi ]]; then
  skip "abidiff against abi/libdexagents.abi" "no baseline yet: make abi-update when 1.0 is complete"
elif [[ -n $SAN_FLAGS ]]; then
  skip "abidiff against abi/libdexagents.abi" "sanitizer build: the baseline is of the plain build"
else
  check "abidiff against abi/libdexagents.abi" \
    abidiff --no-added-syms --suppressions abi/private-types.suppr --headers-dir2 include/dexagents \
      abi/libdexagents.abi "$so"
fi
summary
