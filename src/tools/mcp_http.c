/* Streamable HTTP transport. Every client message is one POST on its own
 * curl easy handle (so threads never share one). A request's answer is
 * either one JSON object or an SSE stream carrying notifications, server
 * requests and finally the response; when an SSE stream with event ids ends
 * before the response, it is resumed with GET + Last-Event-ID after the
 * server's retry: delay (2025-11-25 polling). The session id of the
 * initialize response goes on every later request, with the negotiated
 * MCP-Protocol-Version; DELETE ends the session. 2026-07-28 requests carry
 * Mcp-Method and Mcp-Name instead of a session.
 *
 * No standalone GET listen stream is opened: tool lists of HTTP servers are
 * cached for a short time instead (mcp_source.c).
 *
 * Authorization: the OAuth client's access token goes on every request
 * (unless the configuration sets its own Authorization header); a 401, or
 * a 403 whose WWW-Authenticate asks for more scope, comes back as
 * DEXA_E_AUTH with the challenge for mcp_oauth.c. Token values never go
 * into an error message. */
#include <curl/curl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "dexagents/errors.h"
#include "util/curl_global.h"
#include "tools/mcp_internal.h"
#include "tools/mcp_oauth.h"

#define MAX_RESUMES 50
#define DEFAULT_RETRY_MS 1000

struct dexa__mcp_http {
  dexa__mcp_client *c;
  pthread_mutex_t mu;
  pthread_cond_t cv;
  char *session_id;
  /* The GET listen stream (dexa__mcp_http_listen), guarded by mu. */
  int listening;     /* its thread runs */
  int listen_state;  /* 0 connecting, 1 open, 2 refused by the server */
  int listen_joined; /* the thread was joined (or never started) */
  pthread_t listener;
};

int dexa__mcp_http_new(dexa__mcp_http **out, dexa__mcp_client *c) {
  if (dexa__curl_global_init() != DEXA_OK) return DEXA_E_INTERNAL;
  dexa__mcp_http *h = calloc(1, sizeof *h);
  if (!h) return DEXA_E_NOMEM;
  h->c = c;
  pthread_mutex_init(&h->mu, NULL);
  pthread_cond_init(&h->cv, NULL);
  h->listen_joined = 1;
  *out = h;
  return DEXA_OK;
}

void dexa__mcp_http_free(dexa__mcp_http *h) {
  if (!h) return;
  /* The listener ends on its own once no tool call is in flight. */
  pthread_mutex_lock(&h->mu);
  int join = !h->listen_joined;
  h->listen_joined = 1;
  pthread_mutex_unlock(&h->mu);
  if (join) pthread_join(h->listener, NULL);
  free(h->session_id);
  pthread_cond_destroy(&h->cv);
  pthread_mutex_destroy(&h->mu);
  free(h);
}

static char *session_copy(dexa__mcp_http *h) {
  pthread_mutex_lock(&h->mu);
  char *s = h->session_id ? strdup(h->session_id) : NULL;
  pthread_mutex_unlock(&h->mu);
  return s;
}

void dexa__mcp_http_reset_session(dexa__mcp_http *h) {
  pthread_mutex_lock(&h->mu);
  free(h->session_id);
  h->session_id = NULL;
  pthread_mutex_unlock(&h->mu);
}

/* ---- one transfer ---- */

typedef struct xfer {
  dexa__mcp_http *h;
  uint64_t gen;
  const char *wait_id;
  int64_t deadline_ms;
  long status;
  char content_type[128];
  char session_id[256];
  int mode; /* 0 undecided, 1 JSON, 2 SSE, 3 other */
  dexa__buf body;
  dexa__sse sse;
  int got_response;
  int too_large;
  int timed_out;
  char www_auth[2048]; /* the WWW-Authenticate of a refusal */
  int listen;          /* the GET listen stream: open while tool calls run */
  int stopped; /* the caller asked the request to stop */
} xfer;

/* 1 when the request with id has its response (or is no longer waited
 * for); *deadline receives its current deadline (progress moves it). */
