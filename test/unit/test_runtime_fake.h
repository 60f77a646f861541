/* A fake flow for runtime tests: a flow description, a dispatch function
 * that records every call and delegates to the test's handler, a clock the
 * test moves, and RPCs every test can use:
 *   "get" {"key":K}        -> the attribute's value (or null)
 *   "put" {"key":K,"value":V} writes it
 *   "pub" {"channel":C,"value":V} publishes
 *   "fail" writes then fails (nothing may change)
 *   "snapshot" {}         -> {"ok":true} (the runtime adds resume_token)
 *   "decide" {"decision":D} returns decision D
 *   "peek" (read only)    -> like get */
#ifndef TEST_RUNTIME_FAKE_H
#define TEST_RUNTIME_FAKE_H

#pragma GCC diagnostic ignored "-Wunused-function"

#include <cjson/cJSON.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "dexagents/dexagents.h"
#include "flow/result.h"
#include "runtime/runtime_internal.h"
#include "support/temp_store.h"

typedef struct fake fake;
typedef int (*fake_handler)(fake *f, const dexa_call *call, dexa_result *r);

struct fake {
  fake_handler handler;
  int64_t now;
  pthread_mutex_t mu;
  char log[65536]; /* "kind name exec attempt|" per call */
  char last_conditions[4096];
  char last_recovery[1024];
  char last_input[1024];
  int calls;
  void *user;
};

static int64_t fake_clock(void *u) {
  fake *f = u;
  pthread_mutex_lock(&f->mu);
  int64_t now = f->now;
  pthread_mutex_unlock(&f->mu);
  return now;
}

static void fake_set_now(fake *f, int64_t now) {
  pthread_mutex_lock(&f->mu);
  f->now = now;
  pthread_mutex_unlock(&f->mu);
}

static const char *kind_name(int k) {
  return k == DEXA_CALL_WAIT_FOR ? "W" : k == DEXA_CALL_EXECUTE ? "E" : "R";
}

static void fake_record(fake *f, const dexa_call *c) {
  char line[256];
  snprintf(line, sizeof line, "%s %s %s %d|", kind_name(c->kind), c->name,
           c->step_execution_id ? c->step_execution_id : "-", (int)c->attempt);
  pthread_mutex_lock(&f->mu);
  if (strlen(f->log) + strlen(line) < sizeof f->log) strcat(f->log, line);
  if (c->kind == DEXA_CALL_EXECUTE && c->conditions)
    snprintf(f->last_conditions, sizeof f->last_conditions, "%.*s", (int)c->conditions_len,
             c->conditions);
  if (c->recovery_error)
    snprintf(f->last_recovery, sizeof f->last_recovery, "%.*s", (int)c->recovery_error_len,
             c->recovery_error);
  if (c->kind != DEXA_CALL_RPC && c->input)
    snprintf(f->last_input, sizeof f->last_input, "%.*s", (int)c->input_len, c->input);
  f->calls++;
  pthread_mutex_unlock(&f->mu);
}

/* Counts log entries that start with prefix ("E Work ") */
static int fake_count(fake *f, const char *prefix) {
  int n = 0;
  pthread_mutex_lock(&f->mu);
  for (const char *p = f->log; (p = strstr(p, prefix)); p++)
    if (p == f->log || p[-1] == '|') n++;
  pthread_mutex_unlock(&f->mu);
  return n;
}

/* A member of the call's input as a cJSON tree (caller deletes). */
static cJSON *fake_input(const dexa_call *c) {
  return c->input ? cJSON_ParseWithLength(c->input, c->input_len) : NULL;
}

static const char *fake_str(cJSON *o, const char *k) {
  cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
  return cJSON_IsString(v) ? v->valuestring : NULL;
}

static int fake_common_rpc(fake *f, const dexa_call *c, dexa_result *r) {
  cJSON *in = fake_input(c);
  int rc = DEXA_OK;
  const char *key = fake_str(in, "key");
  if (strcmp(c->name, "get") == 0 || strcmp(c->name, "peek") == 0) {
    const char *v;
    size_t n;
    if (key && c->attr_get(c->attr_user_data, key, strlen(key), &v, &n) == DEXA_OK) {
      char *doc = malloc(n + 16);
      snprintf(doc, n + 16, "{\"value\":%.*s}", (int)n, v);
      dexa__result_set_response(r, doc, strlen(doc));
      free(doc);
    } else {
      dexa__result_set_response(r, "{\"value\":null}", 14);
    }
  } else if (strcmp(c->name, "put") == 0 || strcmp(c->name, "fail") == 0) {
    char *v = cJSON_PrintUnformatted(cJSON_GetObjectItemCaseSensitive(in, "value"));
    dexa__result_add_write(r, key, strlen(key), v, strlen(v));
    dexa__result_add_publish(r, "C", 1, "1", 1);
    dexa__result_add_event(r, "{\"type\":\"put\"}", 14);
    free(v);
    if (strcmp(c->name, "fail") == 0) rc = dexa__result_fail(r, DEXA_E_BAD_STATE, "refused");
  } else if (strcmp(c->name, "pub") == 0) {
    const char *ch = fake_str(in, "channel");
    char *v = cJSON_PrintUnformatted(cJSON_GetObjectItemCaseSensitive(in, "value"));
    dexa__result_add_publish(r, ch, strlen(ch), v, strlen(v));
    free(v);
  } else if (strcmp(c->name, "snapshot") == 0) {
    dexa__result_set_response(r, "{\"ok\":true}", 11);
  } else if (strcmp(c->name, "decide") == 0) {
    char *d = cJSON_PrintUnformatted(cJSON_GetObjectItemCaseSensitive(in, "decision"));
    dexa__result_set_decision(r, d, strlen(d));
    free(d);
  } else {
    rc = dexa__result_fail(r, DEXA_E_UNKNOWN_RPC, "unknown rpc");
  }
  cJSON_Delete(in);
  return rc;
}

