/* libdexagents: the embedded runtime.
 *
 * The runtime interprets the agent's flow on a durable store (SQLite by
 * default) through the public dispatch ABI: it claims a ready Step (a lease),
 * calls dexa_dispatch outside any store transaction, and applies the result
 * in one transaction. A worker that dies loses its lease and another worker
 * (or a new process on the same store) resumes the Step.
 *
 * Threads: a runtime handle may be used from many threads at once (client
 * operations, poll/complete, worker threads). Error details come back in the
 * operation's output document ({"error":{"code":..,"name":..,"message":..}})
 * and in dexa_runtime_errmsg (the last error of any thread; racy when
 * shared). */
#ifndef DEXAGENTS_RUNTIME_H
#define DEXAGENTS_RUNTIME_H

#include "common.h"
#include "flow.h"
#include "trace.h"

DEXA_BEGIN_DECLS

/* Returns the current time in ms since the Unix epoch (tests control time). */
typedef int64_t (*dexa_clock_fn)(void *user_data);

/* Levels of the runtime's log messages (dexa_runtime_options.log). */
enum {
  DEXA_LOG_ERROR = 1,   /* work failed and is not retried (a result could not be applied) */
  DEXA_LOG_WARNING = 2, /* an error the runtime retries (store busy or failing, lost leases) */
  DEXA_LOG_INFO = 3,    /* recovery (reconnected) and notable events (a worker was lost) */
  DEXA_LOG_DEBUG = 4    /* details of the above */
};

/* Receives one log message (UTF-8, NUL-terminated, borrowed for the call)
 * of the given level. Called from the runtime's own threads (workers,
 * heartbeat, group commit, the store's listener) and from the threads that
 * call into the runtime, possibly several at once: it must be thread-safe,
 * return quickly, and call no function of this runtime. */
typedef void (*dexa_log_fn)(void *user_data, int32_t level, const char *message);

typedef struct dexa_runtime_options {
  uint32_t struct_size;
  int32_t reserved0;
  /* "sqlite:PATH", a plain PATH (SQLite), or ":memory:"; or a PostgreSQL
   * database: "postgresql://...", "postgres://..." or a libpq key/value
   * conninfo, which many processes may share. Default "dexagents.db". */
  const char *store;
  /* SQLite synchronous mode: "full" (default, a commit is durable when
   * acknowledged) or "normal" (WAL; the newest commits may be lost on power
   * failure, never on a process crash). */
  const char *sqlite_synchronous;
  /* How long a claimed Step stays ours without renewal; a running worker
   * renews it every third of it. Default 10000. */
  int64_t lease_ms;
  /* This process's worker name in leases; default "<hostname>-<pid>". */
  const char *worker_id;
  /* Optional clock; default the system's real-time clock. */
  dexa_clock_fn clock;
  void *clock_user_data;
  /* Durable events kept per session: older ones are deleted as new ones
   * are appended, and a resume token older than the retained head reads
   * from the head. 0 keeps every event. Default 10000. (Appended field: a
   * struct_size without it gets the default.) */
  int64_t events_retained;
  /* Memory for the session cache: the attributes of recently used
   * sessions, kept so that a Step reads its session without the database
   * (checked against the session's data version on each Step, so it is
   * never stale, even with other processes on the same store). 0 turns it
   * off. Default 64 MiB. (Appended field.) */
  int64_t session_cache_bytes;
  /* Optional: receives the errors the runtime handles itself instead of
   * returning them to a caller (a worker thread's failed claim or
   * completion, a lease renewal, a store batch run again, a sync, a
   * PostgreSQL reconnect, a session-cache load), with the cause and the
   * store's path. Repeats of one message are rate-limited: at most one per
   * 10 s per kind, the next one saying how many were left out. NULL: none.
   * See dexa_runtime_new(3). (Appended fields.) */
  dexa_log_fn log;
  void *log_user_data;
  /* Tracing (appended in 1.1; see dexagents-tracing(7)): called at the
   * start and the end of every span (a Step method, a model call, a tool
   * call, a turn) on the thread that runs it; each may be NULL. They must
   * return quickly and may not call back into the runtime. */
  dexa_span_fn on_span_start;
  dexa_span_fn on_span_end;
  void *trace_user_data;
  /* 0 (default): the built-in exporter sends the spans over OTLP/HTTP when
   * OTEL_EXPORTER_OTLP_ENDPOINT or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT is
   * set (and neither OTEL_SDK_DISABLED=true nor OTEL_TRACES_EXPORTER=none);
   * 1: never. A struct_size without it reads as 0. */
  int32_t otlp_exporter_off;
  int32_t reserved1;
  /* Session lifetime (appended in 1.1; see dexagents(7), SESSION
   * LIFETIME). A session with no activity (no RPC that changes it, no
   * Step) for session_idle_timeout_ms is ended by the runtime's sweep, as
   * end_session with reason "idle_timeout" would; 0 never ends one.
   * Default 30 days (2592000000), as in Dex. */
  int64_t session_idle_timeout_ms;
  /* How long an ended (or completed, or failed) session stays readable;
   * then the sweep deletes every row of it, in bounded batches, and reads
   * say it is no longer retained (DEXA_E_NOT_FOUND). 0 keeps ended
   * sessions forever. Default 7 days (604800000). */
  int64_t session_retention_ms;
  /* How often worker threads (and dexa_runtime_run_ready, poll) run the
   * sweep; 0: only dexa_runtime_sweep runs it. Default 60000. */
  int64_t sweep_interval_ms;
} dexa_runtime_options;

