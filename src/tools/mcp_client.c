/* One MCP connection per configured server, shared by every worker thread.
 *
 * Threads: c->mu guards the connection state and the table of requests in
 * flight; any number of requests run at once and each waits on c->cv for
 * the response with its id (stdio: the reader thread delivers it; HTTP: the
 * requesting thread's own POST does). Connecting is serialised by
 * c->connect_mu. A response that arrives after its request timed out, or
 * with an id nobody waits for, is dropped.
 *
 * Eras: "auto" detects the server's era once and keeps it: a
 * server/discover request first (2026-07-28, stateless: every request then
 * carries _meta with the protocol version and client capabilities); any
 * other answer means the legacy era (initialize handshake, offering
 * 2025-11-25 and accepting 2025-06-18 and 2025-03-26). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "dexagents/errors.h"
#include "util/json_num.h"
#include "dexagents/version.h"
#include "tools/mcp_internal.h"

#define LEGACY_LATEST "2025-11-25"
#define LEGACY_OLDER "2025-06-18"
#define LEGACY_OLDEST "2025-03-26"
#define MODERN "2026-07-28"
#define DISCOVER_TIMEOUT_MS 5000
#define RETRY_DOWN_AFTER_MS 1000 /* a failed connect is not retried sooner */

int64_t dexa__mcp_now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void deadline_timespec(int64_t deadline_ms, struct timespec *ts) {
  /* c->cv uses CLOCK_MONOTONIC (set in init). */
  ts->tv_sec = (time_t)(deadline_ms / 1000);
  ts->tv_nsec = (long)(deadline_ms % 1000) * 1000000L;
}

/* Writes one line to the stdio server of generation gen (any generation
 * when gen is 0). The read lock keeps the transport alive meanwhile;
 * disconnect takes the write lock before it stops the transport. Returns
 * DEXA_E_IO when there is no such transport; 1 (not an error) for HTTP. */
static int send_stdio(dexa__mcp_client *c, uint64_t gen, const char *text) {
  pthread_rwlock_rdlock(&c->transport_lock);
  pthread_mutex_lock(&c->mu);
  dexa__mcp_stdio *s = !gen || c->generation == gen ? c->stdio : NULL;
  int http = c->cfg.transport == DEXA__MCP_HTTP;
  pthread_mutex_unlock(&c->mu);
  int rc = http ? 1 : s ? dexa__mcp_stdio_send(s, text, strlen(text)) : DEXA_E_IO;
  pthread_rwlock_unlock(&c->transport_lock);
  return rc;
}

int dexa__mcp_client_init(dexa__mcp_client *c, const dexa__mcp_server_cfg *cfg) {
  memset(c, 0, sizeof *c);
  int rc = dexa__mcp_server_cfg_copy(&c->cfg, cfg);
  if (rc != DEXA_OK) return rc;
  pthread_mutex_init(&c->mu, NULL);
  pthread_mutex_init(&c->connect_mu, NULL);
  pthread_rwlock_init(&c->transport_lock, NULL);
  pthread_condattr_t ca;
  pthread_condattr_init(&ca);
  pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
  pthread_cond_init(&c->cv, &ca);
  pthread_condattr_destroy(&ca);
  c->next_id = 1;
  c->era = !cfg->protocol_version                       ? DEXA__MCP_ERA_AUTO
           : strcmp(cfg->protocol_version, MODERN) == 0 ? DEXA__MCP_ERA_MODERN
                                                        : DEXA__MCP_ERA_LEGACY;
  return DEXA_OK;
}

static int64_t cap_ms(const dexa__mcp_client *c) {
  return c->cfg.timeout_ms < DEXA__MCP_CONNECT_TIMEOUT_MS ? c->cfg.timeout_ms
                                                          : DEXA__MCP_CONNECT_TIMEOUT_MS;
}