static int fake_dispatch(void *user, dexa_result **out, const dexa_call *call) {
  fake *f = user;
  dexa_result *r = dexa__result_new();
  *out = r;
  if (!r) return DEXA_E_NOMEM;
  fake_record(f, call);
  int rc = call->kind == DEXA_CALL_RPC && strcmp(call->name, "custom") != 0
               ? fake_common_rpc(f, call, r)
               : f->handler(f, call, r);
  if (rc != DEXA_OK && dexa_result_status(r) == DEXA_OK) dexa__result_fail(r, rc, "fake failure");
  return dexa_result_status(r);
}

/* Helpers for handlers. */
static void put_decision(dexa_result *r, const char *json) {
  dexa__result_set_decision(r, json, strlen(json));
}
static void put_wait(dexa_result *r, const char *json) { dexa__result_set_wait(r, json, strlen(json)); }
static void put_write(dexa_result *r, const char *k, const char *v) {
  dexa__result_add_write(r, k, strlen(k), v, v ? strlen(v) : 0);
}
static void put_publish(dexa_result *r, const char *ch, const char *v) {
  dexa__result_add_publish(r, ch, strlen(ch), v, strlen(v));
}
static void put_event(dexa_result *r, const char *json) {
  dexa__result_add_event(r, json, strlen(json));
}
static int is(const dexa_call *c, int kind, const char *name) {
  return c->kind == kind && strcmp(c->name, name) == 0;
}

#define FAKE_RPCS                                                                          \
  "\"rpcs\":[{\"name\":\"get\"},{\"name\":\"peek\",\"read_only\":true},{\"name\":\"put\"},"  \
  "{\"name\":\"fail\"},{\"name\":\"pub\"},{\"name\":\"snapshot\"},{\"name\":\"decide\"},"    \
  "{\"name\":\"custom\"}]"

static void fake_init(fake *f, fake_handler h) {
  memset(f, 0, sizeof *f);
  pthread_mutex_init(&f->mu, NULL);
  f->handler = h;
  f->now = 1000000;
}

static int fake_open(dexa_runtime **rt, fake *f, const char *desc, const char *store,
                     int64_t lease_ms, int64_t retained) {
  dexa_runtime_options o;
  dexa_runtime_options_init(&o, sizeof o);
  o.store = store;
  o.sqlite_synchronous = "normal";
  o.lease_ms = lease_ms;
  o.worker_id = "test-worker";
  o.clock = fake_clock;
  o.clock_user_data = f;
  o.events_retained = retained;
  char err[256];
  int rc = dexa__runtime_new_with_dispatch(rt, desc, fake_dispatch, f, &o, err, sizeof err);
  if (rc) fprintf(stderr, "    runtime_new: %d %s\n", rc, err);
  return rc;
}

/* RPC "get": returns a malloc'd response string. */
static char *fake_get(dexa_runtime *rt, const char *sid, const char *key) {
  char in[512], *out = NULL;
  size_t n;
  snprintf(in, sizeof in, "{\"key\":\"%s\"}", key);
  dexa_runtime_call(rt, sid, "get", in, strlen(in), &out, &n);
  return out;
}

static int fake_pub(dexa_runtime *rt, const char *sid, const char *ch, const char *value) {
  char in[512], *out = NULL;
  size_t n;
  snprintf(in, sizeof in, "{\"channel\":\"%s\",\"value\":%s}", ch, value);
  int rc = dexa_runtime_call(rt, sid, "pub", in, strlen(in), &out, &n);
  dexa_free(out);
  return rc;
}

static int fake_start(dexa_runtime *rt, const char *sid) {
  char *out = NULL;
  size_t n;
  int rc = dexa_runtime_start_session(rt, sid, NULL, 0, &out, &n);
  dexa_free(out);
  return rc;
}

static int run_ready(dexa_runtime *rt) {
  int32_t ran = 0;
  int rc = dexa_runtime_run_ready(rt, &ran);
  return rc ? -1000 + rc : ran;
}

static void temp_db(char *buf, size_t n, const char *name) { temp_store_path(buf, n, name); }

#endif
