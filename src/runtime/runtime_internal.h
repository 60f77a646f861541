/* The embedded runtime's internals, shared by the files of src/runtime.
 *
 * Ownership: the runtime owns the store, its writer connection, the reader
 * pool, the flow description, the delta ring and every in-flight task until
 * the task is completed or abandoned. All writes go through the group
 * commit (group_commit.c): one thread at a time runs a batch of operations
 * in one durable transaction on the writer connection. */
#ifndef DEXA_RUNTIME_INTERNAL_H
#define DEXA_RUNTIME_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "dexagents/errors.h"
#include "dexagents/flow.h"
#include "dexagents/runtime.h"
#include "store/store.h"

/* dexa_dispatch with a user pointer, so tests can run a fake flow. */
typedef int (*dexa__dispatch_fn)(void *user, dexa_result **out, const dexa_call *call);

/* Creates a runtime for a flow given by its description JSON and dispatch
 * function instead of an agent. Internal (not exported): for tests and for
 * hosts inside the library. */
int dexa__runtime_new_with_dispatch(dexa_runtime **out, const char *flow_description_json,
                                    dexa__dispatch_fn fn, void *user,
                                    const dexa_runtime_options *opts, char *errmsg,
                                    size_t errmsg_size);

#define DEXA__NAME_MAX 128

/* A Step's options: the description's defaults, overridden per execution. */
typedef struct dexa__step_opts {
  int32_t max_attempts; /* 0 = unlimited */
  int32_t has_wait_for;
  int32_t locked;
  int32_t reserved;
  int64_t initial_backoff_ms;
  double backoff_coefficient;
  int64_t max_backoff_ms;
  int64_t timeout_ms;
  char recovery[DEXA__NAME_MAX]; /* "" = none */
} dexa__step_opts;

typedef struct dexa__step_def {
  char *name;
  dexa__step_opts opts;
} dexa__step_def;

typedef struct dexa__rpc_def {
  char *name;
  int read_only;
  int interrupts; /* committed: the session's running tasks are told to end early */
} dexa__rpc_def;

typedef struct dexa__flow_desc {
  char *flow_type;
  char *start_step;
  dexa__step_def *steps;
  size_t step_count;
  dexa__rpc_def *rpcs;
  size_t rpc_count;
} dexa__flow_desc;

/* flowdesc.c */
int dexa__flow_desc_parse(dexa__flow_desc *d, const char *json, size_t len, char *errmsg,
                          size_t n);
void dexa__flow_desc_free(dexa__flow_desc *d);
const dexa__step_def *dexa__flow_step(const dexa__flow_desc *d, const char *name);
const dexa__rpc_def *dexa__flow_rpc(const dexa__flow_desc *d, const char *name);
/* Reads the option members of a JSON object over base (unknown keys are
 * ignored). Returns DEXA_OK or DEXA_E_INVALID_JSON. */
int dexa__opts_overlay(dexa__step_opts *o, const char *json, size_t len);
/* The effective options of a row: defaults of its type + its override. */
int dexa__row_opts(const dexa_runtime *rt, const dexa__step_row *row, dexa__step_opts *out);
int64_t dexa__backoff_ms(const dexa__step_opts *o, int32_t attempt);

/* ---- live deltas (events.c) --------------------------------------------- */
#define DEXA__RING_SIZE 4096

typedef struct dexa__delta {
  char *session_id;
  int64_t seq; /* durable event sequence current when emitted */
  int64_t n;   /* runtime-wide emission counter, from 1 */
  char *json;
  size_t len;
} dexa__delta;

typedef struct dexa__sink_ctx {
  dexa_runtime *rt;
  const char *session_id;
  int64_t seq;
} dexa__sink_ctx;

void dexa__delta_sink(void *user, const char *json, size_t len);
void dexa__ring_free(dexa_runtime *rt);

/* tokens.c: opaque resume tokens, "<session hash>.<seq>.<n>". */
void dexa__token_format(char *buf, size_t n, const char *session_id, int64_t seq, int64_t dn);
int dexa__token_parse(const char *token, const char *session_id, int64_t *seq, int64_t *dn);

