#!/usr/bin/env bash
# The AI Agent example in a real browser: starts examples/ai-agent/ai-agent on
# 127.0.0.1 (a free port, a temporary SQLite store, the demo models) and
# drives its page in headless Chromium with playwright-core
# (test/e2e/ai_agent_browser.mjs). Screenshots go to test/e2e/out/.
#
# Needs Debian's chromium (`make check` installs it as root) and the npm
# package playwright-core, which this script installs into $BUILD/npm from
# test/e2e/package-lock.json. Without chromium the browser tests are
# reported skipped, not passed. The server is stopped on every exit.
set -u
cd "$(dirname "$0")/../.." || exit 2

BUILD=${BUILD:-build}
APP=${AI_AGENT:-examples/ai-agent/ai-agent}
CHROMIUM=${CHROMIUM:-/usr/bin/chromium}
OUT=test/e2e/out
NPM_DIR="$BUILD/npm"
BROWSER_TESTS=16 # the checks of ai_agent_browser.mjs, for the skipped count

skip_all() {
  echo "skip AI Agent browser tests: $1"
  echo "0 passed, 0 failed, $BROWSER_TESTS skipped"
  exit 0
}

if [[ ! -x $APP ]]; then
  # check-asan builds no examples (BUILD=build-asan): skip there, fail otherwise.
  [[ $BUILD != build ]] && skip_all "$APP is not built in this build ($BUILD)"
  echo "FAIL AI Agent example built: $APP is missing (make examples)"
  echo "0 passed, 1 failed"
  exit 1
fi
[[ -x $CHROMIUM ]] || skip_all "no $CHROMIUM (install Debian's chromium as root: make deps-check)"
command -v node >/dev/null || skip_all "no node"

# playwright-core, pinned by the lock file, in an ignored directory.
if [[ ! -f $NPM_DIR/node_modules/playwright-core/package.json ]] ||
  ! cmp -s test/e2e/package-lock.json "$NPM_DIR/package-lock.json"; then
  mkdir -p "$NPM_DIR"
  cp test/e2e/package.json test/e2e/package-lock.json "$NPM_DIR/"
  if ! (cd "$NPM_DIR" && npm ci --no-audit --no-fund --loglevel=error) >"$NPM_DIR/npm.log" 2>&1; then
    echo "FAIL install playwright-core into $NPM_DIR"
    sed 's/^/    /' "$NPM_DIR/npm.log" | tail -n 20
    echo "0 passed, 1 failed"
    exit 1
  fi
fi

tmp=$(mktemp -d) || exit 2
pid=
stop_server() {
  if [[ -n $pid ]]; then
    kill -TERM "$pid" 2>/dev/null
    for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$pid" 2>/dev/null
    wait "$pid" 2>/dev/null
    pid=
  fi
}
trap 'stop_server; rm -rf "$tmp"' EXIT

mkdir -p "$OUT"
rm -f "$OUT"/*.png
DEX_AGENT_LISTEN=127.0.0.1:0 DEX_AGENT_STORE="$tmp/ai-agent.db" DEX_AGENT_SESSION_KEY= \
  DEX_AGENT_MODEL= DEX_AGENT_MODELS= DEX_AGENT_MCP_CONFIG= DEX_AGENT_CONTEXT_TOKENS=64000 \
  DEX_AGENT_SYSTEM_PROMPT="You are the e2e system prompt." \
  "$APP" >"$tmp/server.log" 2>&1 &
pid=$!
base=
for _ in $(seq 100); do
  base=$(sed -n 's|^ai-agent: open \(http://127\.0\.0\.1:[0-9]*\)/products/ai-agent/$|\1|p' "$tmp/server.log")
  [[ -n $base ]] && break
  kill -0 "$pid" 2>/dev/null || break
  sleep 0.1
done
if [[ -z $base ]]; then
  echo "FAIL the AI Agent server starts"
  sed 's/^/    /' "$tmp/server.log"
  echo "0 passed, 1 failed"
  exit 1
fi
echo "server: $base (pid $pid)"

PLAYWRIGHT_DIR="$PWD/$NPM_DIR/node_modules" CHROMIUM="$CHROMIUM" \
  timeout 240 node test/e2e/ai_agent_browser.mjs "$base" "$OUT"
status=$?
if ((status != 0)); then
  echo "server log:"
  sed 's/^/    /' "$tmp/server.log" | tail -n 30
fi
stop_server
exit "$status"
