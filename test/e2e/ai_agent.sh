#!/usr/bin/env bash
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
BROWSER_TESTS=35 # the checks of ai_agent_browser.mjs, for the skipped count

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
