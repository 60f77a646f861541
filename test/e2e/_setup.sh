#!/usr/bin/env bash
# Helpers of the e2e tests (sourced, not run): the pinned npm packages of
# test/e2e/package-lock.json installed into $BUILD/npm, and the AI Agent
# example started on 127.0.0.1 (a free port, a temporary SQLite store, the
# demo models) and stopped on every exit.
#
#   e2e_install            installs when the lock changed; 1 on failure
#   e2e_start_server       sets $base ("http://127.0.0.1:PORT") and $pid
#   e2e_stop_server
# Callers set $APP, $BUILD and $tmp (a temporary directory) first.

NPM_DIR="${BUILD:-build}/npm"

e2e_install() {
  if [[ -f $NPM_DIR/node_modules/playwright-core/package.json && -f $NPM_DIR/node_modules/ai/package.json ]] &&
    cmp -s test/e2e/package-lock.json "$NPM_DIR/package-lock.json"; then
    return 0
  fi
  mkdir -p "$NPM_DIR"
  cp test/e2e/package.json test/e2e/package-lock.json "$NPM_DIR/"
  (cd "$NPM_DIR" && timeout 600 npm ci --no-audit --no-fund --loglevel=error) >"$NPM_DIR/npm.log" 2>&1
}

e2e_start_server() {
  DEX_AGENT_LISTEN="${E2E_LISTEN:-127.0.0.1:0}" DEX_AGENT_STORE="$tmp/ai-agent.db" DEX_AGENT_SESSION_KEY="${E2E_SESSION_KEY:-}" \
    DEX_AGENT_MODEL= DEX_AGENT_MODELS= DEX_AGENT_MCP_CONFIG="${E2E_MCP_CONFIG:-}" \
    DEX_AGENT_MCP_TOKENS="${E2E_MCP_CONFIG:+$tmp/mcp-tokens.json}" DEX_AGENT_CONTEXT_TOKENS=64000 \
    DEX_AGENT_ALLOWED_HOSTS= DEX_AGENT_SYSTEM_PROMPT="You are the e2e system prompt." \
    "$APP" >>"$tmp/server.log" 2>&1 &
  pid=$!
  base=
  for _ in $(seq 100); do
    base=$(sed -n 's|^ai-agent: open \(http://127\.0\.0\.1:[0-9]*\)/products/ai-agent/$|\1|p' "$tmp/server.log" | tail -n 1)
    [[ -n $base ]] && return 0
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.1
  done
  return 1
}

e2e_stop_server() {
  if [[ -n ${pid:-} ]]; then
    kill -TERM "$pid" 2>/dev/null
    for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$pid" 2>/dev/null
    wait "$pid" 2>/dev/null
    pid=
  fi
}
