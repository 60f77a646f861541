/* Benchmark W1: S sessions x T turns on the embedded runtime (SQLite).
 *
 *   turns [-s S] [-t T] [-k K] [-w WORKERS] [-p PROCS] [-y full|normal] [--store PATH] [--quick]
 *
 * -k K: K sessions in flight. K driver threads each take the next session
 * not yet run and run its T turns one after another (the next message once
 * the previous turn is idle), then take another: -k 1 runs the sessions one
 * after another, one turn at a time. Without -k every session is in flight
 * at once (S in flight). A turn's latency is from its send_message call to
 * the return of the driver's wait for the session to be idle.
 *
 * With DEXA_TEST_STORE naming a PostgreSQL database (test/pg/_bench.sh starts
 * a throwaway cluster) the store is a new schema of it. -p PROCS runs the
 * workers in PROCS worker processes (WORKERS threads each) on the same
 * store while this process, which never starts workers, drives the
 * sessions as a client; CPU per turn then adds up this process, the worker
 * processes and the PostgreSQL server (DEXA_BENCH_PG_DATA: its data
 * directory, whose processes are counted).
 *
 * Each turn: a user message -> RunModel (a zero-latency host model replies
 * with two function calls, read_a and read_b) -> two CallTool Steps in
 * parallel (host C functions returning ~200 bytes) -> ResumeTurn ->
 * RunModel (final text). A driver keeps every session busy: the next
 * message of a session is sent as soon as its previous turn is idle.
 *
 * Prints: wall time, turns/s, Step methods/s, SQLite write transactions
 * (commits), store bytes per session (after a checkpoint) and their growth
 * at T = 5, 10, 20, 40, peak RSS, and the CPU time of one RunModel dispatch
 * at ~200 messages of history; CPU per turn (getrusage of this process over
 * the timed pass, every thread: workers, writer, syncer, drivers) and the
 * turn latency p50/p99. Targets are printed beside the figures.
 * --quick skips the growth passes and the micro-benchmark; --micro runs the
 * micro-benchmark alone (to profile a dispatch). */
#include <dexagents/dexagents.h>
#include <dirent.h>
#include <dlfcn.h>
#include <stdint.h>
#include <errno.h>
#include <pthread.h>
#include <sqlite3.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <libpq-fe.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "runtime/runtime_internal.h" /* the task's reader, for a new one per dispatch */
/* Under valgrind --tool=callgrind the timed pass is a dump of its own
 * ("turns-pass"): its instructions, every thread's, divided by the turns
 * are a repeatable CPU figure on a busy machine. */
#if defined(__has_include)
#if __has_include(<valgrind/callgrind.h>)
#include <valgrind/callgrind.h>
#endif
#endif
#ifndef CALLGRIND_ZERO_STATS
#define CALLGRIND_ZERO_STATS
#define CALLGRIND_DUMP_STATS_AT(s) ((void)(s))
#endif
#include "support/temp_store.h"

/* ---- counting SQLite commits -------------------------------------------
 * The runtime exposes no commit counter, so this program interposes
 * sqlite3_open_v2 (the store's open call; the executable's definition wins
 * over libsqlite3's) and installs a commit hook on every connection it
 * opens. The hook runs once per committed write transaction. */
static atomic_long g_commits;

static int count_commit(void *user) {
  (void)user;
  atomic_fetch_add(&g_commits, 1);
  return 0; /* 0: let the commit go on */
}

/* DEXA_BENCH_STMTS=1: also counts the SQL statements run (a trace
 * callback per statement, so it costs a little CPU: off by default);
 * 2 also prints each statement, 3 with its bound values. */
static atomic_long g_stmts;
static int g_count_stmts = -1;

static int count_stmt(unsigned type, void *ctx, void *p, void *x) {
  (void)type, (void)ctx, (void)x;
  atomic_fetch_add(&g_stmts, 1);
  if (g_count_stmts == 2) fprintf(stderr, "SQL %s\n", sqlite3_sql(p)); /* DEXA_BENCH_STMTS=2 */
  if (g_count_stmts == 3) { /* DEXA_BENCH_STMTS=3: with the bound values */
    char *sql = sqlite3_expanded_sql(p);
    fprintf(stderr, "SQL %.300s\n", sql ? sql : sqlite3_sql(p));
    sqlite3_free(sql);
  }
  return 0;
}

int sqlite3_open_v2(const char *filename, sqlite3 **db, int flags, const char *vfs) {
  typedef int (*open_fn)(const char *, sqlite3 **, int, const char *);
  static open_fn real;
  if (!real) real = (open_fn)dlsym(RTLD_NEXT, "sqlite3_open_v2");
  if (!real) return SQLITE_ERROR;
  int rc = real(filename, db, flags, vfs);
  if (rc == SQLITE_OK && *db) sqlite3_commit_hook(*db, count_commit, NULL);
  if (g_count_stmts < 0) g_count_stmts = getenv("DEXA_BENCH_STMTS") ? atoi(getenv("DEXA_BENCH_STMTS")) : 0;
  if (rc == SQLITE_OK && *db && g_count_stmts)
    sqlite3_trace_v2(*db, SQLITE_TRACE_STMT, count_stmt, NULL);
  return rc;
}

/* The store makes commits durable with fdatasync of its WAL: counting the
 * calls (the executable's definition wins over libc's) counts the syncs. */
static atomic_long g_syncs;

int fdatasync(int fd) {
  typedef int (*sync_fn)(int);
  static sync_fn real;
  if (!real) real = (sync_fn)dlsym(RTLD_NEXT, "fdatasync");
  atomic_fetch_add(&g_syncs, 1);
  return real ? real(fd) : -1;
}

/* ---- counting PostgreSQL round trips ------------------------------------
 * The same way: the libpq calls after which the store waits for the server
 * (a statement run alone, or a flush request or sync point of a pipeline)
 * are interposed and counted, in a counter shared with the worker
 * processes (-p), which are forks of this one. */
static atomic_long *g_round_trips;

static void *real_fn(void **slot, const char *name) {
  if (!*slot) *slot = dlsym(RTLD_NEXT, name);
  return *slot;
}

static void count_round_trip(void) {
  if (g_round_trips) atomic_fetch_add(g_round_trips, 1);
}

PGresult *PQexec(PGconn *db, const char *q) {
  static void *f;
  count_round_trip();
  return ((PGresult * (*)(PGconn *, const char *)) real_fn(&f, "PQexec"))(db, q);
}

PGresult *PQexecPrepared(PGconn *db, const char *name, int n, const char *const *v,
                         const int *len, const int *fmt, int rfmt) {
  static void *f;
  count_round_trip();
  return ((PGresult * (*)(PGconn *, const char *, int, const char *const *, const int *,
                          const int *, int)) real_fn(&f, "PQexecPrepared"))(db, name, n, v, len,
                                                                             fmt, rfmt);
}