static int response_done(dexa__mcp_client *c, const char *id, int64_t *deadline) {
  if (!id[0]) return 0;
  int64_t d = dexa__mcp_request_deadline(c, id); /* 0: answered or no longer waited for */
  if (deadline && d) *deadline = d;
  return d == 0;
}

static int on_sse_event(void *ud, const dexa__sse_event *ev) {
  xfer *x = ud;
  if (ev->data_len == 0) return 0; /* priming event (id only) */
  if (ev->event[0] && strcmp(ev->event, "message") != 0) return 0;
  dexa__mcp_client_on_message(x->h->c, x->gen, x->wait_id, ev->data, ev->data_len);
  if (response_done(x->h->c, x->wait_id, NULL)) {
    x->got_response = 1;
    return 1; /* stop reading: the server should end the stream now anyway */
  }
  return 0;
}

static size_t on_header(char *buf, size_t size, size_t n, void *ud) {
  xfer *x = ud;
  size_t len = size * n;
  const char *colon = memchr(buf, ':', len);
  if (!colon) return len;
  size_t kl = (size_t)(colon - buf);
  const char *v = colon + 1;
  size_t vl = len - kl - 1;
  while (vl && (*v == ' ' || *v == '\t')) v++, vl--;
  while (vl && (v[vl - 1] == '\r' || v[vl - 1] == '\n' || v[vl - 1] == ' ')) vl--;
  if (kl == 12 && strncasecmp(buf, "content-type", 12) == 0 && vl < sizeof x->content_type) {
    memcpy(x->content_type, v, vl);
    x->content_type[vl] = '\0';
  } else if (kl == 14 && strncasecmp(buf, "mcp-session-id", 14) == 0 && vl < sizeof x->session_id) {
    memcpy(x->session_id, v, vl);
    x->session_id[vl] = '\0';
  } else if (kl == 16 && strncasecmp(buf, "www-authenticate", 16) == 0 && vl < sizeof x->www_auth) {
    memcpy(x->www_auth, v, vl);
    x->www_auth[vl] = '\0';
  }
  return len;
}

/* Header lines of the listen stream: once it is a 200 event stream, a
 * tool call may start (the server only sends there while it is open). */
static size_t on_listen_header(char *buf, size_t size, size_t n, void *ud) {
  xfer *x = ud;
  size_t len = on_header(buf, size, n, ud);
  if (len > 5 && strncmp(buf, "HTTP/", 5) == 0) {
    const char *sp = memchr(buf, ' ', len);
    x->status = sp ? strtol(sp + 1, NULL, 10) : 0;
  }
  if ((len == 2 && buf[0] == '\r') || (len == 1 && buf[0] == '\n')) { /* the end of the headers */
    dexa__mcp_http *h = x->h;
    int open = x->status == 200 && strncasecmp(x->content_type, "text/event-stream", 17) == 0;
    pthread_mutex_lock(&h->mu);
    h->listen_state = open ? 1 : 2;
    pthread_cond_broadcast(&h->cv);
    pthread_mutex_unlock(&h->mu);
  }
  return len;
}

static size_t on_body(char *buf, size_t size, size_t n, void *ud) {
  xfer *x = ud;
  size_t len = size * n;
  if (!x->mode) {
    x->mode = strncasecmp(x->content_type, "text/event-stream", 17) == 0 ? 2
              : strncasecmp(x->content_type, "application/json", 16) == 0 ? 1
                                                                             : 3;
  }
  if (x->listen && x->mode != 2) return 0; /* not a stream: the server has none to offer */
  if (x->mode == 2) {
    int rc = dexa__sse_feed(&x->sse, buf, len);
    if (rc < 0) x->too_large = 1;
    return rc ? 0 : len;
  }
  if (x->body.len + len > DEXA__MCP_MAX_MESSAGE) {
    x->too_large = 1;
    return 0;
  }
  dexa__buf_append(&x->body, buf, len);
  return x->body.oom ? 0 : len;
}

