#!/usr/bin/env bash
# test-needs: http sqlite
# The AI Agent example in a real browser: starts examples/ai-agent/ai-agent on
# 127.0.0.1 (a free port, a temporary SQLite store, the demo models) and
# drives its page in headless Chromium with playwright-core
# (test/e2e/ai_agent_browser.mjs) at desktop size and at 390x844.
# Screenshots of every state go to test/e2e/out/.
#
# Needs Debian's chromium (`make check` installs it as root) and the npm
# packages of test/e2e/package-lock.json, installed into $BUILD/npm
# (test/e2e/_setup.sh). Without chromium or node the browser tests are
# reported skipped, not passed (failed under CI). The servers are stopped on
# every exit.
set -u
cd "$(dirname "$0")/../.." || exit 2
source test/e2e/_setup.sh

BUILD=${BUILD:-build}
APP=${AI_AGENT:-examples/ai-agent/ai-agent}
CHROMIUM=${CHROMIUM:-/usr/bin/chromium}
OUT=test/e2e/out
BROWSER_TESTS=37 # the checks of ai_agent_browser.mjs, for the skipped count

skip_all() {
  if [[ -n ${CI:-} && ${2:-} != build-only ]]; then
    echo "FAIL AI Agent browser tests cannot set up: $1"
    echo "0 passed, 1 failed"
    exit 1
  fi
  echo "skip AI Agent browser tests: $1"
  echo "0 passed, 0 failed, $BROWSER_TESTS skipped"
  exit 0
}

if [[ ! -x $APP ]]; then
  # check-asan builds no examples (BUILD=build-asan): skip there, fail otherwise.
  [[ $BUILD != build ]] && skip_all "$APP is not built in this build ($BUILD)" build-only
  echo "FAIL AI Agent example built: $APP is missing (make examples)"
  echo "0 passed, 1 failed"
  exit 1
fi
[[ -x $CHROMIUM ]] || skip_all "no $CHROMIUM (install Debian's chromium as root: make deps-check)"
command -v node >/dev/null || skip_all "no node"
if ! e2e_install; then
  echo "FAIL install the npm packages of test/e2e into $NPM_DIR"
  sed 's/^/    /' "$NPM_DIR/npm.log" | tail -n 20
  echo "0 passed, 1 failed"
  exit 1
fi

tmp=$(mktemp -d) || exit 2
export E2E_SESSION_KEY=e2e-session-key # the browser test signs a token for a missing chat
pid=
trap 'e2e_stop_server; rm -rf "$tmp"' EXIT

mkdir -p "$OUT"
rm -f "$OUT"/*.png
# An MCP server that wants OAuth and elicits (built with the official SDK):
# the page's sign-in card and form questions. Without npm it is left out
# (ai_agent_browser.mjs counts its two checks skipped; failed under CI).
sdk_pid=
if modules=$(test/mcp/_npm_setup.sh sdk 2>&1) && cp test/mcp/_sdk_server.mjs "$modules/../sdk_server.mjs"; then
  (cd "$modules/.." && exec node sdk_server.mjs --auth) >"$tmp/sdk.log" 2>&1 &
  sdk_pid=$!
  for _ in $(seq 1 600); do grep -q '^PORT ' "$tmp/sdk.log" && break; sleep 0.1; done
  sdk_port=$(sed -n 's/^PORT //p' "$tmp/sdk.log")
  if [[ -n $sdk_port ]]; then
    printf '{"mcpServers":{"safe":{"url":"http://127.0.0.1:%s/mcp","trustAnnotations":true,"elicitation":true}}}' \
      "$sdk_port" >"$tmp/mcp.json"
    export E2E_MCP_CONFIG="$tmp/mcp.json" MCP_SDK_SERVER="http://127.0.0.1:$sdk_port"
  fi
fi
trap 'e2e_stop_server; [[ -n $sdk_pid ]] && kill "$sdk_pid" 2>/dev/null; rm -rf "$tmp"' EXIT
if ! e2e_start_server; then
  echo "FAIL the AI Agent server starts"
  sed 's/^/    /' "$tmp/server.log"
  echo "0 passed, 1 failed"
  exit 1
fi
echo "server: $base (pid $pid)"

PLAYWRIGHT_DIR="$PWD/$NPM_DIR/node_modules" CHROMIUM="$CHROMIUM" AI_AGENT="$APP" TMP_DIR="$tmp" \
  timeout 420 node test/e2e/ai_agent_browser.mjs "$base" "$OUT"
status=$?
if ((status != 0)); then
  echo "server log:"
  sed 's/^/    /' "$tmp/server.log" | tail -n 30
fi
e2e_stop_server
exit "$status"