int PQsendFlushRequest(PGconn *db) {
  static void *f;
  count_round_trip();
  return ((int (*)(PGconn *))real_fn(&f, "PQsendFlushRequest"))(db);
}

int PQpipelineSync(PGconn *db) {
  static void *f;
  count_round_trip();
  return ((int (*)(PGconn *))real_fn(&f, "PQpipelineSync"))(db);
}

/* ---- the host model and tools ---------------------------------------------- */
#define MAX_SESSIONS 100000

/* In a worker process (-p): where the model reports a session's final
 * answer to the driving process (the session index, an int per write). */
static int g_done_fd = -1;

typedef struct bench {
  dexa_agent *agent;
  dexa_runtime *rt;
  int sessions, turns, workers, procs;
  const char *sync;
  char store[512];
  atomic_long model_calls, tool_calls;
  /* the driver: sessions whose final answer was generated wait in ready */
  pthread_mutex_t mu;
  pthread_cond_t cv;
  unsigned char *almost_done; /* per session: final answer generated */
  int done_fd;                /* -p: the worker processes' reports */
  int *sent;                  /* per session: turns sent */
  double *sent_at;            /* per session: when its newest turn was sent */
  int inflight;               /* -k: sessions in flight (0: all) */
  atomic_int next_session;    /* -k: the next session a driver takes */
  struct kdriver *kdrivers;   /* -k: per driver, its wake-up */
  int *owner;                 /* -k: per session, the driver running it */
  /* per turn: its latency (send_message to idle), in turn order of sending */
  double *lat_ms;
  atomic_long lat_n;
} bench;

/* A -k driver: it sleeps on its own condition until the model generated
 * the final answer of its session's turn, so a wake-up costs one signal. */
typedef struct kdriver {
  pthread_mutex_t mu;
  pthread_cond_t cv;
  int ready;
  int rc;
  bench *b;
} kdriver;


static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void session_id(char *out, size_t n, int index) { snprintf(out, n, "w1-%06d", index); }

/* The session index from "w1-NNNNNN" inside the request JSON. */
static int request_session(const char *json, size_t len) {
  const char *p = memmem(json, len, "\"session_id\":\"w1-", 17);
  return p ? atoi(p + 17) : -1;
}

static int64_t request_turn(const char *json, size_t len) {
  const char *p = memmem(json, len, "\"turn\":", 7);
  return p ? strtoll(p + 7, NULL, 10) : 0;
}

static int add_call(dexa_model_reply *reply, const char *tool, int64_t turn) {
  char id[64], item[256];
  snprintf(id, sizeof id, "call_%s_%lld", tool, (long long)turn);
  int n = snprintf(item, sizeof item,
                   "{\"type\":\"function_call\",\"call_id\":\"%s\",\"name\":\"%s\","
                   "\"arguments\":\"{\\\"key\\\":\\\"k%lld\\\"}\"}",
                   id, tool, (long long)turn);
  char args[64];
  int an = snprintf(args, sizeof args, "{\"key\":\"k%lld\"}", (long long)turn);
  int rc = dexa_model_reply_add_item(reply, item, (size_t)n);
  if (rc == DEXA_OK) rc = dexa_model_reply_add_tool_call(reply, id, tool, args, (size_t)an);
  return rc;
}

static int bench_generate(void *user, const dexa_model_request *req, dexa_model_reply *reply) {
  bench *b = user;
  if (b) atomic_fetch_add(&b->model_calls, 1);
  size_t count = dexa_model_request_message_count(req);
  const char *last = "", *json;
  size_t last_len = 0, len;
  if (count) dexa_model_request_message_at(req, count - 1, &last, &last_len);
  dexa_model_request_json(req, &json, &len);
  int64_t turn = request_turn(json, len);
  if (memmem(last, last_len, "\"role\":\"user\"", 13)) {
    int rc = add_call(reply, "read_a", turn);
    return rc == DEXA_OK ? add_call(reply, "read_b", turn) : rc;
  }
  static const char item[] = "{\"type\":\"message\",\"role\":\"assistant\",\"content\":[{\"type\":"
                             "\"output_text\",\"text\":\"Both reads are done.\"}]}";
  int rc = dexa_model_reply_add_item(reply, item, sizeof item - 1);
  if (rc == DEXA_OK) rc = dexa_model_reply_add_text(reply, "Both reads are done.", 20);
  int s = request_session(json, len);
  if (rc == DEXA_OK && b && s >= 0 && s < b->sessions && g_done_fd >= 0) {
    ssize_t w = write(g_done_fd, &s, sizeof s);
    (void)w;
  } else if (rc == DEXA_OK && b && s >= 0 && s < b->sessions && b->inflight) {
    kdriver *k = &b->kdrivers[b->owner[s]];
    pthread_mutex_lock(&k->mu);
    k->ready = 1;
    pthread_cond_signal(&k->cv);
    pthread_mutex_unlock(&k->mu);
  } else if (rc == DEXA_OK && b && s >= 0 && s < b->sessions) { /* tell the driver to look soon */
    pthread_mutex_lock(&b->mu);
    b->almost_done[s] = 1;
    pthread_cond_broadcast(&b->cv);
    pthread_mutex_unlock(&b->mu);
  }
  return rc;
}

static int read_tool(void *user, const dexa_tool_invocation *inv, dexa_tool_output *out) {
  bench *b = user;
  atomic_fetch_add(&b->tool_calls, 1);
  char text[256];
  int n = snprintf(text, sizeof text,
                   "%s: record %s = {\"id\":42,\"owner\":\"bench\",\"state\":\"active\","
                   "\"tags\":[\"alpha\",\"beta\",\"gamma\"],\"updated\":\"2026-01-01T00:00:00Z\","
                   "\"note\":\"about two hundred bytes of tool output\"}",
                   dexa_tool_invocation_name(inv), dexa_tool_invocation_call_id(inv));
  return dexa_tool_output_set_text(out, text, (size_t)n, 0);
}