/* 1 while the listen stream of generation gen is wanted: a tool call runs. */
static int listen_wanted(dexa__mcp_client *c, uint64_t gen) {
  pthread_mutex_lock(&c->mu);
  int wanted = c->runners > 0 && !c->closing && c->generation == gen;
  pthread_mutex_unlock(&c->mu);
  return wanted;
}

static int on_progress(void *ud, curl_off_t dt, curl_off_t dn, curl_off_t ut, curl_off_t un) {
  xfer *x = ud;
  if (x->listen) return listen_wanted(x->h->c, x->gen) ? 0 : 1;
  /* A request's deadline as it stands (progress and an open question move
   * it); a notification's is fixed. */
  int64_t until = x->deadline_ms;
  if (x->wait_id[0] && response_done(x->h->c, x->wait_id, &until)) {
    x->got_response = 1;
    return 1;
  }
  if (dexa__mcp_now_ms() >= until) {
    x->timed_out = 1;
    return 1;
  }
  if (x->wait_id[0] && dexa__mcp_request_stop_asked(x->h->c, x->wait_id)) {
    x->stopped = 1;
    return 1;
  }
  return 0;
}

static struct curl_slist *add_header(struct curl_slist *l, const char *name, const char *value) {
  dexa__buf b;
  dexa__buf_init(&b);
  dexa__buf_printf(&b, "%s: %s", name, value);
  struct curl_slist *n = b.oom ? NULL : curl_slist_append(l, b.data);
  dexa__buf_free(&b);
  if (!n) curl_slist_free_all(l);
  return n;
}

/* The headers of every request, starting with Accept (so the list is never
 * empty: NULL means out of memory). */
static struct curl_slist *common_headers(dexa__mcp_http *h, const char *session, const char *method,
                                         const char *accept) {
  dexa__mcp_client *c = h->c;
  struct curl_slist *l = add_header(NULL, "Accept", accept);
  if (!l) return NULL;
  for (size_t i = 0; i < c->cfg.headerc; i++)
    if (!(l = add_header(l, c->cfg.headers[i].key, c->cfg.headers[i].value))) return NULL;
  char *bearer = c->oauth ? dexa__mcp_oauth_bearer(c) : NULL;
  if (bearer) {
    l = add_header(l, "Authorization", bearer);
    memset(bearer, 0, strlen(bearer));
    free(bearer);
    if (!l) return NULL;
  }
  const char *version = c->era == DEXA__MCP_ERA_MODERN ? "2026-07-28" : c->version;
  if (version[0] && !(method && strcmp(method, "initialize") == 0))
    if (!(l = add_header(l, "MCP-Protocol-Version", version))) return NULL;
  if (session && !(l = add_header(l, "Mcp-Session-Id", session))) return NULL;
  return l;
}

/* Runs one transfer; returns the curl code. */
static CURLcode perform(xfer *x, const char *url, struct curl_slist *headers, const char *body,
                        const char *verb) {
  CURL *curl = curl_easy_init();
  if (!curl) return CURLE_FAILED_INIT;
  int64_t left = x->deadline_ms - dexa__mcp_now_ms();
  if (left < 1) left = 1;
  /* A request's stream may outlive its first deadline (progress, an open
   * question): on_progress enforces the deadline as it stands. */
  if (x->wait_id[0]) left = 30LL * 24 * 3600 * 1000;
  curl_easy_setopt(curl, CURLOPT_URL, url);
  curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(curl, CURLOPT_HTTPHEADER, headers);
  curl_easy_setopt(curl, CURLOPT_HEADERFUNCTION, x->listen ? on_listen_header : on_header);
  curl_easy_setopt(curl, CURLOPT_HEADERDATA, x);
  curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, on_body);
  curl_easy_setopt(curl, CURLOPT_WRITEDATA, x);
  curl_easy_setopt(curl, CURLOPT_NOPROGRESS, 0L);
  curl_easy_setopt(curl, CURLOPT_XFERINFOFUNCTION, on_progress);
  curl_easy_setopt(curl, CURLOPT_XFERINFODATA, x);
  curl_easy_setopt(curl, CURLOPT_TIMEOUT_MS, (long)left);
  curl_easy_setopt(curl, CURLOPT_CONNECTTIMEOUT_MS, (long)(left < 10000 ? left : 10000));
  curl_easy_setopt(curl, CURLOPT_PROTOCOLS_STR, "http,https");
  curl_easy_setopt(curl, CURLOPT_FOLLOWLOCATION, 0L);
  if (body) {
    curl_easy_setopt(curl, CURLOPT_POSTFIELDS, body);
    curl_easy_setopt(curl, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)strlen(body));
  } else if (verb) {
    curl_easy_setopt(curl, CURLOPT_CUSTOMREQUEST, verb);
  }
  CURLcode rc = curl_easy_perform(curl);
  curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &x->status);
  curl_easy_cleanup(curl);
  return rc;
}