/* ---- attribute reader (reader.c) ----------------------------------------- */
typedef struct dexa__reader {
  dexa_runtime *rt;
  const char *session_id;
  dexa__store_conn *conn; /* inside a write transaction; NULL: a pooled reader */
  char *buf;              /* borrowed copy for pooled gets */
  size_t cap;
  /* A pooled reader checks the session cache once, at its first read:
   * 1 when the cache holds the session at version ver (or newer), -1 when
   * it reads the store, 0 before. */
  int view;
  int64_t ver;
  /* A claimed task's: the data version its claim saw (0: unknown), which
   * spares the first read a query when the cache holds it. */
  int64_t claimed_ver;
  char *scanbuf; /* the cache's copy of a scanned range */
  size_t scancap;
} dexa__reader;

int dexa__reader_get(void *user, const char *key, size_t key_len, const char **value,
                     size_t *value_len);
int dexa__reader_scan(void *user, const char *prefix, size_t prefix_len,
                      dexa_attr_visit_fn visit, void *visit_ctx);
void dexa__reader_free(dexa__reader *r);
int dexa__pool_acquire(dexa_runtime *rt, dexa__store_conn **out);
void dexa__pool_release(dexa_runtime *rt, dexa__store_conn *c);

/* ---- group commit (group_commit.c) --------------------------------------- */
/* The longest a committed batch no thread waits on stays unsynced: it is
 * usually synced sooner, with the next batch a thread does wait on (the
 * next RPC of the session, say); this bounds the window in which an
 * operating-system crash can lose such a batch (whose Steps then run
 * again), as SQLite's own synchronous=normal bounds nothing. */
#define DEXA__LAZY_SYNC_MS 10

typedef int (*dexa__op_fn)(dexa_runtime *rt, dexa__store_conn *c, void *arg);

typedef struct dexa__op {
  dexa__op_fn fn;
  void *arg;
  int rc;
  int done; /* acknowledged: committed and durable (or see need_durable) */
  /* NULL, or read after the commit: 0 acknowledges the op as soon as it is
   * committed, before it is durable (a worker's own claims of retryable
   * Steps: losing one to an operating-system crash only runs the Step
   * again, which at-least-once allows). */
  const int *need_durable;
  /* NULL, or read after the commit: 1 when the op left no work that
   * another worker should be woken for (dexa__claim.quiet), so the commit
   * wakes none: only the op's sessions' waiters hear of it. */
  const int *quiet;
  /* Async ops (dexa__gc_submit) are heap-allocated; after their batch the
   * leader calls release(arg, rc) and frees the op. */
  void (*release)(dexa_runtime *rt, void *arg, int rc);
  /* A synchronous op's own condition (its submitter waits on it under
   * gc_mu), so an acknowledgement wakes that one thread, not every one. */
  pthread_cond_t *cv;
  struct dexa__op *next;
} dexa__op;

/* Runs fn(arg) inside a savepoint of the next batch transaction and returns
 * once that transaction is durable (or failed): fn's return, or the commit's
 * error. fn's changes are rolled back when it returns an error. With no
 * batch queued or being written the calling thread writes (and syncs) the
 * batch itself. */
int dexa__gc_run(dexa_runtime *rt, dexa__op_fn fn, void *arg);
/* dexa__gc_run for a worker's own claims: returns at commit when
 * *need_durable is 0 after fn ran (see dexa__op.need_durable and
 * dexa__op.quiet; quiet may be NULL). */
int dexa__gc_run_claim(dexa_runtime *rt, dexa__op_fn fn, void *arg, const int *need_durable,
                       const int *quiet);

/* Queues fn(arg) for the writer's next batch without waiting for its
 * commit. release(rt, arg, rc) runs after its commit either
 * way, and owns arg. Returns DEXA_OK or DEXA_E_NOMEM (release not called). */
int dexa__gc_submit(dexa_runtime *rt, dexa__op_fn fn, void *arg,
                    void (*release)(dexa_runtime *rt, void *arg, int rc));

/* Acknowledges every committed op and stops the group-commit threads; once
 * no op can be submitted any more (dexa_runtime_free). */
void dexa__gc_shutdown(dexa_runtime *rt);