DEXA_EXTERN int dexa_runtime_options_init(dexa_runtime_options *options, size_t struct_size);

/* Opens (creating when missing) the store and a runtime for agent. The agent
 * must outlive the runtime. On error *out is NULL and errmsg (if not NULL)
 * receives a message. Returns DEXA_OK, DEXA_E_INVALID_ARG,
 * DEXA_E_STRUCT_SIZE, DEXA_E_IO, DEXA_E_CORRUPT, DEXA_E_UNSUPPORTED or
 * DEXA_E_NOMEM. */
DEXA_EXTERN int dexa_runtime_new(dexa_runtime **out, const dexa_agent *agent,
                                 const dexa_runtime_options *options,
                                 char *errmsg, size_t errmsg_size);

/* Stops worker threads (as dexa_runtime_stop) and closes the store. NULL is
 * a no-op. In-flight Steps of this process are resumed by the next one.
 * Spans the exporter still holds are sent first, for at most
 * OTEL_BSP_EXPORT_TIMEOUT ms (default 30000). */
DEXA_EXTERN void dexa_runtime_free(dexa_runtime *runtime);

/* The last error message of this runtime ("" if none). Borrowed. */
DEXA_EXTERN const char *dexa_runtime_errmsg(const dexa_runtime *runtime);

/* ---- client operations ------------------------------------------------ */

/* Starts a session. session_id NULL lets the runtime choose one
 * ("s-<32 hex digits>"). settings_json: {"model":"mock/dex"} or NULL; an
 * unknown model name gets the default. *out receives
 * {"session_id":".."} (free with dexa_free); out may be NULL when
 * session_id is given. Returns DEXA_OK,
 * DEXA_E_ALREADY_EXISTS, DEXA_E_INVALID_JSON, DEXA_E_INVALID_ARG, DEXA_E_IO. */
DEXA_EXTERN int dexa_runtime_start_session(dexa_runtime *runtime, const char *session_id,
                                           const char *settings_json, size_t settings_len,
                                           char **out, size_t *out_len);

/* Runs the session RPC name with input (JSON) under the session's lock and
 * applies its effects atomically; *out receives the response document (or
 * an error document). RPCs: "send_message" {"text":..}, "snapshot" {},
 * and the others of dexagents(7). Returns DEXA_OK or the RPC's error code
 * (DEXA_E_NOT_FOUND for an unknown session or one no longer retained,
 * DEXA_E_SESSION_ENDED for a change to an ended session,
 * DEXA_E_UNKNOWN_RPC, ...). */
DEXA_EXTERN int dexa_runtime_call(dexa_runtime *runtime, const char *session_id, const char *rpc,
                                  const char *input_json, size_t input_len,
                                  char **out, size_t *out_len);

/* Lists sessions, newest first: {"sessions":[{"session_id":..,
 * "created_ms":..,"flow_type":..}],"next":".."}. after is the "next" of the
 * previous page or NULL; limit 1..1000. */
DEXA_EXTERN int dexa_runtime_list_sessions(dexa_runtime *runtime, const char *after, int32_t limit,
                                           char **out, size_t *out_len);

/* Reads AgentEvents after resume_token ("" or NULL: from the retained
 * head), at most max_events (1..1000), waiting up to timeout_ms for the
 * first one. *out: {"events":[{"token":..,"event":{..}}],"token":".."}
 * where "token" resumes after the last event returned. Live deltas of this
 * process are included (best effort). Returns DEXA_OK, DEXA_E_NOT_FOUND,
 * DEXA_E_INVALID_RESUME_TOKEN. */