static void xfer_init(xfer *x, dexa__mcp_http *h, uint64_t gen, const char *wait_id, int64_t deadline) {
  memset(x, 0, sizeof *x);
  x->h = h;
  x->gen = gen;
  x->wait_id = wait_id;
  x->deadline_ms = deadline;
  dexa__buf_init(&x->body);
  dexa__sse_init(&x->sse, DEXA__MCP_MAX_MESSAGE, on_sse_event, x);
}

static void xfer_reset(xfer *x) { /* keeps the SSE last id and retry */
  dexa__buf_reset(&x->body);
  dexa__sse_end(&x->sse);
  x->mode = 0;
  x->status = 0;
  x->content_type[0] = '\0';
  x->www_auth[0] = '\0';
}

static void xfer_free(xfer *x) {
  dexa__buf_free(&x->body);
  dexa__sse_free(&x->sse);
}

static void sleep_ms(int64_t ms) {
  struct timespec ts = {(time_t)(ms / 1000), (long)(ms % 1000) * 1000000L};
  nanosleep(&ts, NULL);
}

/* The outcome of a finished transfer. */
static int classify(xfer *x, CURLcode cc, int had_session, char *err, size_t err_size) {
  if (x->got_response) return DEXA_OK;
  if (x->stopped) {
    snprintf(err, err_size, "stopped by the caller");
    return DEXA__MCP_E_STOPPED;
  }
  if (x->too_large) {
    snprintf(err, err_size, "the server sent a message over the size limit");
    return DEXA_E_TOO_LARGE;
  }
  if (x->timed_out || cc == CURLE_OPERATION_TIMEDOUT) {
    snprintf(err, err_size, "no response within the timeout");
    return DEXA_E_TIMEOUT;
  }
  if (x->mode == 1 && x->body.len) { /* a JSON body, whatever the status */
    dexa__mcp_client_on_message(x->h->c, x->gen, x->wait_id, x->body.data, x->body.len);
    if (response_done(x->h->c, x->wait_id, NULL)) return DEXA_OK;
  }
  if (cc != CURLE_OK && cc != CURLE_WRITE_ERROR) {
    snprintf(err, err_size, "HTTP: %s", curl_easy_strerror(cc));
    return DEXA_E_IO;
  }
  if (x->status == 404 || (x->status == 400 && had_session && x->body.data &&
                           strstr(x->body.data, "ession"))) {
    snprintf(err, err_size, "HTTP %ld: the session is gone", x->status);
    return had_session ? DEXA_E_NOT_FOUND : DEXA_E_PERMANENT;
  }
  if (x->status == 401 || (x->status == 403 && strstr(x->www_auth, "insufficient_scope"))) {
    snprintf(err, err_size, "HTTP %ld: the server needs %s", x->status,
             x->status == 401 ? "authorization" : "more scope");
    return DEXA_E_AUTH;
  }
  if (x->status >= 400) {
    snprintf(err, err_size, "HTTP %ld%s%.200s", x->status, x->body.len ? ": " : "",
             x->body.len ? x->body.data : "");
    return x->status >= 500 || x->status == 429 ? DEXA_E_TRANSIENT : DEXA_E_PERMANENT;
  }
  if (!x->wait_id[0]) return DEXA_OK; /* a notification or response: 202 */
  snprintf(err, err_size, "HTTP %ld: the stream ended without the response", x->status);
  return DEXA_E_IO;
}

