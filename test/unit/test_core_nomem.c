/* Allocation failures (nghttp2's failmalloc pattern): the tour of every
 * Step and RPC runs on the in-memory host, and every dispatch is repeated
 * with its 1st, 2nd, 3rd, ... allocation failing until a run makes no
 * more allocations. Each run must either fail with DEXA_E_NOMEM (its
 * result empty, so the host applies nothing and the state is unchanged)
 * or give exactly the result of the run without failures (a failure that
 * was handled). Never DEXA_OK with another result, never another error,
 * never a crash.
 *
 * The failures come from malloc, calloc and realloc defined in this
 * program: they interpose on the C library's for the whole process, so
 * cJSON (whose default hooks call malloc) fails too. The library itself
 * never sets cJSON hooks. The host's own code (attribute reads, the live
 * event sink, the tools) runs with failures paused. */
#include <cjson/cJSON.h>
#include <dexagents/dexagents.h>
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "support/memhost.h"
#include "support/tour.h"
#include "testing.h"

/* ---- the interposer ---- */

static void *(*real_malloc)(size_t);
static void *(*real_calloc)(size_t, size_t);
static void *(*real_realloc)(void *, size_t);
static void (*real_free)(void *);

/* dlsym may allocate before the real functions are known: a small arena. */
static _Alignas(16) char boot[1 << 16];
static size_t boot_used;

static long fail_at; /* the allocation of a run that fails (1-based); 0: none */
static long count;   /* allocations of the run so far */
static long failed;  /* failures injected in the run */
static int armed, paused;

static void resolve(void) {
  static int resolving;
  if (real_malloc || resolving) return;
  resolving = 1;
  real_malloc = (void *(*)(size_t))dlsym(RTLD_NEXT, "malloc");
  real_calloc = (void *(*)(size_t, size_t))dlsym(RTLD_NEXT, "calloc");
  real_realloc = (void *(*)(void *, size_t))dlsym(RTLD_NEXT, "realloc");
  real_free = (void (*)(void *))dlsym(RTLD_NEXT, "free");
  resolving = 0;
}

static void *boot_alloc(size_t n) {
  size_t at = (boot_used + 15) & ~(size_t)15;
  if (at + n > sizeof boot) return NULL;
  boot_used = at + n;
  return boot + at;
}

static int in_boot(const void *p) {
  return (const char *)p >= boot && (const char *)p < boot + sizeof boot;
}

static int fail_now(void) {
  if (!armed || paused) return 0;
  if (++count != fail_at) return 0;
  failed++;
  return 1;
}

void *malloc(size_t n) {
  resolve();
  if (!real_malloc) return boot_alloc(n);
  return fail_now() ? NULL : real_malloc(n);
}

void *calloc(size_t a, size_t b) {
  resolve();
  if (!real_calloc) return b && a > SIZE_MAX / b ? NULL : boot_alloc(a * b); /* boot is zeroed */
  return fail_now() ? NULL : real_calloc(a, b);
}

void *realloc(void *p, size_t n) {
  resolve();
  if (in_boot(p)) { /* never shrinks in place: copy out of the arena */
    void *q = real_malloc ? real_malloc(n) : boot_alloc(n);
    if (q) memcpy(q, p, n);
    return q;
  }
  if (!real_realloc) return boot_alloc(n);
  return fail_now() ? NULL : real_realloc(p, n);
}

void free(void *p) {
  if (!p || in_boot(p)) return;
  resolve();
  if (real_free) real_free(p);
}

/* ---- the host's callbacks, with failures paused ---- */

typedef struct wrap {
  const dexa_call *orig;
  dexa_attr_visit_fn visit;
  void *visit_ctx;
} wrap;

static int w_get(void *u, const char *k, size_t kl, const char **v, size_t *vl) {
  const wrap *w = u;
  paused++;
  int rc = w->orig->attr_get(w->orig->attr_user_data, k, kl, v, vl);
  paused--;
  return rc;
}

static int w_visit(void *ctx, const char *k, size_t kl, const char *v, size_t vl) {
  const wrap *w = ctx;
  paused--; /* the visitor is the library's */
  int rc = w->visit(w->visit_ctx, k, kl, v, vl);
  paused++;
  return rc;
}

static int w_scan(void *u, const char *p, size_t pl, dexa_attr_visit_fn visit, void *ctx) {
  wrap *w = u;
  wrap inner = {w->orig, visit, ctx};
  paused++;
  int rc = w->orig->attr_scan(w->orig->attr_user_data, p, pl, w_visit, &inner);
  paused--;
  return rc;
}

static void w_sink(void *u, const char *json, size_t len) {
  const wrap *w = u;
  paused++;
  if (w->orig->event_sink) w->orig->event_sink(w->orig->sink_user_data, json, len);
  paused--;
}

static void tool_hook(void *user, int entering) { paused += entering ? 1 : -1; }

/* ---- the check of every dispatch ---- */

typedef struct stats {
  long dispatches, runs, nomem, handled, bad;
  char first_bad[600];
} stats;

static char *result_text(const dexa_result *r) {
  char *j = NULL;
  dexa_result_json(&j, NULL, r);
  return j;
}