/* Tears the connection down (the caller holds connect_mu or is closing). */
static void disconnect(dexa__mcp_client *c) {
  pthread_mutex_lock(&c->mu);
  c->connected = 0;
  c->generation++; /* late messages of the old transport are dropped */
  dexa__mcp_stdio *s = c->stdio;
  c->stdio = NULL;
  for (dexa__mcp_pending *p = c->pending; p; p = p->next)
    if (!p->done) p->done = 1, p->failed = DEXA_E_IO;
  pthread_cond_broadcast(&c->cv);
  pthread_mutex_unlock(&c->mu);
  /* Wait for writers still using the old transport, then stop it. */
  pthread_rwlock_wrlock(&c->transport_lock);
  pthread_rwlock_unlock(&c->transport_lock);
  dexa__mcp_stdio_stop(s);
  if (c->http) dexa__mcp_http_end_session(c->http);
}

void dexa__mcp_client_close(dexa__mcp_client *c) {
  pthread_mutex_lock(&c->connect_mu);
  c->closing = 1;
  disconnect(c);
  pthread_mutex_unlock(&c->connect_mu);
  dexa__mcp_http_free(c->http);
  c->http = NULL;
  cJSON_Delete(c->capabilities);
  free(c->instructions);
  dexa__mcp_server_cfg_free(&c->cfg);
  pthread_mutex_destroy(&c->mu);
  pthread_mutex_destroy(&c->connect_mu);
  pthread_cond_destroy(&c->cv);
  pthread_rwlock_destroy(&c->transport_lock);
}

/* ---- messages from the server ---- */

static dexa__mcp_pending *find_pending(dexa__mcp_client *c, const char *id) {
  for (dexa__mcp_pending *p = c->pending; p; p = p->next)
    if (strcmp(p->id, id) == 0) return p;
  return NULL;
}

static void answer_request(dexa__mcp_client *c, uint64_t gen, const dexa__rpc_msg *m) {
  cJSON *r = cJSON_CreateObject();
  cJSON_AddStringToObject(r, "jsonrpc", "2.0");
  cJSON_AddItemToObject(r, "id", cJSON_Duplicate(cJSON_GetObjectItemCaseSensitive(m->root, "id"), 1));
  if (strcmp(m->method, "ping") == 0) {
    cJSON_AddItemToObject(r, "result", cJSON_CreateObject());
  } else { /* we declare no client capabilities: sampling, roots, elicitation are unknown */
    cJSON *e = cJSON_AddObjectToObject(r, "error");
    cJSON_AddNumberToObject(e, "code", -32601);
    cJSON_AddStringToObject(e, "message", "Method not found");
  }
  char *text = cJSON_PrintUnformatted(r);
  cJSON_Delete(r);
  if (!text) return;
  /* stdio: this runs on the reader thread while the transport is alive.
   * HTTP: POSTed from the thread whose stream carried the request. */
  if (send_stdio(c, gen, text) == 1 && c->http) {
    char err[64];
    dexa__mcp_http_post(c->http, gen, text, "", NULL, NULL, dexa__mcp_now_ms() + cap_ms(c), err,
                        sizeof err);
  }
  cJSON_free(text);
}

static void on_notification(dexa__mcp_client *c, const dexa__rpc_msg *m) {
  if (strcmp(m->method, "notifications/tools/list_changed") == 0) {
    c->tools_dirty = 1;
  } else if (strcmp(m->method, "notifications/progress") == 0) {
    /* Progress keeps a call alive: its deadline moves on (capped at 4x its
     * timeout from the start). Progress for a request no longer in flight
     * (cancelled, timed out) is dropped. */
    char tok[64];
    if (dexa__rpc_id_text(cJSON_GetObjectItemCaseSensitive(m->params, "progressToken"), tok,
                          sizeof tok) != 0)
      return;
    for (dexa__mcp_pending *p = c->pending; p; p = p->next)
      if (!p->done && strcmp(p->progress_token, tok) == 0) {
        p->progress_count++;
        int64_t next = dexa__mcp_now_ms() + c->cfg.timeout_ms;
        if (next > p->deadline_ms) p->deadline_ms = next;
      }
  }
  /* Logging, resource updates, cancellations: nothing to do. */
}

