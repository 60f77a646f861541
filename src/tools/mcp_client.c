/* One MCP connection per configured server, shared by every worker thread.
 *
 * The server's own requests: ping and roots/list are answered at once;
 * elicitation/create and sampling/createMessage belong to a tool call (the
 * tools/call whose HTTP response stream carried them; over stdio, the one
 * tools/call in flight) and are queued for the thread that waits for that
 * call (mcp_calls.c), which may have to ask the person; anything else gets
 * -32601. Log messages (notifications/message) go to the host's log.
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
#include <strings.h>
#include <time.h>

#include "dexagents/errors.h"
#include "util/json_num.h"
#include "dexagents/version.h"
#include "tools/mcp_internal.h"
#include "tools/mcp_oauth.h"

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

/* 1 when the configuration sets the Authorization header itself. */
static int own_authorization(const dexa__mcp_server_cfg *cfg) {
  for (size_t i = 0; i < cfg->headerc; i++)
    if (strcasecmp(cfg->headers[i].key, "Authorization") == 0) return 1;
  return 0;
}

int dexa__mcp_client_init(dexa__mcp_client *c, const dexa__mcp_server_cfg *cfg,
                          dexa__mcp_host *host) {
  memset(c, 0, sizeof *c);
  int rc = dexa__mcp_server_cfg_copy(&c->cfg, cfg);
  if (rc != DEXA_OK) return rc;
  if (cfg->transport == DEXA__MCP_HTTP && !own_authorization(cfg)) {
    rc = dexa__mcp_oauth_new(&c->oauth);
    if (rc != DEXA_OK) {
      dexa__mcp_server_cfg_free(&c->cfg);
      return rc;
    }
  }
  c->host = dexa__mcp_host_ref(host);
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
  /* Runner threads of tool calls end once their requests failed. */
  pthread_mutex_lock(&c->mu);
  while (c->runners > 0) {
    for (dexa__mcp_pending *p = c->pending; p; p = p->next)
      if (!p->done) p->done = 1, p->failed = DEXA_E_IO;
    pthread_cond_broadcast(&c->cv);
    struct timespec ts;
    deadline_timespec(dexa__mcp_now_ms() + 100, &ts);
    pthread_cond_timedwait(&c->cv, &c->mu, &ts);
  }
  pthread_mutex_unlock(&c->mu);
  dexa__mcp_oauth_free(c->oauth);
  dexa__mcp_host_unref(c->host);
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

void dexa__mcp_respond(dexa__mcp_client *c, uint64_t gen, const cJSON *msg, cJSON *result,
                       int64_t code, const char *message) {
  cJSON *r = cJSON_CreateObject();
  int ok = r && cJSON_AddStringToObject(r, "jsonrpc", "2.0") &&
           cJSON_AddItemToObject(r, "id", cJSON_Duplicate(cJSON_GetObjectItemCaseSensitive(msg, "id"), 1));
  if (ok && result) {
    ok = cJSON_AddItemToObject(r, "result", result);
    result = NULL;
  } else if (ok) {
    cJSON *e = cJSON_AddObjectToObject(r, "error");
    ok = e && cJSON_AddNumberToObject(e, "code", (double)code) &&
         cJSON_AddStringToObject(e, "message", message ? message : "");
  }
  char *text = ok ? cJSON_PrintUnformatted(r) : NULL;
  cJSON_Delete(r);
  cJSON_Delete(result);
  if (!text) return;
  /* stdio: one line while that transport is alive. HTTP: its own POST,
   * from whichever thread answers. */
  if (send_stdio(c, gen, text) == 1 && c->http) {
    char err[64];
    dexa__mcp_http_post(c->http, gen, text, "", NULL, NULL, dexa__mcp_now_ms() + cap_ms(c), err,
                        sizeof err);
  }
  cJSON_free(text);
}

static cJSON *roots_result(const dexa__mcp_client *c) {
  cJSON *res = cJSON_CreateObject();
  cJSON *list = res ? cJSON_AddArrayToObject(res, "roots") : NULL;
  for (size_t i = 0; list && i < c->cfg.rootc; i++) {
    cJSON *r = cJSON_CreateObject();
    if (!r) break;
    cJSON_AddStringToObject(r, "uri", c->cfg.roots[i].uri);
    if (c->cfg.roots[i].name) cJSON_AddStringToObject(r, "name", c->cfg.roots[i].name);
    cJSON_AddItemToArray(list, r);
  }
  return res;
}

/* The tool call a server request belongs to (c->mu held): the request
 * whose response stream carried it, else the one tools/call in flight. */
static dexa__mcp_call *owner_of(dexa__mcp_client *c, const char *via_id) {
  dexa__mcp_call *only = NULL;
  int calls = 0;
  for (dexa__mcp_pending *p = c->pending; p; p = p->next) {
    if (p->done || !p->owner) continue;
    if (via_id[0] && strcmp(p->id, via_id) == 0) return p->owner;
    only = p->owner;
    calls++;
  }
  return !via_id[0] && calls == 1 ? only : NULL;
}

static void on_request(dexa__mcp_client *c, uint64_t gen, const char *via_id, dexa__rpc_msg *m) {
  if (strcmp(m->method, "ping") == 0) {
    dexa__mcp_respond(c, gen, m->root, cJSON_CreateObject(), 0, NULL);
    return;
  }
  if (strcmp(m->method, "roots/list") == 0 && c->cfg.rootc) {
    dexa__mcp_respond(c, gen, m->root, roots_result(c), 0, NULL);
    return;
  }
  int for_call = (strcmp(m->method, "elicitation/create") == 0 && c->cfg.elicitation) ||
                 (strcmp(m->method, "sampling/createMessage") == 0 &&
                  c->cfg.sampling != DEXA__MCP_SAMPLING_OFF);
  if (!for_call) {
    dexa__mcp_respond(c, gen, m->root, NULL, -32601, "Method not found");
    return;
  }
  pthread_mutex_lock(&c->mu);
  dexa__mcp_call *owner = gen == c->generation ? owner_of(c, via_id) : NULL;
  if (owner) {
    dexa__mcp_call_deliver(owner, m->root, gen);
    m->root = NULL;
  }
  pthread_mutex_unlock(&c->mu);
  if (!owner)
    dexa__mcp_respond(c, gen, m->root, NULL, -32603,
                      "no tool call to answer for: this client takes elicitation and sampling "
                      "requests only during a tools/call");
}

/* notifications/message: the server's log, to the host's log callback. */
static void on_log(dexa__mcp_client *c, const dexa__rpc_msg *m) {
  const char *level = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(m->params, "level"));
  const char *logger = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(m->params, "logger"));
  const cJSON *data = cJSON_GetObjectItemCaseSensitive(m->params, "data");
  int lv = !level                       ? 3
           : !strcmp(level, "debug")    ? 4
           : !strcmp(level, "info") || !strcmp(level, "notice") ? 3
           : !strcmp(level, "warning")  ? 2
                                        : 1;
  char *text = cJSON_IsString(data) ? NULL : cJSON_PrintUnformatted(data);
  dexa__mcp_log(c->host, lv, "mcp:%s: %s%s%s: %.800s", c->cfg.name, level ? level : "log",
                logger ? " " : "", logger ? logger : "",
                cJSON_IsString(data) ? data->valuestring : text ? text : "");
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
  /* Resource updates, cancellations, elicitation/complete: nothing to do. */
}

