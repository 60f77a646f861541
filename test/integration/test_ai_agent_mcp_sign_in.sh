#!/usr/bin/env bash
# test-needs: http mcp-http sqlite
# examples/ai-agent with an MCP server that wants OAuth (test/mcp/_sdk_server.mjs
# --auth, built with the official SDK, on 127.0.0.1): a session calls the
# server's sign-in tool, the page's sign-in card URL is followed as a browser
# does (curl -L: the authorization server signs in at once and redirects to
# the example's PREFIX/oauth/callback, which completes the sign-in and
# answers the session's question), the call goes on, and the server's tools
# are offered; an elicitation is answered with form fields through the
# answers route. Also: an unknown state gets 400, the token file is 0600
# and no token is in the session. Servers bound to 127.0.0.1 on free ports;
# stopped on every exit. Prints "N passed, N failed" (test/run sums it).
set -u
cd "$(dirname "$0")/../.." || exit 2

AGENT=${AGENT:-examples/ai-agent/ai-agent}
passed=0 failed=0 skipped=0
tmp=$(mktemp -d) || exit 2
pids=()
trap 'for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done; wait 2>/dev/null; rm -rf "$tmp"' EXIT

ok() { echo "ok   $1"; passed=$((passed + 1)); }
fail() { echo "FAIL $1"; shift; for l in "$@"; do echo "    $l"; done; failed=$((failed + 1)); }
finish() {
  if ((skipped)); then echo "$passed passed, $failed failed, $skipped skipped"; else echo "$passed passed, $failed failed"; fi
  ((failed == 0))
  exit
}
not_run() {
  if [[ -n ${CI:-} ]]; then fail "ai-agent MCP sign-in set-up" "$1"; else echo "skip ai-agent MCP sign-in: $1"; skipped=1; fi
  finish
}

if [[ ! -x $AGENT ]]; then
  [[ ${BUILD:-build} != build ]] && { echo "skip ai-agent MCP sign-in: $AGENT is not built in this build"; echo "0 passed, 0 failed, 1 skipped"; exit 0; }
  fail "ai-agent built" "$AGENT is missing (make examples)"
  finish
fi
modules=$(test/mcp/_npm_setup.sh sdk 2>&1) || not_run "npm packages not available: $modules"
cp test/mcp/_sdk_server.mjs "$modules/../sdk_server.mjs" || not_run "cannot place the SDK server"
mkdir -p "$tmp/counts"
(cd "$modules/.." && exec node sdk_server.mjs --auth --count-dir "$tmp/counts") >"$tmp/sdk.log" 2>&1 &
pids+=($!)
port=
for _ in $(seq 1 600); do
  port=$(sed -n 's/^PORT //p' "$tmp/sdk.log")
  [[ -n $port ]] && break
  sleep 0.1
done
[[ -n $port ]] || not_run "the SDK server did not start: $(cat "$tmp/sdk.log")"

cat >"$tmp/mcp.json" <<JSON
{"mcpServers":{"safe":{"url":"http://127.0.0.1:$port/mcp","trustAnnotations":true,"elicitation":true}}}
JSON
DEX_AGENT_MCP_CONFIG="$tmp/mcp.json" DEX_AGENT_MCP_TOKENS="$tmp/state/tokens.json" \
  DEX_AGENT_LISTEN=127.0.0.1:0 DEX_AGENT_STORE="$tmp/agent.db" DEX_AGENT_SESSION_KEY=k \
  "$AGENT" >"$tmp/agent.log" 2>&1 &
pids+=($!)
base=
for _ in $(seq 1 600); do
  base=$(sed -n 's|^ai-agent: open \(http://[^ ]*\)/$|\1|p' "$tmp/agent.log")
  [[ -n $base ]] && break
  sleep 0.1
done
[[ -n $base ]] || { fail "the AI Agent starts" "$(cat "$tmp/agent.log")"; finish; }