int dexa__mcp_http_post(dexa__mcp_http *h, uint64_t generation, const char *body,
                        const char *wait_id, const char *method, const char *name,
                        int64_t deadline_ms, char *err, size_t err_size) {
  return dexa__mcp_http_post_auth(h, generation, body, wait_id, method, name, deadline_ms, NULL,
                                  err, err_size);
}

int dexa__mcp_http_post_auth(dexa__mcp_http *h, uint64_t generation, const char *body,
                             const char *wait_id, const char *method, const char *name,
                             int64_t deadline_ms, dexa__mcp_http_auth *auth, char *err,
                             size_t err_size) {
  dexa__mcp_client *c = h->c;
  char *session = c->era == DEXA__MCP_ERA_MODERN ? NULL : session_copy(h);
  struct curl_slist *hd = common_headers(h, session, method, "application/json, text/event-stream");
  if (hd) hd = add_header(hd, "Content-Type", "application/json");
  if (hd && c->era == DEXA__MCP_ERA_MODERN && method) {
    hd = add_header(hd, "Mcp-Method", method);
    if (hd && name) {
      dexa__buf v;
      dexa__buf_init(&v);
      dexa__mcp_header_value(&v, name);
      hd = v.oom ? (curl_slist_free_all(hd), NULL) : add_header(hd, "Mcp-Name", v.data);
      dexa__buf_free(&v);
    }
  }
  if (!hd) {
    free(session);
    return DEXA_E_NOMEM;
  }
  xfer x;
  xfer_init(&x, h, generation, wait_id, deadline_ms);
  CURLcode cc = perform(&x, c->cfg.url, hd, body, NULL);
  curl_slist_free_all(hd);
  if (x.session_id[0] && method && strcmp(method, "initialize") == 0) {
    pthread_mutex_lock(&h->mu);
    free(h->session_id);
    h->session_id = strdup(x.session_id);
    pthread_mutex_unlock(&h->mu);
  }
  int rc = classify(&x, cc, session != NULL, err, err_size);
  if (rc == DEXA_E_AUTH && auth) {
    auth->status = x.status;
    snprintf(auth->challenge, sizeof auth->challenge, "%s", x.www_auth);
  }
  /* An SSE stream that ended early with an event id is resumed by GET. */
  for (int i = 0; rc == DEXA_E_IO && x.mode == 2 && x.sse.last_id[0] && wait_id[0] &&
                  c->era != DEXA__MCP_ERA_MODERN && i < MAX_RESUMES;
       i++) {
    int64_t wait = x.sse.retry_ms >= 0 ? x.sse.retry_ms : DEFAULT_RETRY_MS;
    int64_t until = dexa__mcp_request_deadline(c, wait_id);
    if (!until || dexa__mcp_now_ms() + wait >= until) {
      rc = DEXA_E_TIMEOUT;
      snprintf(err, err_size, "no response within the timeout");
      break;
    }
    sleep_ms(wait);
    free(session);
    session = session_copy(h);
    hd = common_headers(h, session, NULL, "text/event-stream");
    if (hd) hd = add_header(hd, "Last-Event-ID", x.sse.last_id);
    if (!hd) {
      rc = DEXA_E_NOMEM;
      break;
    }
    xfer_reset(&x);
    cc = perform(&x, c->cfg.url, hd, NULL, "GET");
    curl_slist_free_all(hd);
    rc = classify(&x, cc, session != NULL, err, err_size);
    if (rc != DEXA_OK && x.mode != 2) break; /* e.g. 405: no resumption here */
  }
  free(session);
  xfer_free(&x);
  return rc;
}

