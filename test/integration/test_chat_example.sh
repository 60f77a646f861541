#!/usr/bin/env bash
# test-needs: sqlite
# examples/chat end to end: pipes messages into the terminal chat on a
# temporary SQLite store, restarts it with --resume and checks that the
# transcript survived. Prints "N passed, N failed" (test/run sums it).
set -u
cd "$(dirname "$0")/../.." || exit 2

CHAT=${CHAT:-$PWD/examples/chat/chat}
passed=0 failed=0
tmp=$(mktemp -d) || exit 2
trap 'rm -rf "$tmp"' EXIT
store="$tmp/chat.db"
notes="$store.notes.txt"
store_args=(--store "$store")
# CHAT_STORE (test/pg/suites.sh): a PostgreSQL store, given as DEX_AGENT_STORE;
# the notes then go to the current directory, here $tmp.
if [[ -n ${CHAT_STORE:-} ]]; then
  export DEX_AGENT_STORE="$CHAT_STORE"
  store="$CHAT_STORE"
  notes="$tmp/dexagents-chat.notes.txt"
  store_args=()
  cd "$tmp" || exit 2
fi

ok() { echo "ok   $1"; passed=$((passed + 1)); }
fail() { echo "FAIL $1"; shift; for l in "$@"; do echo "    $l"; done; failed=$((failed + 1)); }

# expect NAME FILE PATTERN (fixed string)
expect() {
  if grep -qF -- "$3" "$2"; then ok "$1"; else fail "$1" "no \"$3\" in:" "$(sed 's/^/      /' "$2")"; fi
}

if [[ ! -x $CHAT ]]; then
  # check-asan builds no examples (BUILD=build-asan): skip there, fail otherwise.
  if [[ ${BUILD:-build} != build ]]; then
    echo "skip chat example: $CHAT is not built in this build ($BUILD)"
    echo "0 passed, 0 failed, 1 skipped"
    exit 0
  fi
  fail "chat example built" "$CHAT is missing (make examples)"
  echo "$passed passed, $failed failed"
  exit 1
fi

# 1. a new session: an echo and a tool call, stdin from a pipe
printf 'hello\n/tool clock {}\n' | timeout 60 "$CHAT" "${store_args[@]}" >"$tmp/out1" 2>"$tmp/err1"
status=$?
if ((status == 0)); then ok "first run exits 0 at EOF"; else fail "first run exits 0 at EOF" "status $status" "$(cat "$tmp/err1")"; fi
expect "echo of the demo model" "$tmp/out1" "Local demo response: hello"
expect "tool call printed" "$tmp/out1" "-> tool call clock {}"
expect "tool finished printed" "$tmp/out1" "<- tool clock: ok"
if grep -qE 'Tool clock \(ok\): [0-9]{4}-[0-9]{2}-[0-9]{2}T' "$tmp/out1"; then
  ok "tool result in the answer"
else
  fail "tool result in the answer" "$(cat "$tmp/out1")"
fi
sid=$(sed -n 's/^session \(s-[0-9a-f]*\) .*/\1/p' "$tmp/out1" | head -n 1)
if [[ -n $sid ]]; then ok "session id printed"; else fail "session id printed" "$(cat "$tmp/out1")"; fi

# 2. --list shows it
timeout 30 "$CHAT" "${store_args[@]}" --list >"$tmp/list" 2>&1
expect "--list shows the session" "$tmp/list" "$sid"

# 3. a restart: --resume prints the earlier transcript and goes on
printf 'third line\n' | timeout 60 "$CHAT" "${store_args[@]}" --resume "$sid" >"$tmp/out2" 2>"$tmp/err2"
status=$?
if ((status == 0)); then ok "resumed run exits 0 at EOF"; else fail "resumed run exits 0 at EOF" "status $status" "$(cat "$tmp/err2")"; fi
expect "resume shows the earlier user message" "$tmp/out2" "you> hello"
expect "resume shows the earlier answer" "$tmp/out2" "Local demo response: hello"
expect "resume shows the earlier tool result" "$tmp/out2" "<- tool clock: ok:"
expect "the resumed session answers" "$tmp/out2" "Local demo response: third line"
expect "the same session" "$tmp/out2" "session $sid"

# 4. a WRITE tool waits for approval, then runs once and writes one line
# next to the store; a question is answered with :answer
printf '/tool note {"text":"remember the milk"}\n:approve\n/ask Your name?\n:answer Ada\n' |
  timeout 60 "$CHAT" "${store_args[@]}" --resume "$sid" >"$tmp/out3" 2>&1
expect "the write waits for approval" "$tmp/out3" "? approve note"
expect "note tool finished" "$tmp/out3" "<- tool note: ok"
lines=$(grep -c "remember the milk" "$notes" 2>/dev/null)
if [[ $lines == 1 ]]; then ok "note written exactly once"; else fail "note written exactly once" "lines: ${lines:-none}"; fi
expect "a question is shown" "$tmp/out3" "? Your name?"
expect "the answer is the tool result" "$tmp/out3" "Tool ask_user (ok): Ada"

# 5. an unknown session is a clear error, not a crash
printf 'hi\n' | timeout 30 "$CHAT" "${store_args[@]}" --resume s-no-such-session >"$tmp/out4" 2>&1
status=$?
if ((status == 1)); then ok "unknown session exits 1"; else fail "unknown session exits 1" "status $status"; fi
expect "unknown session names the error" "$tmp/out4" "DEXA_E_NOT_FOUND"

echo "$passed passed, $failed failed"
((failed == 0))