/* ---- tasks ---------------------------------------------------------------- */
struct dexa_task {
  dexa_runtime *rt;
  dexa_call call;
  dexa__step_row row; /* the claimed row: owns the call's strings */
  dexa__reader reader;
  dexa__sink_ctx sink;
  int64_t deadline_ms; /* started + timeout: no renewal past it */
  int lost;            /* a renewal found the lease gone */
  /* Raised by an interrupting RPC of the session (dexa__interrupt_session);
   * read by the call's cancelled callback, on any thread. */
  atomic_int cancel;
  uint64_t serial; /* order of joining rt->inflight (rt->mu), from 1 */
  struct dexa_task *next, *prev; /* in rt->inflight */
};

/* ---- the runtime ---------------------------------------------------------- */
/* Tasks claimed in one batch beyond the first (see dexa__poll_batch). */
#define DEXA__CLAIM_BATCH 8
typedef struct dexa__taskq {
  dexa_task *items[DEXA__CLAIM_BATCH];
  int count;
} dexa__taskq;

#define DEXA__SESSION_BUCKETS 256

struct dexa_runtime {
  const dexa_agent *agent;
  dexa__dispatch_fn dispatch;
  void *dispatch_user;
  dexa__flow_desc desc;
  dexa__store *store;
  dexa__store_conn *writer;

  dexa_clock_fn clock;
  void *clock_user;
  int64_t lease_ms;
  int64_t events_retained;
  char worker_id[256];

  /* Session lifetime (sweep.c): 0 = off. */
  int64_t idle_ms, retention_ms, sweep_interval_ms;
  int64_t touch_step;          /* activity older by this much is written */
  _Atomic int64_t sweep_due;   /* runtime clock: the next automatic sweep */
  atomic_int sweeping;         /* a thread runs the sweep */

  /* mu guards: gens, conds, inflight, workers, heartbeat, errmsg. */
  pthread_mutex_t mu;
  pthread_cond_t work_cv; /* committed work: new ready steps, results */
  pthread_cond_t hb_cv;
  uint64_t work_gen;
  /* Per session (by hash bucket): bumped after each commit that changed a
   * session of the bucket, and by its live deltas, so a waiter for one
   * session queries the store only when that session may have changed.
   * Waiters for a session (dexa_runtime_wait_idle, event reads) sleep on
   * their bucket's condition, so a commit wakes only the waiters of the
   * sessions it changed, not every waiter of the runtime. */
  uint64_t session_gen[DEXA__SESSION_BUCKETS];
  pthread_cond_t session_cv[DEXA__SESSION_BUCKETS];
  /* Writer only: the buckets the batch being written touched. */
  uint8_t batch_touched[DEXA__SESSION_BUCKETS];
  /* The buckets of batches committed since the last notification (rt->mu):
   * a batch written while an earlier one syncs is announced only once it
   * is committed, never by the earlier batch's notification before. */
  uint8_t committed_touched[DEXA__SESSION_BUCKETS];
  int stopping; /* worker threads should return */
  int closing;  /* the heartbeat should return */
  dexa_task *inflight;
  uint64_t task_serial; /* the newest in-flight task's serial */
  /* Batch-claimed tasks no worker has started yet, oldest first. */
  dexa_task **claimed;
  size_t claimed_count, claimed_cap;
  int idle_workers; /* worker threads waiting for work (rt->mu) */
  pthread_t hb_thread;
  int hb_running;
  pthread_t *workers;
  int32_t worker_count;
  char errmsg[512];

  /* group commit (group_commit.c): queued ops, the writer thread, and the
   * committed batches the syncer thread makes durable, then acknowledges */
  pthread_mutex_t gc_mu;
  pthread_cond_t gc_work_cv; /* for the writer: an op was queued */
  pthread_cond_t gc_sync_cv; /* for the syncer: a batch was committed */
  dexa__op *gc_head, *gc_tail;
  dexa__op *gc_unsynced, *gc_unsynced_tail;
  int gc_unsynced_batches; /* committed, not yet taken by the syncer */
  int gc_sync_waited;       /* a thread waits for one of them to be durable */
  int64_t gc_lazy_due;      /* when the syncer syncs them anyway (0: none) */
  int gc_wake_pending;      /* one of them may have left work (dexa__op.quiet) */
  /* The syncer sleeps until this monotonic time; 0: until signalled;
   * -1: awake (it looks at gc_lazy_due before it sleeps again). */
  int64_t gc_syncer_alarm;
  /* A batch is being written / a sync is running, by the writer or the
   * syncer thread or by a submitting thread leading its own op (see
   * group_commit.c): one of each at a time. */
  int gc_writing, gc_syncing;
  pthread_t gc_writer, gc_syncer;
  int gc_writer_started, gc_writer_running, gc_syncer_started, gc_stop;