session=$(curl -s -X POST -H 'Content-Type: application/json' -d '{}' "$base/sessions")
sid=$(python3 -c 'import json,sys; print(json.loads(sys.argv[1])["session_id"])' "$session" 2>/dev/null)
token=$(python3 -c 'import json,sys; print(json.loads(sys.argv[1])["session_token"])' "$session" 2>/dev/null)
[[ -n $sid && -n $token ]] || { fail "a session starts" "$session"; finish; }
api() { # METHOD PATH [BODY]
  curl -s --max-time 60 -X "$1" -H "X-Agent-Session-Token: $token" -H 'Content-Type: application/json' \
    ${3:+-d "$3"} "$base/sessions/$sid$2"
}
# wait_snapshot PYTHON-EXPRESSION over s (the snapshot): waits up to 60 s.
wait_snapshot() {
  local i
  for i in $(seq 1 600); do
    snap=$(api GET "")
    python3 -c "import json,sys; s=json.loads(sys.argv[1]); sys.exit(0 if ($1) else 1)" "$snap" 2>/dev/null && return 0
    sleep 0.1
  done
  return 1
}
question='[p for p in s["pending"] if p["kind"] == "question"]'

api POST /messages '{"text":"/tool safe__sign_in {}"}' >/dev/null
if wait_snapshot "$question and $question[0]['purpose'] == 'sign_in' and $question[0]['url'].startswith('http://127.0.0.1:$port/authorize?')"; then
  ok "the sign-in waits as a question with the authorization URL"
else
  fail "the sign-in waits as a question with the authorization URL" "$snap"
fi
url=$(python3 -c "import json,sys; s=json.loads(sys.argv[1]); print($question[0]['url'])" "$snap" 2>/dev/null)
page=$(curl -s -L --max-redirs 3 --max-time 60 "$url")
if [[ $page == *"You are signed in"* ]]; then ok "the browser lands on the callback route, which completes the sign-in"; else fail "the browser lands on the callback route, which completes the sign-in" "$page"; fi
if wait_snapshot "'Signed in to safe' in json.dumps(s['messages']) and s['pending'] == []"; then
  ok "the call goes on once the sign-in is complete"
else
  fail "the call goes on once the sign-in is complete" "$snap"
fi
again=$(curl -s -o /dev/null -w '%{http_code}' -L --max-redirs 0 "$base/oauth/callback?code=x&state=${url##*state=}")
again=${again:0:3}
if [[ $again == 400 ]]; then ok "a used or unknown state gets 400"; else fail "a used or unknown state gets 400" "got $again"; fi

api POST /messages '{"text":"/tool safe__ask_name {}"}' >/dev/null
if wait_snapshot "$question and [f['name'] for f in $question[0]['fields']] == ['name', 'color']"; then
  ok "after the sign-in an elicitation waits with its form fields"
else
  fail "after the sign-in an elicitation waits with its form fields" "$snap"
fi
call_id=$(python3 -c "import json,sys; s=json.loads(sys.argv[1]); print($question[0]['call_id'])" "$snap" 2>/dev/null)
code=$(curl -s -o /dev/null -w '%{http_code}' -X POST -H "X-Agent-Session-Token: $token" \
  -H 'Content-Type: application/json' -d "{\"call_id\":\"$call_id\",\"fields\":[]}" "$base/sessions/$sid/answers")
if [[ $code == 400 ]]; then ok "fields that are not an object get 400"; else fail "fields that are not an object get 400" "got $code"; fi
api POST /answers "{\"call_id\":\"$call_id\",\"fields\":{\"name\":\"Ada\",\"color\":\"green\"}}" >/dev/null
if wait_snapshot "'Hello Ada (green)' in json.dumps(s['messages'])"; then
  ok "the answer's fields reach the server and the call finishes"
else
  fail "the answer's fields reach the server and the call finishes" "$snap"
fi
if [[ $(wc -l <"$tmp/counts/ask_name.start" 2>/dev/null) == 1 ]]; then ok "the elicitating tool ran once"; else fail "the elicitating tool ran once" "$(cat "$tmp/counts/ask_name.start" 2>/dev/null)"; fi

mode=$(stat -c %a "$tmp/state/tokens.json" 2>/dev/null)
if [[ $mode == 600 ]]; then ok "the token file is mode 0600"; else fail "the token file is mode 0600" "mode $mode"; fi
leak=$(python3 - "$tmp/state/tokens.json" "$snap" <<'PY'
import json, sys
toks = json.load(open(sys.argv[1]))
vals = [v[k] for v in toks.values() for k in ("access_token", "refresh_token", "client_secret") if k in v]
print(len(vals), sum(1 for v in vals if v in sys.argv[2]))
PY
)
if [[ ${leak%% *} -ge 2 && ${leak##* } == 0 ]]; then ok "no token is in the session"; else fail "no token is in the session" "$leak"; fi
finish
