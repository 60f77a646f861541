#!/usr/bin/env bash
# Man page checks; the work is in _manpages.pl (perl is always on Debian).
cd "$(dirname "$0")/../.." || exit 2
exec perl test/abi/_manpages.pl