void dexa__mcp_client_on_message(dexa__mcp_client *c, uint64_t generation, const char *via_id,
                                 const char *text, size_t len) {
  dexa__rpc_msg m;
  if (dexa__rpc_parse(text, len, &m) != 0) return; /* garbage on the wire: ignored */
  if (m.kind == DEXA__RPC_REQUEST) {
    on_request(c, generation, via_id ? via_id : "", &m);
    dexa__rpc_msg_free(&m);
    return;
  }
  if (m.kind == DEXA__RPC_NOTIFICATION && strcmp(m.method, "notifications/message") == 0) {
    on_log(c, &m); /* outside c->mu: the host's callback may take its time */
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

cJSON *dexa__mcp_client_capabilities(const dexa__mcp_client *c) {
  cJSON *caps = cJSON_CreateObject();
  if (!caps) return NULL;
  if (c->cfg.elicitation) { /* form fields and pages to open (URL mode) */
    cJSON *e = cJSON_AddObjectToObject(caps, "elicitation");
    if (e) cJSON_AddObjectToObject(e, "form");
    if (e) cJSON_AddObjectToObject(e, "url");
  }
  if (c->cfg.sampling != DEXA__MCP_SAMPLING_OFF) cJSON_AddObjectToObject(caps, "sampling");
  if (c->cfg.rootc) {
    cJSON *r = cJSON_AddObjectToObject(caps, "roots");
    if (r) cJSON_AddFalseToObject(r, "listChanged"); /* roots come from the configuration */
  }
  return caps;
}

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
    cJSON_AddItemToObject(meta, "io.modelcontextprotocol/clientCapabilities",
                          dexa__mcp_client_capabilities(c));
    cJSON *info = cJSON_AddObjectToObject(meta, "io.modelcontextprotocol/clientInfo");
    cJSON_AddStringToObject(info, "name", "libdexagents");
    cJSON_AddStringToObject(info, "version", DEXA_VERSION_STRING);
  }
  if (params) cJSON_AddItemToObject(r, "params", params);
  char *text = cJSON_PrintUnformatted(r);
  cJSON_Delete(r);
  return text;
}

