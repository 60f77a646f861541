#!/usr/bin/env bash
# examples/host-loop: the minimal host worker drives four turns through
# dexa_dispatch alone (its own in-memory attributes, channels and waits,
# evaluated by dexa_wait_evaluate), approves a pending write, claims it
# before it runs, and with --lose-write records an unknown outcome instead
# of running a claimed write again. Prints "N passed, N failed".
set -u
cd "$(dirname "$0")/../.." || exit 2

# A build dir other than build has its own programs ($BUILD/examples/...).
if [[ ${BUILD:-build} == build ]]; then HOST=${HOST_LOOP:-examples/host-loop/host-loop}; else
  HOST=${HOST_LOOP:-$BUILD/examples/host-loop/host-loop}; fi
passed=0 failed=0
ok() { echo "ok   $1"; passed=$((passed + 1)); }
fail() { echo "FAIL $1"; shift; for l in "$@"; do echo "    $l"; done; failed=$((failed + 1)); }

if [[ ! -x $HOST ]]; then
  if [[ ${BUILD:-build} != build ]]; then
    echo "skip host-loop example: $HOST is not built in this build ($BUILD)"
    echo "0 passed, 0 failed, 1 skipped"
    exit 0
  fi
  fail "host-loop built" "$HOST is missing (make examples)"
  echo "$passed passed, $failed failed"
  exit 1
fi

out=$(timeout 30 "$HOST" 2>&1)
status=$?
if ((status == 0)); then ok "host-loop exits 0"; else fail "host-loop exits 0" "status $status" "$out"; fi
expect() {
  if grep -qF -- "$2" <<<"$out"; then ok "$1"; else fail "$1" "no \"$2\" in:" "$out"; fi
}
expect "the first turn is answered" "model Local demo response: hello"
expect "the tool Step ran through the host" "CallTool-"
expect "the join waited and went on" "ResumeTurn-"
expect "the tool's result reached the model" "model Tool clock (ok):"
expect "a durable timer fired (dexa_wait_evaluate)" "tool  Waited 1 seconds."
expect "the pending write is listed" "pending demo-t4r1c1: approval of stamp"
expect "the single-attempt Step is claimed before it runs" "CallSingleAttemptTool-18 claimed (durably, before it runs)"
expect "the approved write ran once" "stamp ran 1 time(s)"
expect "the write's result reached the model" "model Tool stamp (ok): stamped"

out=$(timeout 30 "$HOST" --lose-write 2>&1)
status=$?
if ((status == 0)); then ok "host-loop --lose-write exits 0"; else fail "host-loop --lose-write exits 0" "status $status" "$out"; fi
expect "a claimed write that lost its result is not run again" "stamp ran 1 time(s)"
expect "its recovery Step ran" "RecordToolOutcome-"
expect "the model sees an unknown outcome" "model Tool stamp (unknown_outcome):"
echo "$passed passed, $failed failed"
((failed == 0))