static int make_agent(bench *b) {
  dexa_model_vtable vt;
  dexa_model_vtable_init(&vt, sizeof vt);
  vt.generate = bench_generate;
  dexa_model *model = NULL;
  dexa_tool_source *tools = NULL;
  int rc = dexa_model_new(&model, "bench/zero-latency", &vt, b);
  if (rc == DEXA_OK) rc = dexa_function_tools_new(&tools, "bench");
  if (rc == DEXA_OK)
    rc = dexa_function_tools_add(tools, "read_a", "Reads record a.", NULL, DEXA_TOOL_READ,
                                 DEXA_APPROVAL_NONE, read_tool, b);
  if (rc == DEXA_OK)
    rc = dexa_function_tools_add(tools, "read_b", "Reads record b.", NULL, DEXA_TOOL_READ,
                                 DEXA_APPROVAL_NONE, read_tool, b);
  char err[256] = "";
  if (rc == DEXA_OK) {
    dexa_agent_def def;
    dexa_agent_def_init(&def, sizeof def);
    def.instructions = "You are the W1 benchmark agent.";
    def.models = &model;
    def.model_count = 1;
    def.tool_sources = &tools;
    def.tool_source_count = 1;
    rc = dexa_agent_new(&b->agent, &def, err, sizeof err);
  }
  if (rc != DEXA_OK) fprintf(stderr, "turns: agent: %s %s\n", dexa_strerror(rc), err);
  dexa_model_free(model);
  dexa_tool_source_free(tools);
  return rc;
}

/* ---- one pass: S sessions x T turns ------------------------------------------ */

typedef struct pass_result {
  double wall_s, cpu_s;
  double p50_ms, p99_ms;
  long turns, model_calls, tool_calls, commits, methods, syncs, stmts;
  double switches; /* context switches of this process (voluntary + not) */
  double sys_s;    /* the system (kernel) share of cpu_s, this process */
  long round_trips, pg_commits, pg_syncs;
  double bytes_per_session;
} pass_result;

static int send_turn(bench *b, int s) {
  char sid[32], text[64];
  session_id(sid, sizeof sid, s);
  int n = snprintf(text, sizeof text, "{\"text\":\"turn %d: read a and b\"}", b->sent[s] + 1);
  char *out = NULL;
  size_t len = 0;
  b->sent_at[s] = now_s();
  int rc = dexa_runtime_call(b->rt, sid, "send_message", text, (size_t)n, &out, &len);
  if (rc != DEXA_OK) fprintf(stderr, "turns: send_message %s: %s %s\n", sid, dexa_strerror(rc), out ? out : "");
  dexa_free(out);
  b->sent[s]++;
  return rc;
}

static void record_latency(bench *b, int s) {
  long i = atomic_fetch_add(&b->lat_n, 1);
  if (i < (long)b->sessions * b->turns) b->lat_ms[i] = (now_s() - b->sent_at[s]) * 1e3;
}

/* A driver thread sends the next turn of each of its sessions (those with
 * s % drivers == index) as soon as the previous one is idle, until all ran
 * T turns. Only sessions whose final answer was generated are checked
 * (wait_idle with timeout 0), so drivers stay cheap; several drivers let
 * send_message commits of different sessions share a group commit. */
#define DRIVERS 4

typedef struct driver {
  bench *b;
  int index, count;
  int rc;
} driver;

static void *drive(void *arg) {
  driver *d = arg;
  bench *b = d->b;
  int mine = 0, finished = 0;
  for (int s = d->index; s < b->sessions; s += d->count) mine++;
  int *check = malloc((size_t)mine * sizeof *check);
  uint64_t *gens = calloc((size_t)mine + 1, sizeof *gens);
  double *looked = calloc((size_t)mine + 1, sizeof *looked);
  for (int s = d->index; s < b->sessions && d->rc == DEXA_OK; s += d->count) d->rc = send_turn(b, s);
  while (finished < mine && d->rc == DEXA_OK) {
    int n = 0;
    pthread_mutex_lock(&b->mu);
    for (int s = d->index; s < b->sessions; s += d->count)
      if (b->almost_done[s]) check[n++] = s;
    if (n == 0) {
      struct timespec until;
      clock_gettime(CLOCK_REALTIME, &until);
      until.tv_nsec += 2000000;
      if (until.tv_nsec >= 1000000000) until.tv_sec++, until.tv_nsec -= 1000000000;
      pthread_cond_timedwait(&b->cv, &b->mu, &until);
    }
    pthread_mutex_unlock(&b->mu);
    int progressed = 0;
    for (int i = 0; i < n && d->rc == DEXA_OK; i++) {
      char sid[32];
      session_id(sid, sizeof sid, check[i]);
      /* -p: the final answer is committed by another process, which this
       * runtime hears of (LISTEN/NOTIFY): look only once it has, or after
       * 100 ms, not every 2 ms (a store query each). */
      uint64_t gen = dexa__session_gen(b->rt, sid);
      if (b->procs && gen == gens[check[i] / d->count] &&
          now_s() - looked[check[i] / d->count] < 0.1)
        continue;
      gens[check[i] / d->count] = gen;
      looked[check[i] / d->count] = now_s();
      if (dexa_runtime_wait_idle(b->rt, sid, 0) != DEXA_OK) continue;
      pthread_mutex_lock(&b->mu);
      b->almost_done[check[i]] = 0;
      pthread_mutex_unlock(&b->mu);
      record_latency(b, check[i]);
      progressed = 1;
      if (b->sent[check[i]] < b->turns) d->rc = send_turn(b, check[i]);
      else finished++;
    }
    /* The final answers are not committed yet: look again in a moment (a
     * wait on one session would hold up the others that finish meanwhile). */
    if (n && !progressed) usleep(b->procs ? 2000 : 500);
  }
  free(check);
  free(gens);
  free(looked);
  return NULL;
}

/* -k: runs sessions one after another, each turn once the previous one is
 * idle: the model's final answer wakes the driver, which then waits for
 * the session to be idle (the final answer's commit, made durable). */
static void *drive_k(void *arg) {
  kdriver *k = arg;
  bench *b = k->b;
  int me = (int)(k - b->kdrivers);
  for (;;) {
    int s = atomic_fetch_add(&b->next_session, 1);
    if (s >= b->sessions) break;
    char sid[32];
    session_id(sid, sizeof sid, s);
    b->owner[s] = me;
    for (int t = 0; t < b->turns && k->rc == DEXA_OK; t++) {
      pthread_mutex_lock(&k->mu);
      k->ready = 0;
      pthread_mutex_unlock(&k->mu);
      k->rc = send_turn(b, s);
      if (k->rc != DEXA_OK) break;
      pthread_mutex_lock(&k->mu);
      while (!k->ready) {
        struct timespec until;
        clock_gettime(CLOCK_REALTIME, &until);
        until.tv_sec += 30;
        if (pthread_cond_timedwait(&k->cv, &k->mu, &until) != 0) break;
      }
      int ready = k->ready;
      pthread_mutex_unlock(&k->mu);
      if (!ready) {
        fprintf(stderr, "turns: %s: no final answer in 30 s\n", sid);
        k->rc = DEXA_E_TIMEOUT;
        break;
      }
      k->rc = dexa_runtime_wait_idle(b->rt, sid, 30000);
      if (k->rc != DEXA_OK) fprintf(stderr, "turns: wait_idle %s: %s\n", sid, dexa_strerror(k->rc));
      else record_latency(b, s);
    }
    if (k->rc != DEXA_OK) break;
  }
  return NULL;
}