void dexa__mcp_client_on_message(dexa__mcp_client *c, uint64_t generation, const char *text,
                                 size_t len) {
  dexa__rpc_msg m;
  if (dexa__rpc_parse(text, len, &m) != 0) return; /* garbage on the wire: ignored */
  if (m.kind == DEXA__RPC_REQUEST) {
    answer_request(c, generation, &m);
    dexa__rpc_msg_free(&m);
    return;
  }
  pthread_mutex_lock(&c->mu);
  if (generation != c->generation) {
    pthread_mutex_unlock(&c->mu);
    dexa__rpc_msg_free(&m);
    return;
  }
  if (m.kind == DEXA__RPC_NOTIFICATION) {
    on_notification(c, &m);
  } else {
    dexa__mcp_pending *p = m.id[0] ? find_pending(c, m.id) : NULL;
    if (p && !p->done) { /* unknown or late ids are dropped */
      p->response = m.root;
      m.root = NULL;
      p->done = 1;
      pthread_cond_broadcast(&c->cv);
    }
  }
  pthread_mutex_unlock(&c->mu);
  dexa__rpc_msg_free(&m);
}

void dexa__mcp_client_on_broken(dexa__mcp_client *c, uint64_t generation, int code,
                                const char *why) {
  pthread_mutex_lock(&c->mu);
  if (generation == c->generation) {
    c->connected = 0;
    snprintf(c->last_error, sizeof c->last_error, "%s", why);
    for (dexa__mcp_pending *p = c->pending; p; p = p->next)
      if (!p->done) p->done = 1, p->failed = code;
    pthread_cond_broadcast(&c->cv);
  }
  pthread_mutex_unlock(&c->mu);
}

/* ---- requests ---- */

char *dexa__mcp_build_request(dexa__mcp_client *c, const char *id, const char *method,
                              cJSON *params) {
  cJSON *r = cJSON_CreateObject();
  cJSON_AddStringToObject(r, "jsonrpc", "2.0");
  if (id) cJSON_AddNumberToObject(r, "id", (double)strtoll(id, NULL, 10));
  cJSON_AddStringToObject(r, "method", method);
  if (c->era == DEXA__MCP_ERA_MODERN && id) {
    /* 2026-07-28: every request says who we are and what we speak. */
    if (!params) params = cJSON_CreateObject();
    cJSON *meta = cJSON_GetObjectItemCaseSensitive(params, "_meta");
    if (!meta) meta = cJSON_AddObjectToObject(params, "_meta");
    cJSON_AddStringToObject(meta, "io.modelcontextprotocol/protocolVersion", MODERN);
    cJSON_AddItemToObject(meta, "io.modelcontextprotocol/clientCapabilities", cJSON_CreateObject());
    cJSON *info = cJSON_AddObjectToObject(meta, "io.modelcontextprotocol/clientInfo");
    cJSON_AddStringToObject(info, "name", "libdexagents");
    cJSON_AddStringToObject(info, "version", DEXA_VERSION_STRING);
  }
  if (params) cJSON_AddItemToObject(r, "params", params);
  char *text = cJSON_PrintUnformatted(r);
  cJSON_Delete(r);
  return text;
}

static void unlink_pending(dexa__mcp_client *c, dexa__mcp_pending *p) {
  for (dexa__mcp_pending **pp = &c->pending; *pp; pp = &(*pp)->next)
    if (*pp == p) {
      *pp = p->next;
      break;
    }
}

static void send_cancel(dexa__mcp_client *c, uint64_t gen, const char *id, const char *reason) {
  cJSON *params = cJSON_CreateObject();
  cJSON_AddNumberToObject(params, "requestId", (double)strtoll(id, NULL, 10));
  cJSON_AddStringToObject(params, "reason", reason);
  char *text = dexa__mcp_build_request(c, NULL, "notifications/cancelled", params);
  if (!text) return;
  if (send_stdio(c, gen, text) == 1 && c->http && c->era != DEXA__MCP_ERA_MODERN) { /* modern HTTP: closing the stream cancels */
    char err[64];
    dexa__mcp_http_post(c->http, gen, text, "", "notifications/cancelled", NULL,
                        dexa__mcp_now_ms() + 2000, err, sizeof err);
  }
  cJSON_free(text);
}

