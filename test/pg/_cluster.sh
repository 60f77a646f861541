# A throwaway PostgreSQL cluster for tests and benchmarks (sourced, bash).
#
#   pg_cluster_start [extra postgres -c settings...]
#       initdb in a new temporary directory, start the server listening only
#       on a Unix socket in that directory (no TCP port: nothing to collide
#       with other engineers' clusters), and set:
#         PG_DIR      the directory (data in $PG_DIR/data, socket in $PG_DIR)
#         PG_URI      postgresql://dexa@/dexa?host=$PG_DIR  (superuser, trust)
#         PG_CONNINFO the same as key/value conninfo
#       Roles: dexa (superuser, trust), dexa_pw (password "right-pw", scram),
#       dexa_none (no rights in database dexa's public schema, trust).
#       The cluster is stopped by pg_cluster_stop, which an EXIT trap runs.
#   pg_cluster_restart      a fast restart (connections are dropped)
#   pg_cluster_stop
#
# initdb refuses to run as root: as root the cluster runs as the postgres
# user (Debian's package creates it) through runuser, in a directory it owns.
PG_BIN="${PG_BIN:-/usr/lib/postgresql/15/bin}"
PG_DIR=""

_pg_as() {
  if [[ $(id -u) -eq 0 ]]; then
    runuser -u "$PG_OWNER" -- "$@"
  else
    "$@"
  fi
}

pg_cluster_available() {
  [[ -x $PG_BIN/initdb && -x $PG_BIN/pg_ctl ]] || return 1
  if [[ $(id -u) -eq 0 ]]; then
    PG_OWNER=postgres
    id -u "$PG_OWNER" >/dev/null 2>&1 || return 1
  fi
  return 0
}

pg_cluster_stop() {
  [[ -n $PG_DIR && -d $PG_DIR/data ]] || return 0
  _pg_as "$PG_BIN/pg_ctl" -D "$PG_DIR/data" -m immediate -w stop >/dev/null 2>&1
  rm -rf "$PG_DIR"
  PG_DIR=""
}

pg_cluster_start() {
  pg_cluster_available || { echo "PostgreSQL 15 binaries not found in $PG_BIN" >&2; return 1; }
  PG_DIR=$(mktemp -d "${TMPDIR:-/tmp}/dexa-pg-XXXXXX") || return 1
  trap pg_cluster_stop EXIT
  [[ $(id -u) -eq 0 ]] && chown "$PG_OWNER" "$PG_DIR"
  chmod 755 "$PG_DIR"
  if ! _pg_as "$PG_BIN/initdb" -D "$PG_DIR/data" -U dexa --auth-local=trust --auth-host=reject \
    -E UTF8 --locale=C >"$PG_DIR/initdb.log" 2>&1; then
    cat "$PG_DIR/initdb.log" >&2
    return 1
  fi
  # Password logins for dexa_pw, trust for the others, over the socket only.
  printf '%s\n' 'local all dexa_pw scram-sha-256' 'local all all trust' \
    | _pg_as tee "$PG_DIR/data/pg_hba.conf" >/dev/null
  local opts="-c listen_addresses='' -c unix_socket_directories='$PG_DIR' -c port=5432"
  opts+=" -c fsync=on -c synchronous_commit=on -c max_connections=200"
  local s
  for s in "$@"; do opts+=" -c $s"; done
  PG_OPTS=$opts
  if ! _pg_as "$PG_BIN/pg_ctl" -D "$PG_DIR/data" -o "$opts" -l "$PG_DIR/server.log" -w -t 60 \
    start >/dev/null; then
    cat "$PG_DIR/server.log" >&2
    return 1
  fi
  PG_URI="postgresql://dexa@/dexa?host=$PG_DIR"
  PG_CONNINFO="host=$PG_DIR user=dexa dbname=dexa"
  "$PG_BIN/psql" -q -X -v ON_ERROR_STOP=1 "host=$PG_DIR user=dexa dbname=postgres" \
    -c "CREATE DATABASE dexa" \
    -c "CREATE ROLE dexa_pw LOGIN PASSWORD 'right-pw'" \
    -c "CREATE ROLE dexa_none LOGIN" >/dev/null || return 1
  export PG_DIR PG_URI PG_CONNINFO
}

pg_cluster_restart() {
  _pg_as "$PG_BIN/pg_ctl" -D "$PG_DIR/data" -o "$PG_OPTS" -l "$PG_DIR/server.log" -m fast -w \
    -t 60 restart >/dev/null
}
