#!/usr/bin/env bash
# test-needs: http mcp-http sqlite
# examples/ai-agent and `dexagents serve` (each in turn, the same steps) with
# an MCP server that wants OAuth (test/mcp/_sdk_server.mjs
# --auth, built with the official SDK, on 127.0.0.1): a session calls the
# server's sign-in tool, the page's sign-in card URL is followed as a browser
# does (curl -L: the authorization server signs in at once and redirects to
# the routes' PREFIX/oauth/callback, which completes the sign-in and
# answers the session's question), the call goes on, and the server's tools
# are offered; an elicitation is answered with form fields through the
# answers route; the server's log messages reach the program's log. Also:
# an unknown state gets 400, the token file is 0600 and no token is in the
# session or in anything the program printed. Servers bound to 127.0.0.1 on free ports;
# stopped on every exit. Prints "N passed, N failed" (test/run sums it).
set -u
cd "$(dirname "$0")/../.." || exit 2

AGENT=${AGENT:-examples/ai-agent/ai-agent}
DEX=${BUILD:-build}/bin/dexagents
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

programs=()
if [[ -x $AGENT ]]; then programs+=(ai-agent)
elif [[ ${BUILD:-build} == build ]]; then fail "ai-agent built" "$AGENT is missing (make examples)"
else echo "skip ai-agent MCP sign-in: $AGENT is not built in this build"; skipped=1; fi
if [[ -x $DEX ]]; then programs+=(serve); else fail "dexagents built" "$DEX is missing (make cli)"; fi
((${#programs[@]})) || finish
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

# sign_in NAME: the steps against one program (ai-agent or serve), each with
# its own store and token file; the checks are named "NAME: ...".
sign_in() {
local name=$1 dir="$tmp/$1" apid
mkdir -p "$dir"
ok() { echo "ok   $name: $1"; passed=$((passed + 1)); }
fail() { echo "FAIL $name: $1"; shift; for l in "$@"; do echo "    $l"; done; failed=$((failed + 1)); }
local cmd=("$AGENT")
[[ $name == serve ]] && cmd=("$DEX" serve --ui examples/ai-agent/ui)
DEX_AGENT_MCP_CONFIG="$tmp/mcp.json" DEX_AGENT_MCP_TOKENS="$dir/state/tokens.json" \
  DEX_AGENT_LISTEN=127.0.0.1:0 DEX_AGENT_STORE="$dir/agent.db" DEX_AGENT_SESSION_KEY=k \
  "${cmd[@]}" >"$dir/agent.log" 2>&1 &
apid=$!
pids+=($apid)
base=
for _ in $(seq 1 600); do
  base=$(sed -n 's|^.*: open \(http://[^ ]*\)/$|\1|p' "$dir/agent.log")
  [[ -n $base ]] && break
  sleep 0.1
done
[[ -n $base ]] || { fail "the AI Agent starts" "$(cat "$dir/agent.log")"; return; }

session=$(curl -s -X POST -H 'Content-Type: application/json' -d '{}' "$base/sessions")
sid=$(python3 -c 'import json,sys; print(json.loads(sys.argv[1])["session_id"])' "$session" 2>/dev/null)
token=$(python3 -c 'import json,sys; print(json.loads(sys.argv[1])["session_token"])' "$session" 2>/dev/null)
[[ -n $sid && -n $token ]] || { fail "a session starts" "$session"; return; }
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
runs=$(wc -l <"$tmp/counts/ask_name.start" 2>/dev/null)
if [[ $runs == "$runs_before" ]]; then ok "the elicitating tool ran once"; else fail "the elicitating tool ran once" "$runs_before -> $runs runs"; fi
runs_before=$((runs_before + 1))

api POST /messages '{"text":"/tool safe__chatty {}"}' >/dev/null
if wait_snapshot "'logged' in json.dumps(s['messages'])" && grep -q 'mcp:safe: .*two' "$dir/agent.log" &&
  grep -q 'mcp:safe: .*"n":3' "$dir/agent.log"; then
  ok "the server's log messages reach the program's log"
else
  fail "the server's log messages reach the program's log" "$(grep -i mcp "$dir/agent.log")"
fi

mode=$(stat -c %a "$dir/state/tokens.json" 2>/dev/null)
if [[ $mode == 600 ]]; then ok "the token file is mode 0600"; else fail "the token file is mode 0600" "mode $mode"; fi
events=$(curl -s --max-time 5 -H "X-Agent-Session-Token: $token" "$base/sessions/$sid/events")
kill "$apid" 2>/dev/null
wait "$apid" 2>/dev/null
leak=$(python3 - "$dir/state/tokens.json" "$snap" "$events" "$dir/agent.log" <<'PY'
import json, sys
toks = json.load(open(sys.argv[1]))
vals = [v[k] for v in toks.values() for k in ("access_token", "refresh_token", "client_secret") if k in v]
log = open(sys.argv[4], errors="replace").read()
print(len(vals), sum(1 for v in vals if v in sys.argv[2] or v in sys.argv[3]), sum(1 for v in vals if v in log))
PY
)
read -r n in_session in_log <<<"$leak"
if [[ $n -ge 2 && $in_session == 0 ]]; then ok "no token is in the session"; else fail "no token is in the session" "$leak"; fi
if [[ $n -ge 2 && $in_log == 0 && -s $dir/agent.log ]]; then ok "no token is in the program's output"; else fail "no token is in the program's output" "$leak"; fi
}

runs_before=1
for p in "${programs[@]}"; do sign_in "$p"; done
finish
