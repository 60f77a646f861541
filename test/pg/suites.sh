#!/usr/bin/env bash
# test-needs: postgresql sqlite
# The PostgreSQL store under test: starts a throwaway cluster (test/pg/_cluster.sh),
# runs the runtime, feature and crash suites that run on SQLite again against it
# (DEXA_TEST_STORE: test/support/temp_store.c puts each store in a schema of its
# own), then the PostgreSQL-only programs of test/pg (bad input, wake-ups across
# processes, worker processes killed with SIGKILL, a server restart mid-run). The
# cluster is stopped at the end, also when a test fails or the script is killed.
#
# Without PostgreSQL's binaries the tests are skipped, except under CI, where
# that is a failure.
set -u
cd "$(dirname "$0")/../.." || exit 2
BUILD="${BUILD:-build}"
source test/pg/_cluster.sh

total_pass=0 total_fail=0
summary_re='^([0-9]+) passed, ([0-9]+) failed'

if ! pg_cluster_available || ! pg_cluster_start; then
  if [[ -n ${CI:-} ]]; then
    echo "FAIL cannot start a PostgreSQL cluster (Debian's postgresql 15 is required)"
    echo "0 passed, 1 failed"
    exit 1
  fi
  echo "skip PostgreSQL 15 is not installed (apt-get install postgresql)"
  echo "0 passed, 0 failed, 1 skipped"
  exit 0
fi
trap 'pg_cluster_stop' EXIT INT TERM

# The restart test (test_pg_processes) restarts the server through this.
if [[ $(id -u) -eq 0 ]]; then
  export DEXA_TEST_PG_RESTART="runuser -u $PG_OWNER -- $PG_BIN/pg_ctl -D $PG_DIR/data -m fast -w -t 60 restart -o \"$PG_OPTS\" -l $PG_DIR/server.log >/dev/null"
else
  export DEXA_TEST_PG_RESTART="$PG_BIN/pg_ctl -D $PG_DIR/data -m fast -w -t 60 restart -o \"$PG_OPTS\" -l $PG_DIR/server.log >/dev/null"
fi
export DEXA_TEST_PG_DIR="$PG_DIR"

# run NAME STORE PROGRAM: runs a test program with DEXA_TEST_STORE=STORE and adds
# up its summary line; a program with none (a crash) counts as one failure.
run() {
  local name=$1 store=$2 prog=$3 out line status
  echo "== $name"
  if [[ ! -x $prog ]]; then
    echo "FAIL $prog was not built"
    total_fail=$((total_fail + 1))
    return
  fi
  out=$(DEXA_TEST_STORE="$store" timeout --kill-after=10 300 "$prog" 2>&1 </dev/null)
  status=$?
  printf '%s\n' "$out"
  line=$(printf '%s\n' "$out" | grep -E "$summary_re" | tail -n 1)
  if [[ $line =~ $summary_re ]]; then
    total_pass=$((total_pass + BASH_REMATCH[1]))
    total_fail=$((total_fail + BASH_REMATCH[2]))
    ((status != 0 && BASH_REMATCH[2] == 0)) && total_fail=$((total_fail + 1))
  else
    echo "FAIL $name: no summary line (exit status $status)"
    total_fail=$((total_fail + 1))
  fi
}

# The suites that run on SQLite, on PostgreSQL (URI form; the runtime suite
# once more with a key/value conninfo).
run "runtime (postgresql)" "$PG_URI" "$BUILD/test/unit/test_runtime"
run "runtime (conninfo)" "$PG_CONNINFO" "$BUILD/test/unit/test_runtime"
run "runtime events (postgresql)" "$PG_URI" "$BUILD/test/unit/test_runtime_events"
run "runtime workers (postgresql)" "$PG_URI" "$BUILD/test/unit/test_runtime_workers"
run "runtime lifetime (postgresql)" "$PG_URI" "$BUILD/test/unit/test_runtime_lifetime"
run "runtime crash (postgresql)" "$PG_URI" "$BUILD/test/integration/test_runtime_crash"
run "agent crash (postgresql)" "$PG_URI" "$BUILD/test/integration/test_agent_crash"
run "lost workers (postgresql)" "$PG_URI" "$BUILD/test/integration/test_lost_workers"
# examples/chat with DEX_AGENT_STORE=postgresql://... (a schema of its own).
"$PG_BIN/psql" -q -X "$PG_URI" -c "CREATE SCHEMA chat_example" >/dev/null
echo "== chat example (postgresql)"
out=$(CHAT_STORE="$PG_URI&options=-csearch_path%3Dchat_example" \
  timeout 300 bash test/integration/test_chat_example.sh 2>&1 </dev/null)
printf '%s\n' "$out"
if [[ $(printf '%s\n' "$out" | tail -n 1) =~ $summary_re ]]; then
  total_pass=$((total_pass + BASH_REMATCH[1])) total_fail=$((total_fail + BASH_REMATCH[2]))
else
  total_fail=$((total_fail + 1))
fi
# PostgreSQL only.
run "pg store" "$PG_URI" "$BUILD/test/pg/test_pg_store"
run "pg processes" "$PG_URI" "$BUILD/test/pg/test_pg_processes"
run "pg store administration" "$PG_URI" "$BUILD/test/pg/test_pg_admin"

echo "$total_pass passed, $total_fail failed"
((total_fail == 0))