/* Fills err from a JSON-RPC error response. */
static int rpc_error(const cJSON *resp, int64_t *code_out, char *err, size_t err_size) {
  const cJSON *e = cJSON_GetObjectItemCaseSensitive(resp, "error");
  const cJSON *code = cJSON_GetObjectItemCaseSensitive(e, "code");
  const char *msg = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(e, "message"));
  int64_t cd = 0;
  (void)dexa__json_exact_int(code, &cd);
  if (code_out) *code_out = cd;
  snprintf(err, err_size, "MCP error %lld: %.400s", (long long)cd, msg ? msg : "");
  return DEXA_E_TOOL;
}

/* The caller's stop check, outside c->mu: it is the host's code. */
static int stop_asked(const dexa__mcp_cancel *cancel) {
  return cancel && cancel->stop && cancel->stop(cancel->user);
}

int dexa__mcp_request_stop_asked(dexa__mcp_client *c, const char *id) {
  dexa__mcp_cancel cancel = {NULL, NULL};
  pthread_mutex_lock(&c->mu);
  for (dexa__mcp_pending *p = c->pending; p; p = p->next)
    if (strcmp(p->id, id) == 0) cancel = p->cancel;
  pthread_mutex_unlock(&c->mu);
  return stop_asked(&cancel);
}

static int request_on(dexa__mcp_client *c, uint64_t gen, const char *method, cJSON *params,
                      int64_t timeout_ms, const dexa__mcp_cancel *cancel, cJSON **result,
                      int64_t *rpc_code, char *err, size_t err_size) {
  dexa__mcp_pending p;
  memset(&p, 0, sizeof p);
  if (cancel) p.cancel = *cancel;
  pthread_mutex_lock(&c->mu);
  if (gen != c->generation) {
    pthread_mutex_unlock(&c->mu);
    cJSON_Delete(params);
    snprintf(err, err_size, "the connection was reset");
    return DEXA_E_IO;
  }
  snprintf(p.id, sizeof p.id, "%lld", (long long)c->next_id++);
  p.deadline_ms = dexa__mcp_now_ms() + timeout_ms;
  int64_t hard_deadline = p.deadline_ms + 3 * timeout_ms;
  if (strcmp(method, "tools/call") == 0) { /* progress extends the deadline */
    snprintf(p.progress_token, sizeof p.progress_token, "%s", p.id);
    if (!params) params = cJSON_CreateObject();
    cJSON *meta = cJSON_GetObjectItemCaseSensitive(params, "_meta");
    if (!meta) meta = cJSON_AddObjectToObject(params, "_meta");
    cJSON_AddNumberToObject(meta, "progressToken", (double)strtoll(p.id, NULL, 10));
  }
  p.next = c->pending;
  c->pending = &p;
  pthread_mutex_unlock(&c->mu);

  /* Mcp-Name (2026-07-28): the tool or prompt name, or the resource URI. */
  const char *nm = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(params, "name"));
  if (!nm) nm = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(params, "uri"));
  char *name = nm ? strdup(nm) : NULL;
  char *text = dexa__mcp_build_request(c, p.id, method, params); /* consumes params */
  int rc = text && (name || !nm) ? DEXA_OK : DEXA_E_NOMEM;
  if (rc == DEXA_OK && strlen(text) > DEXA__MCP_MAX_MESSAGE) {
    snprintf(err, err_size, "the request is over the message size limit");
    rc = DEXA_E_TOO_LARGE;
  }
  if (rc == DEXA_OK && c->cfg.transport == DEXA__MCP_STDIO) {
    rc = send_stdio(c, gen, text);
    if (rc != DEXA_OK) snprintf(err, err_size, "the server is not running (write failed)");
  } else if (rc == DEXA_OK && c->http) {
    rc = dexa__mcp_http_post(c->http, gen, text, p.id, method, name,
                             p.deadline_ms < hard_deadline ? hard_deadline : p.deadline_ms, err,
                             err_size);
  }
  cJSON_free(text);
  free(name);

  int stopped = rc == DEXA__MCP_E_STOPPED; /* the HTTP transport saw it */
  pthread_mutex_lock(&c->mu);
  while (rc == DEXA_OK && !p.done) {
    int64_t now = dexa__mcp_now_ms();
    int64_t until = p.deadline_ms < hard_deadline ? p.deadline_ms : hard_deadline;
    if (now >= until) break;
    if (p.cancel.stop) { /* wake up now and then to ask */
      pthread_mutex_unlock(&c->mu);
      stopped = stop_asked(&p.cancel);
      pthread_mutex_lock(&c->mu);
      if (stopped) break;
      if (until > now + DEXA__MCP_STOP_POLL_MS) until = now + DEXA__MCP_STOP_POLL_MS;
    }
    struct timespec ts;
    deadline_timespec(until, &ts);
    pthread_cond_timedwait(&c->cv, &c->mu, &ts);
  }
  unlink_pending(c, &p);
  pthread_mutex_unlock(&c->mu);

  if (stopped && !p.done) {
    snprintf(err, err_size, "the turn was stopped, so %s was cancelled", method);
    rc = DEXA__MCP_E_STOPPED;
    send_cancel(c, gen, p.id, "the user stopped the turn");
  } else if ((rc == DEXA_OK || rc == DEXA_E_TIMEOUT) && !p.done) {
    snprintf(err, err_size, "no response to %s within %lld ms (cancelled)", method,
             (long long)timeout_ms);
    rc = DEXA_E_TIMEOUT;
    if (strcmp(method, "initialize") != 0) send_cancel(c, gen, p.id, "timeout");
  } else if (rc == DEXA_OK && p.failed) {
    rc = p.failed;
    pthread_mutex_lock(&c->mu);
    snprintf(err, err_size, "%s", c->last_error[0] ? c->last_error : "the connection failed");
    pthread_mutex_unlock(&c->mu);
  } else if (rc == DEXA_OK) {
    const cJSON *res = cJSON_GetObjectItemCaseSensitive(p.response, "result");
    if (res) {
      *result = cJSON_DetachItemViaPointer(p.response, (cJSON *)res);
    } else {
      rc = rpc_error(p.response, rpc_code, err, err_size);
    }
  }
  cJSON_Delete(p.response);
  return rc;
}