static int drive_k_all(bench *b) {
  int count = b->inflight < b->sessions ? b->inflight : b->sessions, rc = DEXA_OK;
  pthread_t *th = calloc((size_t)count, sizeof *th);
  b->kdrivers = calloc((size_t)count, sizeof *b->kdrivers);
  atomic_store(&b->next_session, 0);
  for (int i = 0; i < count; i++) {
    kdriver *k = &b->kdrivers[i];
    pthread_mutex_init(&k->mu, NULL);
    pthread_cond_init(&k->cv, NULL);
    k->b = b;
    pthread_create(&th[i], NULL, drive_k, k);
  }
  for (int i = 0; i < count; i++) {
    pthread_join(th[i], NULL);
    if (b->kdrivers[i].rc != DEXA_OK) rc = b->kdrivers[i].rc;
  }
  for (int i = 0; i < count; i++) {
    pthread_mutex_destroy(&b->kdrivers[i].mu);
    pthread_cond_destroy(&b->kdrivers[i].cv);
  }
  free(th);
  free(b->kdrivers);
  b->kdrivers = NULL;
  return rc;
}

static int drive_all(bench *b) {
  if (b->inflight) return drive_k_all(b);
  driver d[DRIVERS];
  pthread_t th[DRIVERS];
  int count = b->sessions < DRIVERS ? b->sessions : DRIVERS, rc = DEXA_OK;
  for (int i = 0; i < count; i++) {
    d[i] = (driver){b, i, count, DEXA_OK};
    pthread_create(&th[i], NULL, drive, &d[i]);
  }
  for (int i = 0; i < count; i++) {
    pthread_join(th[i], NULL);
    if (d[i].rc != DEXA_OK) rc = d[i].rc;
  }
  return rc;
}

static long file_size(const char *path) {
  struct stat st;
  return stat(path, &st) == 0 ? (long)st.st_size : 0;
}

/* A PostgreSQL store's bytes: its schema's tables with their indexes and
 * TOAST, after a VACUUM (the space of deleted rows is reused, as SQLite
 * reuses free pages). */
static long pg_store_bytes(const char *conninfo) {
  PGconn *db = PQconnectdb(conninfo);
  long n = 0;
  PQclear(PQexec(db, "VACUUM"));
  PGresult *r = PQexec(db, "SELECT sum(pg_total_relation_size(c.oid))::bigint FROM pg_class c"
                           " JOIN pg_namespace n ON n.oid = c.relnamespace"
                           " WHERE n.nspname = current_schema() AND c.relkind = 'r'");
  if (PQresultStatus(r) == PGRES_TUPLES_OK && PQntuples(r)) n = atol(PQgetvalue(r, 0, 0));
  PQclear(r);
  PQfinish(db);
  return n;
}

/* The database's committed transactions and the server's WAL syncs
 * (fsyncs) so far. */
static void pg_counters(const char *conninfo, long *commits, long *syncs) {
  PGconn *db = PQconnectdb(conninfo);
  PGresult *r = PQexec(db, "SELECT (SELECT xact_commit FROM pg_stat_database"
                           " WHERE datname = current_database()), (SELECT wal_sync FROM pg_stat_wal)");
  if (PQresultStatus(r) == PGRES_TUPLES_OK && PQntuples(r)) {
    *commits = atol(PQgetvalue(r, 0, 0));
    *syncs = atol(PQgetvalue(r, 0, 1));
  }
  PQclear(r);
  PQfinish(db);
}

/* CPU seconds of the PostgreSQL server: the postmaster of the data
 * directory DEXA_BENCH_PG_DATA and its children (backends, writers). */
static double pg_server_cpu_s(void) {
  const char *data = getenv("DEXA_BENCH_PG_DATA");
  if (!data) return 0;
  char path[600];
  snprintf(path, sizeof path, "%s/postmaster.pid", data);
  FILE *f = fopen(path, "r");
  long pm = 0;
  if (!f) return 0;
  if (fscanf(f, "%ld", &pm) != 1) pm = 0;
  fclose(f);
  double total = 0;
  long tick = sysconf(_SC_CLK_TCK);
  DIR *proc = pm ? opendir("/proc") : NULL;
  for (struct dirent *e; proc && (e = readdir(proc));) {
    long pid = atol(e->d_name);
    if (pid <= 0) continue;
    snprintf(path, sizeof path, "/proc/%ld/stat", pid);
    f = fopen(path, "r");
    if (!f) continue;
    char buf[1024];
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    char *p = strrchr(buf, ')');
    long ppid = 0;
    unsigned long ut = 0, st = 0;
    if (p && sscanf(p + 2, "%*c %ld %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu", &ppid, &ut, &st) == 3 &&
        (pid == pm || ppid == pm))
      total += (double)(ut + st) / (double)tick;
  }
  if (proc) closedir(proc);
  return total;
}

static double switches_now(void) {
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  return (double)ru.ru_nvcsw + (double)ru.ru_nivcsw;
}

static double rusage_sys_s(void) {
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  return (double)ru.ru_stime.tv_sec + ru.ru_stime.tv_usec / 1e6;
}

static double rusage_s(int who) {
  struct rusage ru;
  getrusage(who, &ru);
  return (double)ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 + (double)ru.ru_stime.tv_sec +
         ru.ru_stime.tv_usec / 1e6;
}

/* ---- worker processes (-p) ------------------------------------------------------ */

typedef struct procs {
  pid_t pid[64];
  int n;
  int stop_fd;   /* closed to stop them */
  int done_fd;   /* their final-answer reports */
  pthread_t reader;
} procs;

/* A worker process: a runtime with b->workers threads until stop_fd ends. */
static void proc_main(bench *b, const char *store, int stop_fd) {
  dexa_runtime_options o;
  dexa_runtime_options_init(&o, sizeof o);
  o.store = store;
  o.sqlite_synchronous = b->sync;
  dexa_runtime *rt = NULL;
  char err[256] = "";
  if (dexa_runtime_new(&rt, b->agent, &o, err, sizeof err) != DEXA_OK) {
    fprintf(stderr, "turns: worker process: %s\n", err);
    _exit(3);
  }
  dexa_runtime_start(rt, b->workers);
  char c;
  while (read(stop_fd, &c, 1) > 0) {
  }
  dexa_runtime_free(rt);
  _exit(0);
}

