#!/usr/bin/env bash
# W1 (test/bench/turns) and W2 (test/bench/approvals) on a throwaway
# PostgreSQL cluster (test/pg/_cluster.sh; default durability: fsync on,
# synchronous_commit on): W1 with the workers in this process and in 1, 2
# and 4 worker processes, W2 with its default workers. Figures are printed,
# not checked. Not part of `make check` (a benchmark; "_" keeps test/run
# from running it); `make bench-pg` runs it, or by hand:
#   bash test/pg/_bench.sh [ROUNDS]      (each figure: ROUNDS runs, default 3)
# W1 prints turns/s, turn latency p50/p99, round trips and commits per
# turn, bytes per session and CPU per turn (driver, workers and server);
# DEXA_PG_PIPELINE=0 runs the store without pipelining, to compare.
set -u
cd "$(dirname "$0")/../.." || exit 2
BUILD="${BUILD:-build}"
ROUNDS="${1:-3}"
source test/pg/_cluster.sh
pg_cluster_start || exit 1
trap 'pg_cluster_stop' EXIT INT TERM
export DEXA_TEST_STORE="$PG_URI" DEXA_BENCH_PG_DATA="$PG_DIR/data"
for r in $(seq "$ROUNDS"); do
  echo "== round $r"
  "$BUILD/test/bench/turns" --quick -s 100 -t 10 -w 2
  for p in 1 2 4; do "$BUILD/test/bench/turns" --quick -s 100 -t 10 -w 2 -p "$p"; done
  "$BUILD/test/bench/approvals" -s 100
done