DEXA_EXTERN int dexa_runtime_read_events(dexa_runtime *runtime, const char *session_id,
                                         const char *resume_token, int32_t max_events,
                                         int64_t timeout_ms, char **out, size_t *out_len);

/* Ends the session for good: the end_session RPC with {"reason":reason}
 * (reason NULL: "end_session"). Running Steps are cancelled (a running
 * model or tool call is told to end early), waits end, the session_ended
 * event is appended; every later RPC that would change the session gets
 * DEXA_E_SESSION_ENDED, while snapshot, list_agent_messages and
 * dexa_runtime_read_events answer until session_retention_ms has passed.
 * *out as for dexa_runtime_call: {"ended":true,"at":..,"reason":".."}.
 * Returns DEXA_OK, DEXA_E_NOT_FOUND, DEXA_E_SESSION_ENDED (ended already),
 * DEXA_E_INVALID_ARG, DEXA_E_IO. */
DEXA_EXTERN int dexa_runtime_end_session(dexa_runtime *runtime, const char *session_id,
                                         const char *reason, char **out, size_t *out_len);

/* Runs one bounded round of the lifetime sweep now, on the calling thread:
 * ends sessions idle past session_idle_timeout_ms, then deletes sessions
 * closed for longer than session_retention_ms, at most a few thousand rows
 * in transactions of a bounded size. *out (optional, free with dexa_free):
 * {"ended":n,"deleted_sessions":n,"deleted_rows":n,"more":bool}, "more"
 * true when work was left for the next round. Worker threads run it every
 * sweep_interval_ms by themselves. Returns DEXA_OK, DEXA_E_BUSY (another
 * thread is sweeping), DEXA_E_IO. */
DEXA_EXTERN int dexa_runtime_sweep(dexa_runtime *runtime, char **out, size_t *out_len);

/* ---- running Steps ---------------------------------------------------- */

/* Host-driven: claims one ready Step method, waiting up to timeout_ms.
 * *out is a task (or NULL when none became ready: returns DEXA_E_TIMEOUT).
 * Dispatch dexa_task_call(task) yourself, then hand the result to
 * dexa_runtime_complete. */
DEXA_EXTERN int dexa_runtime_poll(dexa_runtime *runtime, dexa_task **out, int64_t timeout_ms);

/* The call to dispatch for task; borrowed until the task is completed. Its
 * attribute reader reads the store. */
DEXA_EXTERN const dexa_call *dexa_task_call(const dexa_task *task);

/* Applies result (may be NULL after a crash-like failure) to the store in one
 * transaction and releases task; result stays the caller's. A failed result
 * schedules a retry or the recovery Step. Returns DEXA_OK, DEXA_E_TIMEOUT
 * (the lease was lost: the result was dropped), DEXA_E_IO. */
DEXA_EXTERN int dexa_runtime_complete(dexa_runtime *runtime, dexa_task *task,
                                      const dexa_result *result);

/* Gives a claimed task back without a result (it is retried after its lease
 * ends, as after a crash). NULL is a no-op. */
DEXA_EXTERN void dexa_task_abandon(dexa_runtime *runtime, dexa_task *task);

/* Runs ready Steps on the calling thread until none is ready now (timers in
 * the future are not waited for); *ran (optional) receives how many ran. */
DEXA_EXTERN int dexa_runtime_run_ready(dexa_runtime *runtime, int32_t *ran);

/* Starts threads worker threads (1..256) that poll, dispatch and complete
 * until dexa_runtime_stop. Returns DEXA_E_BAD_STATE when already started. */
DEXA_EXTERN int dexa_runtime_start(dexa_runtime *runtime, int32_t threads);

/* Stops the worker threads, letting each finish its current Step, then
 * asks the exporter to send the spans it holds (waiting at most
 * OTEL_BSP_EXPORT_TIMEOUT ms). */
DEXA_EXTERN int dexa_runtime_stop(dexa_runtime *runtime);

/* Blocks until the session has no Step ready or running (it waits for a
 * user message, an approval, an answer or a timer), or timeout_ms passes
 * (DEXA_E_TIMEOUT). For tests and terminal clients. */
DEXA_EXTERN int dexa_runtime_wait_idle(dexa_runtime *runtime, const char *session_id,
                                       int64_t timeout_ms);

DEXA_END_DECLS

#endif