/* POSTs one message; a refusal for want of authorization is mended
 * without a person when the OAuth client can (a token stored meanwhile, a
 * refresh, a headless grant) and the message is sent again: the server
 * did nothing with a refused message. */
static int http_send(dexa__mcp_client *c, uint64_t gen, const char *text, const char *wait_id,
                     const char *method, const char *name, int64_t deadline, char *err,
                     size_t err_size) {
  int rc;
  for (int round = 0;; round++) {
    dexa__mcp_http_auth auth;
    memset(&auth, 0, sizeof auth);
    rc = dexa__mcp_http_post_auth(c->http, gen, text, wait_id, method, name, deadline, &auth, err,
                                  err_size);
    if (rc != DEXA_E_AUTH || !c->oauth || round == 3) break;
    rc = dexa__mcp_oauth_recover(c, method, &auth, err, err_size);
    if (rc != DEXA_OK) break;
  }
  if (rc == DEXA_OK && c->oauth && method) dexa__mcp_oauth_succeeded(c, method);
  return rc;
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

/* A request's deadline as it stands: its own (progress moves it on) up to
 * its hard cap, or later while its tool call holds it for a question. */
static int64_t effective_deadline(const dexa__mcp_pending *p) {
  int64_t until = p->deadline_ms < p->hard_deadline_ms ? p->deadline_ms : p->hard_deadline_ms;
  if (p->owner && p->owner->hold_until_ms > until) until = p->owner->hold_until_ms;
  return until;
}

int64_t dexa__mcp_request_deadline(dexa__mcp_client *c, const char *id) {
  int64_t d = 0;
  pthread_mutex_lock(&c->mu);
  for (dexa__mcp_pending *p = c->pending; p; p = p->next)
    if (strcmp(p->id, id) == 0 && !p->done) d = effective_deadline(p);
  pthread_mutex_unlock(&c->mu);
  return d;
}

static int request_on(dexa__mcp_client *c, uint64_t gen, dexa__mcp_call *owner, const char *method,
                      cJSON *params, int64_t timeout_ms, const dexa__mcp_cancel *cancel,
                      cJSON **result, int64_t *rpc_code, char *err, size_t err_size) {
  dexa__mcp_pending p;
  memset(&p, 0, sizeof p);
  p.owner = owner;
  if (cancel) p.cancel = *cancel;
  snprintf(p.method, sizeof p.method, "%s", method);
  pthread_mutex_lock(&c->mu);
  if (gen != c->generation) {
    pthread_mutex_unlock(&c->mu);
    cJSON_Delete(params);
    snprintf(err, err_size, "the connection was reset");
    return DEXA_E_IO;
  }
  snprintf(p.id, sizeof p.id, "%lld", (long long)c->next_id++);
  p.deadline_ms = dexa__mcp_now_ms() + timeout_ms;
  p.hard_deadline_ms = p.deadline_ms + 3 * timeout_ms;
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
    rc = http_send(c, gen, text, p.id, method, name, p.hard_deadline_ms, err, err_size);
  }
  cJSON_free(text);
  free(name);

  int stopped = rc == DEXA__MCP_E_STOPPED; /* the HTTP transport saw it */
  pthread_mutex_lock(&c->mu);
  while (rc == DEXA_OK && !p.done) {
    int64_t now = dexa__mcp_now_ms();
    int64_t until = effective_deadline(&p);
    if (now >= until) break;
    if (p.cancel.stop) { /* wake up now and then to ask */
      pthread_mutex_unlock(&c->mu);
      stopped = stop_asked(&p.cancel);
      pthread_mutex_lock(&c->mu);
      if (stopped) break;
      if (until > now + DEXA__MCP_STOP_POLL_MS) until = now + DEXA__MCP_STOP_POLL_MS;
    }
    if (until > now + 1000) until = now + 1000; /* a hold may end early */
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
    rc = http_send(c, gen, text, "", method, NULL, dexa__mcp_now_ms() + cap_ms(c), err, sizeof err);
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
    if (!c->http) {
      int rc = dexa__mcp_http_new(&c->http, c);
      if (rc == DEXA_E_UNSUPPORTED) /* mcp_http_absent.c */
        snprintf(err, err_size, "MCP over HTTP: built without WITH_CURL=1");
      return rc;
    }
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
  int rc = request_on(c, current_gen(c), NULL, "server/discover", NULL, timeout_ms, NULL, &res, &code,
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
  cJSON_AddItemToObject(params, "capabilities", dexa__mcp_client_capabilities(c));
  cJSON *info = cJSON_AddObjectToObject(params, "clientInfo");
  cJSON_AddStringToObject(info, "name", "libdexagents");
  cJSON_AddStringToObject(info, "version", DEXA_VERSION_STRING);
  cJSON *res = NULL;
  int rc = request_on(c, current_gen(c), NULL, "initialize", params, timeout_ms, NULL, &res, NULL, err,
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
  if (rc == DEXA_OK && c->cfg.log_level && cJSON_GetObjectItemCaseSensitive(c->capabilities, "logging")) {
    /* The level of notifications/message; a server that refuses it still works. */
    cJSON *params = cJSON_CreateObject(), *res = NULL;
    char lerr[200];
    if (params) cJSON_AddStringToObject(params, "level", c->cfg.log_level);
    if (request_on(c, current_gen(c), NULL, "logging/setLevel", params, t, NULL, &res, NULL, lerr,
                   sizeof lerr) != DEXA_OK)
      dexa__mcp_log(c->host, 2, "mcp:%s: logging/setLevel: %s", c->cfg.name, lerr);
    cJSON_Delete(res);
  }
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
    rc = c->last_fail_rc ? c->last_fail_rc : DEXA_E_IO;
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
    } else if (rc != DEXA_E_AUTH) { /* a sign-in may land any moment: no pause */
      c->last_fail_ms = dexa__mcp_now_ms();
      c->last_fail_rc = rc;
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
  return dexa__mcp_request_for(c, NULL, method, params, timeout_ms, NULL, result, rpc_code, err,
                               err_size);
}

int dexa__mcp_request_cancellable(dexa__mcp_client *c, const char *method, cJSON *params,
                                  int64_t timeout_ms, const dexa__mcp_cancel *cancel,
                                  cJSON **result, int64_t *rpc_code, char *err, size_t err_size) {
  return dexa__mcp_request_for(c, NULL, method, params, timeout_ms, cancel, result, rpc_code, err,
                               err_size);
}

int dexa__mcp_request_for(dexa__mcp_client *c, dexa__mcp_call *owner, const char *method,
                          cJSON *params, int64_t timeout_ms, const dexa__mcp_cancel *cancel,
                          cJSON **result, int64_t *rpc_code, char *err, size_t err_size) {
  *result = NULL;
  if (timeout_ms <= 0) timeout_ms = c->cfg.timeout_ms;
  int http = c->cfg.transport == DEXA__MCP_HTTP;
  cJSON *copy = http && params ? cJSON_Duplicate(params, 1) : NULL;
  int rc = request_on(c, current_gen(c), owner, method, params, timeout_ms, cancel, result, rpc_code, err,
                      err_size);
  if (http_session_gone(rc)) {
    /* The HTTP session expired: re-initialize once and send it again. */
    pthread_mutex_lock(&c->mu);
    c->connected = 0;
    pthread_mutex_unlock(&c->mu);
    rc = dexa__mcp_client_ensure(c, err, err_size);
    if (rc == DEXA_OK) {
      rc = request_on(c, current_gen(c), owner, method, copy, timeout_ms, cancel, result, rpc_code, err,
                      err_size);
      copy = NULL;
    }
  }
  if (rc == DEXA_E_NOT_FOUND) rc = DEXA_E_IO;
  cJSON_Delete(copy);
  return rc;
}