static int http_session_gone(int rc) { return rc == DEXA_E_NOT_FOUND; }

int dexa__mcp_notify(dexa__mcp_client *c, const char *method, cJSON *params) {
  char *text = dexa__mcp_build_request(c, NULL, method, params);
  if (!text) return DEXA_E_NOMEM;
  pthread_mutex_lock(&c->mu);
  uint64_t gen = c->generation;
  pthread_mutex_unlock(&c->mu);
  char err[64];
  int rc = send_stdio(c, gen, text);
  if (rc == 1 && c->http)
    rc = dexa__mcp_http_post(c->http, gen, text, "", method, NULL, dexa__mcp_now_ms() + cap_ms(c),
                             err, sizeof err);
  if (rc == 1) rc = DEXA_E_IO;
  cJSON_free(text);
  return rc;
}

/* ---- connecting ---- */

static int start_transport(dexa__mcp_client *c, char *err, size_t err_size) {
  pthread_mutex_lock(&c->mu);
  c->generation++;
  uint64_t gen = c->generation;
  pthread_mutex_unlock(&c->mu);
  if (c->cfg.transport == DEXA__MCP_HTTP) {
    if (!c->http) return dexa__mcp_http_new(&c->http, c);
    dexa__mcp_http_reset_session(c->http);
    return DEXA_OK;
  }
  dexa__mcp_stdio *s = NULL;
  int rc = dexa__mcp_stdio_start(&s, c, gen, err, err_size);
  if (rc != DEXA_OK) return rc;
  pthread_mutex_lock(&c->mu);
  c->stdio = s;
  pthread_mutex_unlock(&c->mu);
  return DEXA_OK;
}

static uint64_t current_gen(dexa__mcp_client *c) {
  pthread_mutex_lock(&c->mu);
  uint64_t g = c->generation;
  pthread_mutex_unlock(&c->mu);
  return g;
}