  /* reader pool */
  pthread_mutex_t pool_mu;
  dexa__store_conn **pool;
  size_t pool_count, pool_cap;

  /* log (log.c): the options' callback, and per kind of message the start
   * of its rate window and the repeats left out in it (log_mu) */
  dexa_log_fn log;
  void *log_user;
  pthread_mutex_t log_mu;
  struct dexa__log_site {
    const char *kind;
    int64_t window_ms;
    int64_t left_out;
  } log_sites[32];
  /* tracing (trace.c): the host's span callbacks and the exporter */
  dexa_span_fn span_start, span_end;
  void *trace_user;
  struct dexa__otlp *otlp; /* NULL: no built-in exporter (otlp_why says why) */
  char otlp_why[160];

  /* delta ring */
  pthread_mutex_t ring_mu;
  dexa__delta ring[DEXA__RING_SIZE];
  size_t ring_start, ring_count;
  int64_t ring_next_n;
};

/* runtime.c */
int64_t dexa__now(const dexa_runtime *rt);
/* Monotonic ms, for real waits (long polls, worker idle waits). */
int64_t dexa__mono_ms(void);
/* Waits on cv (rt->mu held) until the absolute monotonic time or a signal. */
void dexa__cond_wait_until(pthread_cond_t *cv, pthread_mutex_t *mu, int64_t mono_ms);
void dexa__set_errmsg(dexa_runtime *rt, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* The writer, after each batch: its touched sessions become committed. */
void dexa__mark_committed(dexa_runtime *rt);
/* Called once committed batches are durable: wakes pollers and event
 * readers of the sessions they touched. */
void dexa__notify_commit(dexa_runtime *rt, int wake_worker);

/* Notes, inside a batch (writer only), that the batch changes session sid;
 * dexa__notify_commit then bumps its generation. */
void dexa__touch_session(dexa_runtime *rt, const char *sid);
/* The generation of sid's bucket (takes rt->mu). */
uint64_t dexa__session_gen(dexa_runtime *rt, const char *sid);
/* How long a waiter sleeps before it looks at the store again: commits by
 * other processes signal us only when the store has wake-ups (store.h:
 * set_wake), and a wake-up may be lost. */
int64_t dexa__poll_ms(const dexa_runtime *rt);
/* Waits (takes rt->mu) until sid's generation is no longer gen, for at
 * most dexa__poll_ms and never past deadline (monotonic ms); the caller
 * looks at the store again. */
void dexa__wait_session_change(dexa_runtime *rt, const char *sid, uint64_t gen,
                               int64_t deadline);
/* Bumps the generation of a bucket and wakes its waiters (rt->mu held). */
void dexa__session_changed(dexa_runtime *rt, size_t bucket);
size_t dexa__session_bucket(const char *sid);

/* log.c: formats a message and hands it to the options' log callback (if
 * any), at most once per DEXA__LOG_WINDOW_MS per kind (a string literal
 * naming the call site); later repeats in the window are counted and the
 * next message passed says how many were left out. Any thread; takes
 * log_mu only to count. */
#define DEXA__LOG_WINDOW_MS 10000
void dexa__log(dexa_runtime *rt, int32_t level, const char *kind, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* The message for a store error rc: the store's noted cause (disk full,
 * read-only, permission denied, with the path) when it has one, else
 * dexa_strerror(rc). Returns buf. */
const char *dexa__store_error(const dexa_runtime *rt, int rc, char *buf, size_t n);
/* ---- session lifetime (sweep.c, client_ops.c) ---------------------------- */
#define DEXA__DEFAULT_IDLE_MS ((int64_t)30 * 24 * 3600 * 1000)
#define DEXA__DEFAULT_RETENTION_MS ((int64_t)7 * 24 * 3600 * 1000)
#define DEXA__DEFAULT_SWEEP_MS 60000

/* 0 when s is closed and its retention has passed at now: it reads as
 * gone ("no longer retained") even before the sweep deletes it. */
int dexa__session_retained(const dexa_runtime *rt, const dexa__session_row *s, int64_t now);
/* Notes the session's activity inside a write transaction (store.h:
 * session_touch with the runtime's step). */
int dexa__session_active(dexa_runtime *rt, dexa__store_conn *c, const char *sid, int64_t now);

typedef struct dexa__idle_arg {
  const char *sid;
  int64_t cutoff;   /* idle when active_ms < cutoff */
  int ended;        /* out: ended by this operation */
  uint64_t running; /* out: the newest in-flight task's serial then */
  char errmsg[256];
} dexa__idle_arg;
/* Group-commit op (client_ops.c): ends a = dexa__idle_arg's session if it
 * is still idle, through the flow's end_session RPC ({"reason":
 * "idle_timeout"}) or, for a flow without one, by closing it. */
int dexa__end_idle_op(dexa_runtime *rt, dexa__store_conn *c, void *arg);
/* Runs the sweep when it is due (worker threads, run_ready, poll); cheap
 * when it is not. */
void dexa__sweep_maybe(dexa_runtime *rt);

/* ids.c: "s-" + 32 hex digits from the system CSPRNG. */
int dexa__random_session_id(char out[35]);

/* ---- scheduling (scheduler.c, failures.c, conditions.c, apply.c) ---------- */

typedef struct dexa__claim {
  dexa_task *task; /* out: a claimed step, or NULL */
  int32_t ran;     /* out: locked steps run inline */
  int64_t now;
  dexa__taskq *more; /* optional: further claims go here, up to `want` in all */
  int want;
  int stop;          /* a single-attempt Step ends a batch claim before it */
  int single;        /* out: a single-attempt Step was claimed; its lease must
                        be durable before it runs */
  /* out: the claim took every ready Step and nothing else falls due within
   * a poll period, or it took none and looks_again is set: no other worker
   * need be woken by its commit */
  int quiet;
  int looks_again; /* in: the claimer, a worker, looks for work again
                      itself before it sleeps */
} dexa__claim;

/* Group-commit op: housekeeping of due rows (timers, expired leases), runs
 * due locked steps inline, and claims one ready step into arg->task. */
int dexa__claim_op(dexa_runtime *rt, dexa__store_conn *c, void *arg);
/* Frees every task a claim holds (after its batch failed). */
void dexa__claim_drop(dexa__claim *cl);

/* Inserts a new execution of step_type (READY now). */
int dexa__enqueue(dexa_runtime *rt, dexa__store_conn *c, const char *sid,
                  const char *step_type, const char *input, size_t input_len,
                  const char *options, size_t options_len, const char *recovery_error,
                  size_t recovery_error_len, int64_t now);

/* How many times a Step execution's worker may be lost (its lease expired
 * before the Step's timeout: a crash, kill -9) and the Step run again
 * without using up an attempt; one more fails it (failures.c). */
#define DEXA__MAX_LOST_WORKERS 10

/* The attempts of row that failed or timed out: its claims less its lost
 * workers. */
int32_t dexa__failed_attempts(const dexa__step_row *row);

/* A failed or timed-out attempt: retry after backoff, else the recovery
 * Step, else the session fails. The row must be current. */
int dexa__attempt_failed(dexa_runtime *rt, dexa__store_conn *c, dexa__step_row *row, int code,
                         const char *message, int64_t retry_after_ms, int64_t now);
/* A lost worker of row's running attempt (its lease expired before the
 * Step's timeout): run again at once without counting a failed attempt, up
 * to DEXA__MAX_LOST_WORKERS times, then fail with "worker lost N times". A
 * single-attempt Step's is a failed attempt (it never runs twice). */
int dexa__attempt_lost(dexa_runtime *rt, dexa__store_conn *c, dexa__step_row *row, int64_t now);
/* Marks the session failed/completed and cancels every live step of it
 * except keep_exec (may be NULL). */
int dexa__session_close(dexa_runtime *rt, dexa__store_conn *c, const char *sid,
                        int32_t status, const char *keep_exec);
/* Cancels queued/waiting executions of step_type (deleted) and marks
 * running ones cancelled. */
int dexa__cancel_type(dexa__store_conn *c, const char *sid, const char *step_type,
                      const char *keep_exec);

/* Stores a WaitFor's wait on row (normalized, timers made absolute) and
 * evaluates it at once. DEXA_E_INVALID_JSON for a malformed wait. */
int dexa__wait_set(dexa_runtime *rt, dexa__store_conn *c, dexa__step_row *row,
                   const char *wait, size_t wait_len, int64_t now);
/* Re-evaluates a WAITING row: when satisfied, consumes and makes it ready
 * for Execute; otherwise sets due_ms to its next timer. Updates the row. */
int dexa__wait_eval(dexa_runtime *rt, dexa__store_conn *c, dexa__step_row *row, int64_t now);
/* Re-evaluates every waiting step of the session (after publishes). */
int dexa__wait_eval_session(dexa_runtime *rt, dexa__store_conn *c, const char *sid,
                            int64_t now);

/* Applies the writes, publishes and events of res for session sid;
 * *published set when a channel got a message. */
/* Appends one durable event the runtime itself emits (step_retrying) to
 * the session's stream, inside the caller's write transaction. */
int dexa__event_append(dexa_runtime *rt, dexa__store_conn *c, const char *sid, const char *json,
                       size_t len);
int dexa__apply_effects(dexa_runtime *rt, dexa__store_conn *c, const char *sid,
                        const dexa_result *res, int *published);
/* Applies a decision document (NULL: none). from_exec is excluded from its
 * cancellations. "complete" closes the session with status closed
 * (DEXA__SESSION_COMPLETED, or ENDED for end_session). */
int dexa__apply_decision(dexa_runtime *rt, dexa__store_conn *c, const char *sid,
                         const char *decision, size_t len, const char *from_exec, int32_t closed,
                         int64_t now);
/* Applies a successful Step result for row in a nested savepoint; on a
 * usage-class error (bad wait or decision) it rolls back its own changes and
 * returns that error so the caller can count a failed attempt. */
int dexa__apply_step_result(dexa_runtime *rt, dexa__store_conn *c, dexa__step_row *row,
                            const dexa_result *res, int64_t now);

/* Builds call for row (kind, names, input, conditions, recovery error). */
void dexa__call_for_row(dexa_runtime *rt, dexa_call *call, const dexa__step_row *row,
                        int64_t now);
/* Runs the session's due locked Steps in the caller's transaction (a few
 * at most), so that an RPC which unblocks one (a message, an approval, an
 * answer) takes effect in its own commit instead of the next claim's. Best
 * effort: on any error these runs alone are undone and DEXA_OK returned,
 * unless the store itself failed. */
int dexa__run_session_locked(dexa_runtime *rt, dexa__store_conn *c, const char *sid,
                             int64_t now);
/* Runs row's method now inside the caller's write transaction (locked
 * steps, the start step) and applies the outcome. Returns the dispatch's
 * error when fail_hard, else counts failures as attempts. */
int dexa__run_inline(dexa_runtime *rt, dexa__store_conn *c, dexa__step_row *row, int64_t now,
                     int fail_hard, char *errmsg, size_t errmsg_size);

/* Dispatch with errors normalized: returns DEXA_OK with *res a successful
 * result, or an error with *res possibly holding the failed result. */
int dexa__dispatch_call(dexa_runtime *rt, const dexa_call *call, dexa_result **res);

/* tasks.c */
int dexa__task_new(dexa_runtime *rt, const dexa__step_row *row, int64_t event_seq,
                   int64_t data_ver, dexa_task **out);
void dexa__task_free(dexa_task *t);
/* Completes task with res (NULL: failed with code rc_dispatch). */
int dexa__task_finish(dexa_runtime *rt, dexa_task *task, const dexa_result *res,
                      int rc_dispatch);
/* Claims a task, waiting up to timeout_ms; worker polls return early
 * (DEXA_E_TIMEOUT) once the runtime is stopping. */
int dexa__poll(dexa_runtime *rt, dexa_task **out, int64_t timeout_ms, int for_worker);
/* Dispatches a claimed task on this thread and completes it; with next not
 * NULL the same operation claims the next task into *next (may be NULL). */
int dexa__task_run(dexa_runtime *rt, dexa_task *t, dexa_task **next);
/* A worker's run of t: while claimed tasks wait (rt->claimed) the
 * completion is handed in without waiting for its commit (a single-attempt
 * Step's is waited for); otherwise it completes together with the next
 * batch claim. *next: the task to run next, or NULL. */
int dexa__task_run_worker(dexa_runtime *rt, dexa_task *t, int stopping, dexa_task **next);
/* Claims up to DEXA__CLAIM_BATCH tasks: the first in *out, the rest go to
 * rt->claimed, where any idle worker takes them (so sibling Steps still run
 * in parallel). */
int dexa__poll_batch(dexa_runtime *rt, dexa_task **out, int64_t timeout_ms);
/* Takes the oldest batch-claimed task, or NULL. */
dexa_task *dexa__claimed_pop(dexa_runtime *rt);
/* Inside an RPC's transaction: when workers of this runtime are idle,
 * claims ready Steps for them, one each at most, into cl and q (in a
 * savepoint of its own; a failed claim leaves them empty and the RPC as it
 * was: the error is the savepoint's), so no worker claims them in a commit
 * of its own. */
int dexa__claim_for_idle(dexa_runtime *rt, dexa__store_conn *c, dexa__claim *cl,
                         dexa__taskq *q);
/* After that RPC's commit is durable: hands the tasks to the idle workers
 * (rt->claimed) and wakes them. After a failed commit: drops them. */
void dexa__hand_claim_over(dexa_runtime *rt, dexa__claim *cl, int committed);
int dexa__task_finish_next(dexa_runtime *rt, dexa_task *task, const dexa_result *res,
                           int rc_dispatch, dexa_task **next);
/* One claim attempt; *task may be NULL. */
int dexa__claim_once(dexa_runtime *rt, dexa_task **task, int32_t *ran);

/* leases.c */
int dexa__heartbeat_ensure(dexa_runtime *rt);
void dexa__heartbeat_stop(dexa_runtime *rt);
void dexa__inflight_add(dexa_runtime *rt, dexa_task *t);
void dexa__inflight_remove(dexa_runtime *rt, dexa_task *t);
/* The newest serial of an in-flight task (rt->mu taken): tasks up to it
 * joined before now. */
uint64_t dexa__inflight_serial(dexa_runtime *rt);
/* Raises the cancel flag of every in-flight task of session sid whose
 * serial is at most bound (it was claimed before an interrupting RPC). */
void dexa__interrupt_session(dexa_runtime *rt, const char *sid, uint64_t bound);

/* trace.c: spans of the Steps this runtime dispatches (dexagents-tracing(7)). */
typedef struct dexa__step_trace {
  dexa_span *span; /* NULL: not traced */
  int64_t turn;
  int64_t turn_since_ms; /* the running turn's start, when it is this turn */
  char model[128];       /* RunModel: the session's model */
} dexa__step_trace;
/* Reads the span callbacks of o and starts the built-in exporter when the
 * OTEL_* variables ask for it. Returns DEXA_OK (a failed exporter is noted
 * in rt->otlp_why, never an error). */
int dexa__trace_open(dexa_runtime *rt, const dexa_runtime_options *o);
/* Sends what the exporter holds (waiting at most OTEL_BSP_EXPORT_TIMEOUT). */
void dexa__trace_flush(dexa_runtime *rt);
void dexa__trace_close(dexa_runtime *rt);
/* Around a Step method's dispatch; RPCs are not traced. */
void dexa__trace_step_begin(dexa_runtime *rt, const dexa_call *call, dexa__step_trace *t);
void dexa__trace_step_end(dexa_runtime *rt, const dexa_call *call, const dexa_result *res, int rc,
                          dexa__step_trace *t);

/* workers.c */
void dexa__workers_join(dexa_runtime *rt);

/* Error document {"error":{"code":..,"name":..,"message":..}}. */
char *dexa__error_doc(int code, const char *message, size_t *len);

#endif