static int procs_start(bench *b, const char *store, procs *p) {
  int done[2], stop[2];
  if (pipe(done) != 0 || pipe(stop) != 0) return DEXA_E_IO;
  p->n = 0;
  fflush(NULL);
  for (int i = 0; i < b->procs && i < 64; i++) {
    pid_t pid = fork();
    if (pid == 0) {
      close(done[0]);
      close(stop[1]);
      g_done_fd = done[1];
      proc_main(b, store, stop[0]);
    }
    p->pid[p->n++] = pid;
  }
  close(done[1]);
  close(stop[0]);
  p->stop_fd = stop[1];
  p->done_fd = done[0];
  return DEXA_OK;
}

/* Hands the worker processes' final-answer reports to the drivers. */
static void *procs_read(void *arg) {
  bench *b = arg;
  int s;
  while (read(b->done_fd, &s, sizeof s) == (ssize_t)sizeof s) {
    if (s < 0 || s >= b->sessions) continue;
    pthread_mutex_lock(&b->mu);
    b->almost_done[s] = 1;
    pthread_cond_broadcast(&b->cv);
    pthread_mutex_unlock(&b->mu);
  }
  return NULL;
}

static void procs_stop(procs *p) {
  close(p->stop_fd);
  for (int i = 0; i < p->n; i++) waitpid(p->pid[i], NULL, 0);
  close(p->done_fd);
}

/* Store bytes after a full checkpoint: the database file plus its WAL. */
static long store_bytes(const char *path) {
  if (dexa__store_is_pg(path)) return pg_store_bytes(path);
  sqlite3 *db = NULL;
  if (sqlite3_open(path, &db) == SQLITE_OK)
    sqlite3_exec(db, "PRAGMA wal_checkpoint(TRUNCATE)", NULL, NULL, NULL);
  sqlite3_close(db);
  char wal[600];
  snprintf(wal, sizeof wal, "%s-wal", path);
  return file_size(path) + file_size(wal);
}

static int cmp_double(const void *x, const void *y) {
  double a = *(const double *)x, c = *(const double *)y;
  return a < c ? -1 : a > c;
}

static int run_pass(bench *b, int sessions, int turns, const char *store, pass_result *res) {
  memset(res, 0, sizeof *res);
  b->sessions = sessions;
  b->turns = turns;
  b->almost_done = calloc((size_t)sessions, 1);
  b->sent = calloc((size_t)sessions, sizeof(int));
  b->sent_at = calloc((size_t)sessions, sizeof(double));
  b->owner = calloc((size_t)sessions, sizeof(int));
  b->lat_ms = calloc((size_t)sessions * (size_t)turns, sizeof(double));
  atomic_store(&b->lat_n, 0);
  atomic_store(&b->model_calls, 0);
  atomic_store(&b->tool_calls, 0);
  procs p = {0};
  pthread_t reader;
  if (b->procs) procs_start(b, store, &p);
  b->done_fd = p.done_fd;
  dexa_runtime_options o;
  dexa_runtime_options_init(&o, sizeof o);
  o.store = store;
  o.sqlite_synchronous = b->sync;
  char err[256] = "";
  int rc = dexa_runtime_new(&b->rt, b->agent, &o, err, sizeof err);
  if (rc != DEXA_OK) {
    if (b->procs) procs_stop(&p);
    fprintf(stderr, "turns: runtime %s: %s %s\n", store, dexa_strerror(rc), err);
    goto done;
  }
  for (int s = 0; s < sessions && rc == DEXA_OK; s++) {
    char sid[32], *out = NULL;
    size_t len;
    session_id(sid, sizeof sid, s);
    rc = dexa_runtime_start_session(b->rt, sid, NULL, 0, &out, &len);
    if (rc != DEXA_OK) fprintf(stderr, "turns: start_session: %s %s\n", dexa_strerror(rc), out ? out : "");
    dexa_free(out);
  }
  if (rc == DEXA_OK && !b->procs) rc = dexa_runtime_start(b->rt, b->workers);
  for (int s = 0; s < sessions && rc == DEXA_OK; s++) { /* started and waiting */
    char sid[32];
    session_id(sid, sizeof sid, s);
    rc = dexa_runtime_wait_idle(b->rt, sid, 30000);
  }
  long commits0 = atomic_load(&g_commits), syncs0 = atomic_load(&g_syncs);
  long stmts0 = atomic_load(&g_stmts);
  double switches0 = switches_now(), sys0 = rusage_sys_s();
  if (b->procs) pthread_create(&reader, NULL, procs_read, b);
  long pgc0 = 0, pgs0 = 0;
  if (dexa__store_is_pg(store)) pg_counters(store, &pgc0, &pgs0);
  long rt0 = g_round_trips ? atomic_load(g_round_trips) : 0;
  double cpu0 = rusage_s(RUSAGE_SELF) + pg_server_cpu_s();
  double t0 = now_s();
  CALLGRIND_ZERO_STATS;
  if (rc == DEXA_OK) rc = drive_all(b);
  CALLGRIND_DUMP_STATS_AT("turns-pass");
  res->wall_s = now_s() - t0;
  res->cpu_s = rusage_s(RUSAGE_SELF) + pg_server_cpu_s() - cpu0;
  if (b->procs) {
    double children0 = rusage_s(RUSAGE_CHILDREN);
    procs_stop(&p);
    pthread_join(reader, NULL);
    /* The worker processes' CPU (their start-up too: a small share). */
    res->cpu_s += rusage_s(RUSAGE_CHILDREN) - children0;
  }
  res->commits = atomic_load(&g_commits) - commits0;
  res->syncs = atomic_load(&g_syncs) - syncs0;
  res->stmts = atomic_load(&g_stmts) - stmts0;
  res->switches = switches_now() - switches0;
  res->sys_s = rusage_sys_s() - sys0;
  if (g_round_trips) res->round_trips = atomic_load(g_round_trips) - rt0;
  if (dexa__store_is_pg(store)) {
    long c1 = 0, s1 = 0;
    pg_counters(store, &c1, &s1);
    res->pg_commits = c1 - pgc0;
    res->pg_syncs = s1 - pgs0;
  }
  dexa_runtime_stop(b->rt);
  dexa_runtime_free(b->rt);
  b->rt = NULL;
  res->turns = (long)sessions * turns;
  res->model_calls = atomic_load(&b->model_calls);
  res->tool_calls = atomic_load(&b->tool_calls);
  /* Worker dispatches (RunModel, CallTool) are counted by the model and the
   * tools; the locked Steps the runtime runs inline are 4 methods per turn
   * (AwaitUserMessage WaitFor + Execute, ResumeTurn WaitFor + Execute). */
  res->methods = res->model_calls + res->tool_calls + 4 * res->turns;
  /* -p: the worker processes counted their calls; each turn is 2 RunModel
   * and 2 CallTool dispatches and the 4 locked methods. */
  if (b->procs) res->methods = 8 * res->turns;
  res->bytes_per_session = (double)store_bytes(store) / sessions;
  {
    long n = atomic_load(&b->lat_n);
    if (n > (long)sessions * turns) n = (long)sessions * turns;
    if (n > 0) {
      qsort(b->lat_ms, (size_t)n, sizeof(double), cmp_double);
      res->p50_ms = b->lat_ms[(n - 1) / 2];
      res->p99_ms = b->lat_ms[(long)((n - 1) * 0.99)];
    }
  }
done:
  free(b->almost_done);
  free(b->sent);
  free(b->sent_at);
  free(b->owner);
  free(b->lat_ms);
  return rc;
}