static void keep_server_info(dexa__mcp_client *c, cJSON *result) {
  cJSON_Delete(c->capabilities);
  c->capabilities = cJSON_DetachItemFromObjectCaseSensitive(result, "capabilities");
  if (!cJSON_IsObject(c->capabilities)) {
    cJSON_Delete(c->capabilities);
    c->capabilities = cJSON_CreateObject();
  }
  const char *ins = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(result, "instructions"));
  free(c->instructions);
  c->instructions = ins ? strdup(ins) : NULL;
}

/* 2026-07-28: server/discover. 1 when the server speaks it. */
static int discover(dexa__mcp_client *c, int64_t timeout_ms, char *err, size_t err_size, int *rc_out) {
  int era = c->era;
  c->era = DEXA__MCP_ERA_MODERN; /* so the request carries the modern _meta */
  cJSON *res = NULL;
  int64_t code = 0;
  int rc = request_on(c, current_gen(c), "server/discover", NULL, timeout_ms, NULL, &res, &code,
                      err, err_size);
  c->era = era;
  *rc_out = rc;
  int modern = 0;
  if (rc == DEXA_OK) {
    const cJSON *v;
    cJSON_ArrayForEach(v, cJSON_GetObjectItemCaseSensitive(res, "supportedVersions")) {
      if (cJSON_IsString(v) && strcmp(v->valuestring, MODERN) == 0) modern = 1;
    }
    if (modern) {
      keep_server_info(c, res);
      snprintf(c->version, sizeof c->version, MODERN);
    }
  }
  cJSON_Delete(res);
  return modern;
}

static int initialize(dexa__mcp_client *c, int64_t timeout_ms, char *err, size_t err_size) {
  cJSON *params = cJSON_CreateObject();
  const char *offer = c->cfg.protocol_version && strcmp(c->cfg.protocol_version, MODERN) != 0
                          ? c->cfg.protocol_version
                          : LEGACY_LATEST;
  cJSON_AddStringToObject(params, "protocolVersion", offer);
  cJSON_AddItemToObject(params, "capabilities", cJSON_CreateObject());
  cJSON *info = cJSON_AddObjectToObject(params, "clientInfo");
  cJSON_AddStringToObject(info, "name", "libdexagents");
  cJSON_AddStringToObject(info, "version", DEXA_VERSION_STRING);
  cJSON *res = NULL;
  int rc = request_on(c, current_gen(c), "initialize", params, timeout_ms, NULL, &res, NULL, err,
                      err_size);
  if (rc != DEXA_OK) return rc;
  const char *v = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(res, "protocolVersion"));
  /* 2025-03-26 differs for a client only in batching, which we never send. */
  if (!v || (strcmp(v, LEGACY_LATEST) != 0 && strcmp(v, LEGACY_OLDER) != 0 &&
             strcmp(v, LEGACY_OLDEST) != 0)) {
    snprintf(err, err_size, "the server answered protocol version %.40s; we speak %s, %s and %s",
             v ? v : "(none)", LEGACY_LATEST, LEGACY_OLDER, LEGACY_OLDEST);
    cJSON_Delete(res);
    return DEXA_E_UNSUPPORTED;
  }
  snprintf(c->version, sizeof c->version, "%s", v);
  keep_server_info(c, res);
  cJSON_Delete(res);
  return dexa__mcp_notify(c, "notifications/initialized", NULL);
}

static int connect_once(dexa__mcp_client *c, char *err, size_t err_size) {
  int rc = start_transport(c, err, err_size);
  if (rc != DEXA_OK) return rc;
  int64_t t = cap_ms(c);
  if (c->era != DEXA__MCP_ERA_LEGACY) {
    int drc;
    int modern = discover(c, c->era == DEXA__MCP_ERA_MODERN ? t : (t < DISCOVER_TIMEOUT_MS ? t : DISCOVER_TIMEOUT_MS),
                          err, err_size, &drc);
    if (modern) {
      c->era = DEXA__MCP_ERA_MODERN;
      return DEXA_OK;
    }
    if (c->era == DEXA__MCP_ERA_MODERN) {
      if (drc == DEXA_OK) snprintf(err, err_size, "the server does not support %s", MODERN);
      return drc == DEXA_OK ? DEXA_E_UNSUPPORTED : drc;
    }
    if (drc == DEXA_E_IO || drc == DEXA_E_TOO_LARGE) return drc; /* it died: no fallback */
    /* A legacy server: some close an HTTP session or the process after an
     * unknown first request, so start afresh before initialize. */
    if (c->cfg.transport == DEXA__MCP_STDIO && (drc == DEXA_E_TIMEOUT)) {
      disconnect(c);
      if ((rc = start_transport(c, err, err_size)) != DEXA_OK) return rc;
    }
  }
  rc = initialize(c, t, err, err_size);
  if (rc == DEXA_OK) c->era = DEXA__MCP_ERA_LEGACY;
  return rc;
}

