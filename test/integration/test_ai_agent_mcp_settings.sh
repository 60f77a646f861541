#!/usr/bin/env bash
# test-needs: http sqlite
# examples/ai-agent with an MCP server configured (DEX_AGENT_MCP_CONFIG): the
# settings route lists the server and the tools it listed at start, with
# their effects and approval. Uses the fake MCP server of the MCP tests.
# Prints "N passed, N failed" (test/run sums it).
set -u
cd "$(dirname "$0")/../.." || exit 2

AGENT=${AGENT:-examples/ai-agent/ai-agent}
passed=0 failed=0
tmp=$(mktemp -d) || exit 2
pid=
trap '[[ -n $pid ]] && kill "$pid" 2>/dev/null; wait 2>/dev/null; rm -rf "$tmp"' EXIT

ok() { echo "ok   $1"; passed=$((passed + 1)); }
fail() { echo "FAIL $1"; shift; for l in "$@"; do echo "    $l"; done; failed=$((failed + 1)); }

if [[ ! -x $AGENT ]]; then
  if [[ ${BUILD:-build} != build ]]; then
    echo "skip ai-agent MCP settings: $AGENT is not built in this build ($BUILD)"
    echo "0 passed, 0 failed, 1 skipped"
    exit 0
  fi
  fail "ai-agent built" "$AGENT is missing (make examples)"
  echo "$passed passed, $failed failed"
  exit 1
fi

cat >"$tmp/mcp.json" <<JSON
{"mcpServers":{"fake":{"command":"python3","args":["$PWD/test/mcp/_fake_server.py","stdio"],"trustAnnotations":true}}}
JSON
port=$((20000 + RANDOM % 20000))
DEX_AGENT_MCP_CONFIG="$tmp/mcp.json" DEX_AGENT_LISTEN="127.0.0.1:$port" \
  DEX_AGENT_STORE="$tmp/agent.db" "$AGENT" >"$tmp/log" 2>&1 &
pid=$!
settings=
for _ in $(seq 1 100); do
  settings=$(curl -s --max-time 2 "http://127.0.0.1:$port/products/ai-agent/settings") && [[ -n $settings ]] && break
  sleep 0.1
done

check() { # NAME PYTHON-EXPRESSION over s (the settings document)
  if python3 -c "import json,sys; s=json.loads(sys.argv[1]); sys.exit(0 if ($2) else 1)" "$settings" 2>/dev/null; then
    ok "$1"
  else
    fail "$1" "settings: $settings" "log: $(cat "$tmp/log")"
  fi
}
check "settings name the MCP server" "s['mcp']['servers'] == ['mcp:fake']"
check "settings list the server's tools" "'fake__echo' in [t['name'] for t in s['mcp_tools']]"
check "a read-only tool runs without approval" \
  "[t for t in s['mcp_tools'] if t['name'] == 'fake__echo'][0]['approval'] is False"
check "a write waits for approval" \
  "[t for t in s['mcp_tools'] if t['name'] == 'fake__write'][0] == {'name':'fake__write','description':'A write','parameters':{'type':'object'},'effect':'write','approval':True,'server':'mcp:fake'}"
echo "$passed passed, $failed failed"
((failed == 0))