/* ---- micro-benchmark: CPU of one RunModel dispatch at ~200 messages ----------
 * A session gets ~200 messages through the runtime (driven on this thread),
 * then the next RunModel task is claimed and its call dispatched N times:
 * once reading attributes from SQLite through the task's reader, once from
 * an in-memory copy of what the first dispatch read (the core alone). */
typedef struct rec_kv {
  char *key, *value; /* value NULL: not found */
} rec_kv;

typedef struct recorder {
  const dexa_call *inner; /* the task's call: its reader */
  rec_kv *gets;
  size_t ngets;
  char **scan_prefixes;
  rec_kv **scans;
  size_t *scan_lens, nscans;
  int replay;
  rec_kv *cur; /* the scan being recorded */
  size_t cur_n;
} recorder;

static int rec_visit(void *ctx, const char *k, size_t kl, const char *v, size_t vl) {
  recorder *r = ctx;
  r->cur = realloc(r->cur, (r->cur_n + 1) * sizeof *r->cur);
  r->cur[r->cur_n].key = strndup(k, kl);
  r->cur[r->cur_n].value = strndup(v, vl);
  r->cur_n++;
  return 0;
}

static int rec_get(void *user, const char *key, size_t kl, const char **v, size_t *vl) {
  recorder *r = user;
  for (size_t i = 0; i < r->ngets; i++)
    if (strlen(r->gets[i].key) == kl && memcmp(r->gets[i].key, key, kl) == 0) {
      if (!r->gets[i].value) return DEXA_E_NOT_FOUND;
      *v = r->gets[i].value;
      *vl = strlen(*v);
      return DEXA_OK;
    }
  if (r->replay) return DEXA_E_NOT_FOUND;
  int rc = r->inner->attr_get(r->inner->attr_user_data, key, kl, v, vl);
  r->gets = realloc(r->gets, (r->ngets + 1) * sizeof *r->gets);
  r->gets[r->ngets].key = strndup(key, kl);
  r->gets[r->ngets].value = rc == DEXA_OK ? strndup(*v, *vl) : NULL;
  r->ngets++;
  return rc;
}

static int rec_scan(void *user, const char *prefix, size_t pl, dexa_attr_visit_fn visit,
                    void *ctx) {
  recorder *r = user;
  size_t i = 0;
  while (i < r->nscans && !(strlen(r->scan_prefixes[i]) == pl &&
                            memcmp(r->scan_prefixes[i], prefix, pl) == 0))
    i++;
  if (i == r->nscans) {
    if (r->replay) return DEXA_OK;
    r->cur = NULL;
    r->cur_n = 0;
    int rc = r->inner->attr_scan(r->inner->attr_user_data, prefix, pl, rec_visit, r);
    if (rc != DEXA_OK) return rc;
    r->scan_prefixes = realloc(r->scan_prefixes, (r->nscans + 1) * sizeof(char *));
    r->scans = realloc(r->scans, (r->nscans + 1) * sizeof(rec_kv *));
    r->scan_lens = realloc(r->scan_lens, (r->nscans + 1) * sizeof(size_t));
    r->scan_prefixes[i] = strndup(prefix, pl);
    r->scans[i] = r->cur;
    r->scan_lens[i] = r->cur_n;
    r->nscans++;
  }
  for (size_t k = 0; k < r->scan_lens[i]; k++) {
    const rec_kv *a = &r->scans[i][k];
    int rc = visit(ctx, a->key, strlen(a->key), a->value, strlen(a->value));
    if (rc < 0) return rc;
    if (rc > 0) break;
  }
  return DEXA_OK;
}

static void recorder_free(recorder *r) {
  for (size_t i = 0; i < r->ngets; i++) free(r->gets[i].key), free(r->gets[i].value);
  for (size_t i = 0; i < r->nscans; i++) {
    for (size_t k = 0; k < r->scan_lens[i]; k++) free(r->scans[i][k].key), free(r->scans[i][k].value);
    free(r->scans[i]);
    free(r->scan_prefixes[i]);
  }
  free(r->gets), free(r->scans), free(r->scan_prefixes), free(r->scan_lens);
}