int dexa__mcp_client_ensure(dexa__mcp_client *c, char *err, size_t err_size) {
  pthread_mutex_lock(&c->connect_mu);
  pthread_mutex_lock(&c->mu);
  int ok = c->connected && (!c->stdio || dexa__mcp_stdio_alive(c->stdio));
  int64_t since_fail = dexa__mcp_now_ms() - c->last_fail_ms;
  pthread_mutex_unlock(&c->mu);
  int rc = DEXA_OK;
  if (ok || c->closing) {
    rc = c->closing ? DEXA_E_BAD_STATE : DEXA_OK;
  } else if (c->last_fail_ms && since_fail < RETRY_DOWN_AFTER_MS) {
    /* Several threads listing a down server at once: one attempt. */
    pthread_mutex_lock(&c->mu);
    snprintf(err, err_size, "%s", c->last_error);
    pthread_mutex_unlock(&c->mu);
    rc = DEXA_E_IO;
  } else {
    disconnect(c);
    rc = connect_once(c, err, err_size);
    if (rc != DEXA_OK && c->stdio) {
      char tail[300];
      dexa__mcp_stdio_stderr_tail(c->stdio, tail, sizeof tail);
      if (tail[0]) {
        size_t n = strlen(err);
        snprintf(err + n, err_size - n, " (stderr: %s)", tail);
      }
    }
    pthread_mutex_lock(&c->mu);
    if (rc == DEXA_OK) {
      c->connected = 1;
      c->last_fail_ms = 0;
      c->tools_dirty = 1;
      c->last_error[0] = '\0';
    } else {
      c->last_fail_ms = dexa__mcp_now_ms();
      snprintf(c->last_error, sizeof c->last_error, "%s", err);
    }
    pthread_mutex_unlock(&c->mu);
    if (rc != DEXA_OK) disconnect(c);
  }
  pthread_mutex_unlock(&c->connect_mu);
  return rc;
}

int dexa__mcp_request(dexa__mcp_client *c, const char *method, cJSON *params, int64_t timeout_ms,
                      cJSON **result, int64_t *rpc_code, char *err, size_t err_size) {
  return dexa__mcp_request_cancellable(c, method, params, timeout_ms, NULL, result, rpc_code, err,
                                       err_size);
}

int dexa__mcp_request_cancellable(dexa__mcp_client *c, const char *method, cJSON *params,
                                  int64_t timeout_ms, const dexa__mcp_cancel *cancel,
                                  cJSON **result, int64_t *rpc_code, char *err, size_t err_size) {
  *result = NULL;
  if (timeout_ms <= 0) timeout_ms = c->cfg.timeout_ms;
  int http = c->cfg.transport == DEXA__MCP_HTTP;
  cJSON *copy = http && params ? cJSON_Duplicate(params, 1) : NULL;
  int rc = request_on(c, current_gen(c), method, params, timeout_ms, cancel, result, rpc_code, err,
                      err_size);
  if (http_session_gone(rc)) {
    /* The HTTP session expired: re-initialize once and send it again. */
    pthread_mutex_lock(&c->mu);
    c->connected = 0;
    pthread_mutex_unlock(&c->mu);
    rc = dexa__mcp_client_ensure(c, err, err_size);
    if (rc == DEXA_OK) {
      rc = request_on(c, current_gen(c), method, copy, timeout_ms, cancel, result, rpc_code, err,
                      err_size);
      copy = NULL;
    }
  }
  if (rc == DEXA_E_NOT_FOUND) rc = DEXA_E_IO;
  cJSON_Delete(copy);
  return rc;
}