/* The same failure, its message lost to the failed allocation: the result
 * says the generic text of the code instead (dexa_strerror). */
static int same_but_message(const char *got, const char *want, int rc) {
  cJSON *g = cJSON_Parse(got), *w = cJSON_Parse(want);
  const char *msg = cJSON_GetStringValue(cJSON_GetObjectItem(g, "error"));
  int same = rc != DEXA_OK && msg && strcmp(msg, dexa_strerror(rc)) == 0;
  cJSON_DeleteItemFromObject(g, "error");
  cJSON_DeleteItemFromObject(w, "error");
  char *a = cJSON_PrintUnformatted(g), *b = cJSON_PrintUnformatted(w);
  same = same && a && b && strcmp(a, b) == 0;
  free(a);
  free(b);
  cJSON_Delete(g);
  cJSON_Delete(w);
  return same;
}

static void note_bad(stats *st, const dexa_call *call, long n, const char *what) {
  if (st->bad++ < 40)
    fprintf(stderr, "    %s %s (allocation %ld fails): %.400s\n",
            call->kind == DEXA_CALL_RPC ? "RPC" : "Step", call->name, n, what);
}

/* Runs the call with allocation n failing; 0 when it made fewer. */
static int run_failing(stats *st, const dexa_agent *agent, const dexa_call *call, long n,
                       const char *want, int want_rc) {
  wrap w = {call, NULL, NULL};
  dexa_call c = *call;
  c.attr_user_data = &w;
  c.attr_get = w_get;
  c.attr_scan = w_scan;
  c.sink_user_data = &w;
  c.event_sink = w_sink;
  dexa_result *r = NULL;
  count = 0, failed = 0, fail_at = n, armed = 1;
  int rc = dexa_dispatch(&r, agent, &c);
  armed = 0;
  int hit = failed > 0;
  st->runs += hit;
  char *got = result_text(r);
  if (!hit) {
  } else if (rc == DEXA_E_NOMEM && (!r || (dexa_result_status(r) == DEXA_E_NOMEM &&
                                            dexa_result_write_count(r) == 0 &&
                                            dexa_result_publish_count(r) == 0 &&
                                            dexa_result_event_count(r) == 0))) {
    st->nomem++;
  } else if (rc == want_rc && got && want &&
             (strcmp(got, want) == 0 || same_but_message(got, want, rc))) {
    st->handled++;
  } else {
    /* Where the result differs from the run without failures. */
    size_t i = 0;
    while (got && want && got[i] && got[i] == want[i]) i++;
    size_t from = i > 60 ? i - 60 : 0;
    char what[600];
    snprintf(what, sizeof what, "%s (expected %s); result differs at: %.160s | expected: %.160s",
             dexa_error_name(rc), dexa_error_name(want_rc), got ? got + from : "(none)",
             want ? want + from : "(none)");
    note_bad(st, call, n, what);
  }
  dexa_free(got);
  dexa_result_free(r);
  return hit;
}

static int checking_dispatch(void *user, dexa_result **out, const dexa_agent *agent,
                             const dexa_call *call) {
  stats *st = user;
  st->dispatches++;
  int rc = dexa_dispatch(out, agent, call); /* the reference run */
  char *want = result_text(*out);
  for (long n = 1; run_failing(st, agent, call, n, want, rc); n++) {
  }
  dexa_free(want);
  return rc;
}

static void test_every_allocation_failure_gives_nomem_and_changes_nothing(void) {
  dexa_agent *a = tour_agent(tool_hook, NULL);
  CHECK(a);
  memhost *h = memhost_new(a, "s-nomem");
  stats st;
  memset(&st, 0, sizeof st);
  memhost_set_dispatch(h, checking_dispatch, &st);
  int tour_failures = tour_run(h);
  int steps_run = 0;
  static const char *const steps[] = {
      "StartAgentSession", "AwaitUserMessage", "RunModel", "CompactContext", "AwaitToolApproval",
      "CallTool", "CallSingleAttemptTool", "RecordToolOutcome", "AwaitQuestionAnswer", "AwaitTimer",
      "ResumeTurn", "ApplyTurnControl", "RecordTurnFailure"};
  for (size_t i = 0; i < sizeof steps / sizeof *steps; i++) steps_run += memhost_dispatches(h, steps[i]) > 0;
  memhost_free(h);
  dexa_agent_free(a);
  printf("    %ld dispatches, %ld runs with a failed allocation: %ld DEXA_E_NOMEM, %ld handled, "
         "%ld wrong\n",
         st.dispatches, st.runs, st.nomem, st.handled, st.bad);
  CHECK_EQ_INT(tour_failures, 0);
  CHECK_EQ_INT(steps_run, 13); /* every Step (the tour calls every RPC) */
  CHECK(st.dispatches > 100);
  CHECK(st.runs > st.dispatches); /* the interposer did fail allocations */
  CHECK_EQ_INT(st.bad, 0);
}

int main(void) {
  RUN(test_every_allocation_failure_gives_nomem_and_changes_nothing);
  TEST_MAIN_END();
}
