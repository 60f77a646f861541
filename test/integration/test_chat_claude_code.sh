#!/usr/bin/env bash
# examples/chat --harness claude-code end to end: the chat's turns run in the
# real pinned Claude Code CLI (installed into build/npm-claude by
# _claude_code_setup.sh, as test_harness_claude_code does) against the mock
# LLM server @copilotkit/aimock on 127.0.0.1 (a dummy key from the
# environment, telemetry and non-essential traffic off, the CLI's HOME in a
# temporary directory): a plain answer, the chat's read tool (clock) inside
# the segment, its write tool (note) approved and run once, and --resume
# showing the transcript. Prints "N passed, N failed[, N skipped]".
set -u
cd "$(dirname "$0")/../.." || exit 2

CHAT=${CHAT:-$PWD/examples/chat/chat}
TESTS=9
passed=0 failed=0
tmp=$(mktemp -d) || exit 2
aimock_pid=
cleanup() {
  [[ -n $aimock_pid ]] && kill "$aimock_pid" 2>/dev/null && wait "$aimock_pid" 2>/dev/null
  rm -rf "$tmp"
}
trap cleanup EXIT

skip_all() {
  if [[ -n ${CI:-} ]]; then
    echo "FAIL chat with Claude Code cannot set up: $1"
    echo "0 passed, 1 failed"
    exit 1
  fi
  echo "skip chat with Claude Code: $1"
  echo "0 passed, 0 failed, $TESTS skipped"
  exit 0
}

ok() { echo "ok   $1"; passed=$((passed + 1)); }
fail() { echo "FAIL $1"; shift; for l in "$@"; do echo "    $l"; done; failed=$((failed + 1)); }
expect() {
  if grep -qF -- "$3" "$2"; then ok "$1"; else fail "$1" "no \"$3\" in:" "$(sed 's/^/      /' "$2")"; fi
}

if [[ ! -x $CHAT ]]; then
  [[ ${BUILD:-build} != build ]] && skip_all "$CHAT is not built in this build ($BUILD)"
  fail "chat example built" "$CHAT is missing (make examples)"
  echo "$passed passed, $failed failed"
  exit 1
fi
claude=$(bash test/integration/_claude_code_setup.sh 2>"$tmp/setup.err") ||
  skip_all "could not install the Claude Code CLI: $(cat "$tmp/setup.err")"
node=$PWD/build/npm-claude/node_modules/.bin/node
aimock=$PWD/build/npm-claude/node_modules/@copilotkit/aimock/dist/cli.js

cat >"$tmp/fixtures.json" <<'JSON'
{"fixtures":[
{"match":{"toolCallId":"toolu_ck1"},"response":{"content":"The clock says it is today."}},
{"match":{"userMessage":"cc-chat-clock"},"response":{"toolCalls":[{"id":"toolu_ck1","name":"mcp__dex__clock","arguments":"{}"}]}},
{"match":{"toolCallId":"toolu_nt1"},"response":{"content":"The milk is noted."}},
{"match":{"userMessage":"cc-chat-note"},"response":{"toolCalls":[{"id":"toolu_nt1","name":"mcp__dex__note","arguments":"{\"text\":\"remember the milk\"}"}]}},
{"match":{"userMessage":"cc-chat-hello"},"response":{"content":"Hello from Claude Code."}},
{"match":{},"response":{"content":"Noted."}}
]}
JSON
"$node" "$aimock" -h 127.0.0.1 -p 0 -f "$tmp/fixtures.json" >"$tmp/aimock.log" 2>&1 &
aimock_pid=$!
port=
for _ in $(seq 1 600); do
  port=$(sed -n 's/.*listening on http:\/\/127\.0\.0\.1:\([0-9]*\).*/\1/p' "$tmp/aimock.log" | head -n 1)
  [[ -n $port ]] && break
  kill -0 "$aimock_pid" 2>/dev/null || break
  sleep 0.1
done
[[ -n $port ]] || skip_all "aimock did not start: $(tail -n 3 "$tmp/aimock.log")"

mkdir -p "$tmp/home" "$tmp/work"
export ANTHROPIC_API_KEY=sk-ant-test-dummy # the key from the environment only (aimock takes any)
export DEX_CLAUDE_CODE_OPTIONS="{\"cli_path\":\"$claude\",\"model\":\"claude-test\",\"cwd\":\"$tmp/work\",
  \"env\":{\"ANTHROPIC_BASE_URL\":\"http://127.0.0.1:$port\",\"HOME\":\"$tmp/home\",
  \"DISABLE_TELEMETRY\":\"1\",\"DISABLE_ERROR_REPORTING\":\"1\",
  \"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC\":\"1\",\"DISABLE_AUTOUPDATER\":\"1\",
  \"CLAUDE_CODE_MAX_RETRIES\":\"0\"}}"
store="$tmp/chat.db"

# 1. a new session on the harness: an answer, a read inside the segment, a write approved once
printf 'cc-chat-hello\ncc-chat-clock\ncc-chat-note\n:approve\n' |
  timeout 400 "$CHAT" --store "$store" --harness claude-code >"$tmp/out1" 2>"$tmp/err1"
status=$?
if ((status == 0)); then ok "the chat exits 0 at EOF"; else fail "the chat exits 0 at EOF" "status $status" "$(cat "$tmp/err1")"; fi
expect "the CLI's answer" "$tmp/out1" "Hello from Claude Code."
expect "the read's answer" "$tmp/out1" "The clock says it is today."
expect "the write waits for approval" "$tmp/out1" "? approve note"
expect "the write's answer" "$tmp/out1" "The milk is noted."
lines=$(grep -c "remember the milk" "$store.notes.txt" 2>/dev/null)
if [[ $lines == 1 ]]; then ok "the note is written exactly once"; else fail "the note is written exactly once" "lines: ${lines:-none}"; fi
sid=$(sed -n 's/^session \(s-[0-9a-f]*\) .*/\1/p' "$tmp/out1" | head -n 1)
if [[ -n $sid ]]; then ok "session id printed"; else fail "session id printed" "$(cat "$tmp/out1")"; fi

# 2. --resume shows the transcript and goes on, on the same Claude session
printf 'cc-chat-more\n' | timeout 200 "$CHAT" --store "$store" --harness claude-code --resume "$sid" >"$tmp/out2" 2>"$tmp/err2"
expect "resume shows the earlier answer" "$tmp/out2" "Hello from Claude Code."
expect "the resumed session answers" "$tmp/out2" "Noted."

echo "$passed passed, $failed failed"
((failed == 0))