/* The listen stream (GET): a legacy-era server sends its own requests
 * there when they are not tied to one of ours (server.request() in the TS
 * SDK, an elicitation sent from a tool handler included); we attribute
 * them to the one tool call in flight. Open while tool calls run, resumed
 * with Last-Event-ID when the server ends it; a server that answers 405
 * (or anything but an event stream) has none, and is not asked again. */
static void *listen_main(void *arg) {
  dexa__mcp_http *h = arg;
  dexa__mcp_client *c = h->c;
  pthread_mutex_lock(&c->mu);
  uint64_t gen = c->generation;
  pthread_mutex_unlock(&c->mu);
  xfer x;
  xfer_init(&x, h, gen, "", dexa__mcp_now_ms() + 30LL * 24 * 3600 * 1000);
  x.listen = 1;
  int refused = 0;
  while (!refused && listen_wanted(c, gen)) {
    char *session = session_copy(h);
    struct curl_slist *hd = common_headers(h, session, NULL, "text/event-stream");
    if (hd && x.sse.last_id[0]) hd = add_header(hd, "Last-Event-ID", x.sse.last_id);
    free(session);
    if (!hd) break;
    xfer_reset(&x);
    perform(&x, c->cfg.url, hd, NULL, "GET");
    curl_slist_free_all(hd);
    refused = x.status != 200 || x.mode != 2;
    pthread_mutex_lock(&h->mu);
    if (h->listen_state == 0 || refused) h->listen_state = refused ? 2 : 1;
    pthread_cond_broadcast(&h->cv);
    pthread_mutex_unlock(&h->mu);
    for (int64_t t = 0; !refused && t < (x.sse.retry_ms >= 0 ? x.sse.retry_ms : DEFAULT_RETRY_MS) &&
                        listen_wanted(c, gen); t += 100)
      sleep_ms(100);
  }
  xfer_free(&x);
  pthread_mutex_lock(&h->mu);
  h->listening = 0;
  if (!refused) h->listen_state = 0; /* a later call opens it again */
  pthread_cond_broadcast(&h->cv);
  pthread_mutex_unlock(&h->mu);
  return NULL;
}

void dexa__mcp_http_listen(dexa__mcp_http *h, int64_t wait_ms) {
  pthread_mutex_lock(&h->mu);
  if (h->listen_state == 2) { /* refused: the server has no listen stream */
    pthread_mutex_unlock(&h->mu);
    return;
  }
  if (!h->listening) {
    if (!h->listen_joined) {
      pthread_t old = h->listener;
      h->listen_joined = 1;
      pthread_mutex_unlock(&h->mu);
      pthread_join(old, NULL); /* it ended: its generation or its calls are over */
      pthread_mutex_lock(&h->mu);
    }
    h->listen_state = 0;
    if (pthread_create(&h->listener, NULL, listen_main, h) == 0) {
      h->listening = 1;
      h->listen_joined = 0;
    }
  }
  int64_t until = dexa__mcp_now_ms() + wait_ms;
  while (h->listening && h->listen_state == 0 && dexa__mcp_now_ms() < until) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_nsec += 50 * 1000000L;
    if (ts.tv_nsec >= 1000000000L) ts.tv_sec++, ts.tv_nsec -= 1000000000L;
    pthread_cond_timedwait(&h->cv, &h->mu, &ts);
  }
  pthread_mutex_unlock(&h->mu);
}

void dexa__mcp_http_end_session(dexa__mcp_http *h) {
  char *session = session_copy(h);
  if (!session) return;
  struct curl_slist *hd = common_headers(h, session, NULL, "*/*");
  if (hd) {
    xfer x;
    xfer_init(&x, h, 0, "", dexa__mcp_now_ms() + 2000);
    perform(&x, h->c->cfg.url, hd, NULL, "DELETE"); /* 200, or 405 when not offered */
    xfer_free(&x);
    curl_slist_free_all(hd);
  }
  free(session);
  dexa__mcp_http_reset_session(h);
}