static double thread_cpu_us(void) {
  struct timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

/* Times n dispatches of call; returns CPU µs per dispatch (or -1). With
 * task set, each dispatch starts as a worker's does, with the task's
 * reader new: its first read checks the session's data version (and its
 * buffers are empty). The bench links the static library, so it may. */
static double time_dispatches(const dexa_agent *agent, const dexa_call *call, dexa_task *task,
                              int n) {
  double t0 = thread_cpu_us();
  for (int i = 0; i < n; i++) {
    if (task) dexa__reader_free(&task->reader);
    dexa_result *res = NULL;
    int rc = dexa_dispatch(&res, agent, call);
    if (rc != DEXA_OK) {
      fprintf(stderr, "turns: dispatch: %s %s\n", dexa_strerror(rc), dexa_result_errmsg(res));
      dexa_result_free(res);
      return -1;
    }
    dexa_result_free(res);
  }
  return (thread_cpu_us() - t0) / n;
}

static atomic_long g_request_messages; /* message count of the newest request */

static int gen_counting(void *user, const dexa_model_request *req, dexa_model_reply *reply) {
  atomic_store(&g_request_messages, (long)dexa_model_request_message_count(req));
  return bench_generate(user, req, reply);
}

static int micro(const char *dir, const char *sync, int64_t cache_bytes, int iterations,
                 double *us_runtime, double *us_memory, long *messages) {
  /* An agent of its own: its model records the request size; no driver. */
  dexa_model_vtable vt;
  dexa_model_vtable_init(&vt, sizeof vt);
  vt.generate = gen_counting;
  dexa_model *model = NULL;
  dexa_tool_source *tools = NULL;
  dexa_agent *agent = NULL;
  bench quiet;
  memset(&quiet, 0, sizeof quiet); /* sessions = 0: the model signals nobody */
  dexa_model_new(&model, "bench/zero-latency", &vt, &quiet);
  dexa_function_tools_new(&tools, "bench");
  dexa_function_tools_add(tools, "read_a", "Reads a.", NULL, DEXA_TOOL_READ, DEXA_APPROVAL_NONE, read_tool, &quiet);
  dexa_function_tools_add(tools, "read_b", "Reads b.", NULL, DEXA_TOOL_READ, DEXA_APPROVAL_NONE, read_tool, &quiet);
  dexa_agent_def def;
  dexa_agent_def_init(&def, sizeof def);
  def.instructions = "You are the W1 benchmark agent.";
  def.models = &model;
  def.model_count = 1;
  def.tool_sources = &tools;
  def.tool_source_count = 1;
  char err[256] = "", store[600];
  int rc = dexa_agent_new(&agent, &def, err, sizeof err);
  dexa_model_free(model);
  dexa_tool_source_free(tools);
  snprintf(store, sizeof store, "%s/dexa-bench-micro-%d.db", dir, (int)getpid());
  dexa_runtime *rt = NULL;
  dexa_runtime_options o;
  dexa_runtime_options_init(&o, sizeof o);
  o.store = store;
  o.sqlite_synchronous = sync;
  o.session_cache_bytes = cache_bytes;
  if (rc == DEXA_OK) rc = dexa_runtime_new(&rt, agent, &o, err, sizeof err);
  const char *sid = "w1-micro";
  char *out = NULL;
  size_t len;
  if (rc == DEXA_OK) rc = dexa_runtime_start_session(rt, sid, NULL, 0, &out, &len);
  dexa_free(out);
  /* 6 messages per turn (user, 2 calls, 2 results, answer): 33 turns = 198,
   * and the 34th user message makes 199 in the timed request. */
  for (int t = 0; t < 34 && rc == DEXA_OK; t++) {
    rc = dexa_runtime_run_ready(rt, NULL);
    out = NULL;
    if (rc == DEXA_OK)
      rc = dexa_runtime_call(rt, sid, "send_message", "{\"text\":\"read a and b\"}", 23, &out, &len);
    dexa_free(out);
    if (t < 33 && rc == DEXA_OK) rc = dexa_runtime_run_ready(rt, NULL);
  }
  dexa_task *task = NULL;
  while (rc == DEXA_OK) { /* the RunModel of the 34th turn (locked Steps run inline) */
    rc = dexa_runtime_poll(rt, &task, 2000);
    if (rc != DEXA_OK || strcmp(dexa_task_call(task)->name, "RunModel") == 0) break;
    fprintf(stderr, "turns: micro: unexpected task %s\n", dexa_task_call(task)->name);
    dexa_task_abandon(rt, task);
    task = NULL;
  }
  if (rc == DEXA_OK && task) {
    const dexa_call *call = dexa_task_call(task);
    *us_runtime = time_dispatches(agent, call, task, iterations);
    *messages = atomic_load(&g_request_messages);
    recorder r;
    memset(&r, 0, sizeof r);
    r.inner = call;
    dexa_call mem = *call;
    mem.attr_user_data = &r;
    mem.attr_get = rec_get;
    mem.attr_scan = rec_scan;
    dexa_result *res = NULL;
    rc = dexa_dispatch(&res, agent, &mem); /* records what a dispatch reads */
    dexa_result_free(res);
    r.replay = 1;
    if (rc == DEXA_OK) *us_memory = time_dispatches(agent, &mem, NULL, iterations);
    recorder_free(&r);
    res = NULL;
    dexa_dispatch(&res, agent, call);
    dexa_runtime_complete(rt, task, res);
    dexa_result_free(res);
  }
  if (rc != DEXA_OK) fprintf(stderr, "turns: micro: %s %s\n", dexa_strerror(rc), rt ? dexa_runtime_errmsg(rt) : err);
  dexa_runtime_free(rt);
  dexa_agent_free(agent);
  temp_store_remove(store);
  return rc;
}

/* ---- main -------------------------------------------------------------------- */

static long peak_rss_kb(void) {
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  return ru.ru_maxrss;
}

/* The RunModel dispatch figures: cached, from SQLite, and the core alone. */
static int print_micro(const char *dir, const char *sync) {
  double us_cached = -1, us_sqlite = -1, us_memory = -1;
  long messages = 0;
  int rc = micro(dir, sync, 64 << 20, 2000, &us_cached, &us_memory, &messages);
  if (rc == DEXA_OK) rc = micro(dir, sync, 0, 2000, &us_sqlite, &us_memory, &messages);
  if (rc != DEXA_OK) return rc;
  printf("  %-34s %10.1f us      (aim <= 20 us; %ld messages; a worker's Step: attributes from\n"
         "  %-34s %10s         the session cache at the data version its claim saw)\n",
         "RunModel dispatch CPU", us_cached, messages, "", "");
  printf("  %-34s %10.1f us      (the same call with the session cache off)\n",
         "RunModel dispatch CPU, from SQLite", us_sqlite);
  printf("  %-34s %10.1f us      (the same call, attributes from memory: the core alone)\n",
         "RunModel dispatch CPU, core only", us_memory);
  return DEXA_OK;
}

static void usage(void) {
  fprintf(stderr, "usage: turns [-s SESSIONS] [-t TURNS] [-k IN_FLIGHT] [-w WORKERS] [-p PROCS] "
                  "[-y full|normal] [--store PATH] [--quick | --micro]\n");
}

int main(int argc, char **argv) {
  static bench b;
  int sessions = 100, turns = 10, quick = 0, micro_only = 0;
  const char *store_arg = NULL;
  b.workers = 2;
  b.sync = "full";
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (strcmp(a, "--quick") == 0) { quick = 1; continue; }
    if (strcmp(a, "--micro") == 0) { micro_only = 1; continue; }
    if (!v) { usage(); return 2; }
    if (strcmp(a, "-s") == 0) sessions = atoi(v);
    else if (strcmp(a, "-t") == 0) turns = atoi(v);
    else if (strcmp(a, "-w") == 0) b.workers = atoi(v);
    else if (strcmp(a, "-k") == 0) b.inflight = atoi(v);
    else if (strcmp(a, "-p") == 0) b.procs = atoi(v);
    else if (strcmp(a, "-y") == 0) b.sync = v;
    else if (strcmp(a, "--store") == 0) store_arg = v;
    else { usage(); return 2; }
    i++;
  }
  if (sessions < 1 || sessions > MAX_SESSIONS || turns < 1 || b.workers < 1 || b.workers > 256 ||
      b.procs < 0 || b.procs > 64 || b.inflight < 0 || b.inflight > 1024 ||
      (b.inflight && b.procs) ||
      (strcmp(b.sync, "full") != 0 && strcmp(b.sync, "normal") != 0)) {
    usage();
    return 2;
  }
  const char *dir = getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
  g_round_trips = mmap(NULL, sizeof *g_round_trips, PROT_READ | PROT_WRITE,
                       MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (g_round_trips == MAP_FAILED) g_round_trips = NULL;
  pthread_mutex_init(&b.mu, NULL);
  pthread_cond_init(&b.cv, NULL);
  if (micro_only) {
    printf("W1 RunModel dispatch, synchronous=%s\n", b.sync);
    return print_micro(dir, b.sync) == DEXA_OK ? 0 : 1;
  }
  if (make_agent(&b) != DEXA_OK) return 1;

  char store[1024];
  if (store_arg) snprintf(store, sizeof store, "%s", store_arg);
  else if (temp_store_is_pg()) temp_store_path(store, sizeof store, "w1");
  else snprintf(store, sizeof store, "%s/dexa-bench-w1-%d.db", dir, (int)getpid());
  if (!temp_store_is_pg()) temp_store_remove(store);
  if (b.procs)
    printf("W1: %d sessions x %d turns, %d worker processes x %d threads, synchronous=%s, store %s\n",
           sessions, turns, b.procs, b.workers, b.sync, temp_store_is_pg() ? "PostgreSQL" : store);
  else
    printf("W1: %d sessions x %d turns, %d in flight, %d workers, synchronous=%s, store %s\n",
           sessions, turns, b.inflight ? (b.inflight < sessions ? b.inflight : sessions) : sessions,
           b.workers, b.sync, temp_store_is_pg() ? "PostgreSQL" : store);
  printf("    each turn: user message -> model (2 parallel READ tool calls) -> 2 CallTool -> model -> text\n");
  fflush(stdout);
  pass_result r;
  int rc = run_pass(&b, sessions, turns, store, &r);
  if (!store_arg) temp_store_remove(store);
  if (rc != DEXA_OK) {
    printf("W1 failed: %s\n", dexa_strerror(rc));
    return 1;
  }
  int full = strcmp(b.sync, "full") == 0;
  printf("  %-34s %10.2f s\n", "wall time", r.wall_s);
  printf("  %-34s %10.0f turns/s   (target >= 500 turns/s with synchronous=full)%s\n", "turns",
         r.turns / r.wall_s, full ? "" : " [this run: normal]");
  printf("  %-34s %10.0f /s        (%ld methods: %ld RunModel + %ld CallTool dispatched by\n"
         "  %-34s %10s              workers, + 4 locked methods per turn run inline)\n",
         "Step methods", r.methods / r.wall_s, r.methods, r.model_calls, r.tool_calls, "", "");
  if (temp_store_is_pg()) {
    printf("  %-34s %10.1f         (%ld: statements run alone, pipeline flushes and syncs, all processes)\n",
           "PostgreSQL round trips per turn", (double)r.round_trips / r.turns, r.round_trips);
    printf("  %-34s %10.2f         (%.2f WAL fsyncs per turn; transactions of the database, reads too)\n",
           "PostgreSQL commits per turn", (double)r.pg_commits / r.turns, (double)r.pg_syncs / r.turns);
  } else {
    printf("  %-34s %10ld         (%.2f per turn; SQLite write transactions, group commit)\n",
           "store commits", r.commits, (double)r.commits / r.turns);
    printf("  %-34s %10ld         (%.2f per turn; fdatasync calls of this process)\n", "store syncs",
           r.syncs, (double)r.syncs / r.turns);
  }
  if (g_count_stmts > 0)
    printf("  %-34s %10.1f         (DEXA_BENCH_STMTS: SQL statements run, savepoints included)\n",
           "SQL statements per turn", (double)r.stmts / r.turns);
  printf("  %-34s %10.1f         (context switches of this process, getrusage)\n",
         "thread switches per turn", r.switches / r.turns);
  printf("  %-34s %10.1f KB      (target < 30 KB at 10 turns; file + WAL after checkpoint,\n"
         "  %-34s %10s         PostgreSQL: tables, indexes and TOAST after VACUUM)\n",
         "store bytes per session", r.bytes_per_session / 1024, "", "");
  printf("  %-34s %10.0f us      (this process%s; CPU seconds / turns; %.0f us system)\n",
         "CPU per turn", r.cpu_s * 1e6 / r.turns,
         b.procs ? ", the worker processes and the PostgreSQL server"
                 : (getenv("DEXA_BENCH_PG_DATA") ? " and the PostgreSQL server" : ""),
         r.sys_s * 1e6 / r.turns);
  printf("  %-34s %10.2f ms      (p99 %.2f ms; send_message to idle%s)\n", "turn latency p50",
         r.p50_ms, r.p99_ms, b.inflight ? "" : ", as the polling drivers see it: use -k");
  fflush(stdout);

  if (!quick) {
    static const int growth_turns[] = {5, 10, 20, 40};
    double per_turn[4];
    printf("  growth, 20 sessions per pass:\n");
    for (int i = 0; i < 4; i++) {
      char gstore[1024];
      if (temp_store_is_pg()) {
        char name[16];
        snprintf(name, sizeof name, "w1g%d", i);
        temp_store_path(gstore, sizeof gstore, name);
      } else {
        snprintf(gstore, sizeof gstore, "%s/dexa-bench-w1g-%d-%d.db", dir, (int)getpid(), i);
        temp_store_remove(gstore);
      }
      pass_result g;
      rc = run_pass(&b, 20, growth_turns[i], gstore, &g);
      temp_store_remove(gstore);
      if (rc != DEXA_OK) break;
      per_turn[i] = g.bytes_per_session / growth_turns[i];
      printf("    T=%-3d %10.1f KB per session  (%.2f KB per turn; %.0f turns/s)\n", growth_turns[i],
             g.bytes_per_session / 1024, per_turn[i] / 1024, g.turns / g.wall_s);
      fflush(stdout);
    }
    if (rc == DEXA_OK) {
      /* Linear: the increment per added turn stays flat from 5->10 to 20->40. */
      printf("    (target: linear growth; per-turn bytes should stay flat as T grows)\n");
    }
    if (rc == DEXA_OK) rc = print_micro(dir, b.sync);
  }
  printf("  %-34s %10.1f MB\n", "peak RSS", peak_rss_kb() / 1024.0);
  dexa_agent_free(b.agent);
  return rc == DEXA_OK ? 0 : 1;
}
