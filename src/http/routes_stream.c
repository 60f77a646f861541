/* Streams of a session's events: the pump that both stream routes share,
 * and GET sessions/ID/events as Server-Sent Events.
 *
 * The pump reads a batch of events before the response is made (so a
 * missing session gets 404 and a bad token 400), then its content reader
 * blocks its connection's thread in short slices while it waits for events.
 * Between slices it ends when the client has gone (so a thread never waits
 * for a heartbeat to notice) or dexa_http_agent_routes_shutdown was called,
 * and it sends a comment after heartbeat_ms without a frame. A route turns
 * each event into frames with its map function. */
#include <microhttpd.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "dexagents/errors.h"
#include "http/http_internal.h"

#define SLICE_MS 250
#define BATCH_EVENTS 200
#define MAX_RESUME_TOKEN 256
#define RETRY_MS "2000"

struct dexa__pump {
  dexa_http_agent_routes *routes;
  struct MHD_Connection *connection;
  char *session_id;
  char *token;      /* resumes after the last event framed */
  dexa__buf frames; /* framed, not yet handed to the daemon */
  size_t sent;      /* bytes of frames handed over */
  int64_t last_ms;  /* monotonic time of the last frame */
  int done;         /* the map ended the stream: send what is framed, then end */
  int ended;
  dexa__pump_map map;
  void *map_ctx;
  void (*map_free)(void *);
};

/* 1 when the client has closed its side (or the socket failed), so a
 * stream waiting for events ends at once instead of at its next write. */
static int client_gone(struct MHD_Connection *c) {
  const union MHD_ConnectionInfo *ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
  if (!ci) return 0;
  struct pollfd p = {ci->connect_fd, POLLIN | POLLRDHUP, 0};
  if (poll(&p, 1, 0) <= 0) return 0;
  if (p.revents & (POLLRDHUP | POLLHUP | POLLERR | POLLNVAL)) return 1;
  /* Readable: the end of the stream (0) or bytes a client sent on. */
  char ch;
  return recv(ci->connect_fd, &ch, 1, MSG_PEEK | MSG_DONTWAIT) == 0;
}

static void pump_free(void *cls) {
  dexa__pump *s = cls;
  if (!s) return;
  if (s->map_free) s->map_free(s->map_ctx);
  free(s->session_id);
  free(s->token);
  dexa__buf_free(&s->frames);
  free(s);
}

static int set_token(dexa__pump *s, const char *token) {
  if (!token || strcmp(token, s->token) == 0) return DEXA_OK;
  size_t n = strlen(token) + 1;
  char *t = malloc(n);
  if (!t) return DEXA_E_NOMEM;
  memcpy(t, token, n);
  free(s->token);
  s->token = t;
  return DEXA_OK;
}

/* Maps the events of a read_events document and moves the token on to the
 * last event mapped (the document's own token when all were). */
static int take_batch(dexa__pump *s, const char *doc, size_t len) {
  cJSON *d = cJSON_ParseWithLength(doc, len);
  const cJSON *events = cJSON_GetObjectItemCaseSensitive(d, "events");
  if (!cJSON_IsArray(events)) {
    cJSON_Delete(d);
    return DEXA_E_INVALID_JSON;
  }
  int rc = DEXA_OK;
  const cJSON *item;
  cJSON_ArrayForEach(item, events) {
    const char *token = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(item, "token"));
    if (!token || !cJSON_IsObject(cJSON_GetObjectItemCaseSensitive(item, "event"))) {
      rc = DEXA_E_INVALID_JSON;
      break;
    }
    int r = s->map(s->map_ctx, s, item, &s->frames);
    if (r < 0) rc = r;
    if (rc == DEXA_OK) rc = set_token(s, token);
    if (rc != DEXA_OK || r == 1) {
      s->done = r == 1;
      break;
    }
  }
  if (rc == DEXA_OK && !s->done)
    rc = set_token(s, cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(d, "token")));
  cJSON_Delete(d);
  return rc != DEXA_OK ? rc : s->frames.oom ? DEXA_E_NOMEM : DEXA_OK;
}

/* Waits for the next frames (or the heartbeat); 0 when the stream ends. */
static int refill(dexa__pump *s) {
  dexa__buf_reset(&s->frames);
  s->sent = 0;
  for (;;) {
    if (s->done || atomic_load(&s->routes->closing) || client_gone(s->connection))
      return 0;
    char *out = NULL;
    size_t len = 0;
    int rc = dexa_runtime_read_events(s->routes->rt, s->session_id, s->token, BATCH_EVENTS,
                                      SLICE_MS, &out, &len);
    if (rc == DEXA_OK) rc = take_batch(s, out, len);
    dexa_free(out);
    /* A session that went away or a token that fell out of retention: end
     * the stream; the browser reconnects, gets 404 or 400, and reloads. */
    if (rc != DEXA_OK) return 0;
    if (s->frames.len) break;
    if (dexa__http_mono_ms() - s->last_ms >= s->routes->heartbeat_ms) {
      dexa__buf_puts(&s->frames, ": keep-alive\n\n");
      break;
    }
  }
  s->last_ms = dexa__http_mono_ms();
  return !s->frames.oom;
}

static ssize_t read_frames(void *cls, uint64_t pos, char *buf, size_t max) {
  (void)pos;
  dexa__pump *s = cls;
  if (s->ended) return MHD_CONTENT_READER_END_OF_STREAM;
  if (s->sent >= s->frames.len && !refill(s)) {
    s->ended = 1;
    return MHD_CONTENT_READER_END_OF_STREAM;
  }
  size_t n = s->frames.len - s->sent;
  if (n > max) n = max;
  memcpy(buf, s->frames.data + s->sent, n);
  s->sent += n;
  return (ssize_t)n;
}

static char *dup_str(const char *v) {
  size_t n = strlen(v) + 1;
  char *p = malloc(n);
  if (p) memcpy(p, v, n);
  return p;
}

void dexa__pump_end(dexa__pump *s) { s->done = 1; }

const char *dexa__pump_session(const dexa__pump *s) { return s->session_id; }

dexa_http_agent_routes *dexa__pump_routes(const dexa__pump *s) { return s->routes; }

int dexa__pump_open(dexa_http_agent_routes *r, struct MHD_Connection *c, const char *session_id,
                    const char *resume, const char *prologue, dexa__pump_map map, void *map_ctx,
                    void (*map_free)(void *), dexa__http_reply *reply) {
  if (atomic_load(&r->closing)) {
    if (map_free) map_free(map_ctx);
    dexa__http_error(reply, 503, DEXA_E_BAD_STATE, "the server is shutting down");
    return DEXA_E_BAD_STATE;
  }
  char *out = NULL;
  size_t len = 0;
  int rc = dexa_runtime_read_events(r->rt, session_id, resume, BATCH_EVENTS, 0, &out, &len);
  if (rc != DEXA_OK) {
    dexa_free(out);
    if (map_free) map_free(map_ctx);
    if (rc == DEXA_E_NOT_FOUND)
      dexa__http_error(reply, 404, rc, "the AI Agent session is missing or no longer retained");
    else if (rc == DEXA_E_INVALID_RESUME_TOKEN)
      dexa__http_error(reply, 400, rc, "the resume token is not valid; reload the snapshot");
    else
      dexa__http_error(reply, dexa__http_status_of(rc), rc, dexa_strerror(rc));
    return rc;
  }
  dexa__pump *s = calloc(1, sizeof *s);
  if (s) {
    s->routes = r;
    s->connection = c;
    s->map = map;
    s->map_ctx = map_ctx;
    s->map_free = map_free;
    dexa__buf_init(&s->frames);
    s->session_id = dup_str(session_id);
    s->token = dup_str(resume);
    s->last_ms = dexa__http_mono_ms();
    if (prologue) dexa__buf_puts(&s->frames, prologue);
  } else if (map_free) {
    map_free(map_ctx);
  }
  rc = s && s->session_id && s->token ? take_batch(s, out, len) : DEXA_E_NOMEM;
  dexa_free(out);
  struct MHD_Response *resp = NULL;
  if (rc == DEXA_OK)
    resp = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 16 * 1024, read_frames, s,
                                             pump_free);
  if (!resp) {
    pump_free(s);
    dexa__http_error(reply, 500, rc == DEXA_OK ? DEXA_E_NOMEM : rc, "cannot open the event stream");
    return rc == DEXA_OK ? DEXA_E_NOMEM : rc;
  }
  MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, "text/event-stream; charset=utf-8");
  MHD_add_response_header(resp, MHD_HTTP_HEADER_CACHE_CONTROL, "no-store");
  MHD_add_response_header(resp, "X-Accel-Buffering", "no");
  reply->status = 200;
  reply->stream = resp;
  return DEXA_OK;
}

/* ---- GET sessions/ID/events -------------------------------------------------------- */

/* One SSE frame per event: the id is its resume token, the data the event. */
static int sse_map(void *ctx, dexa__pump *pump, const cJSON *item, dexa__buf *out) {
  (void)ctx;
  (void)pump;
  const char *token = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(item, "token"));
  char *data = cJSON_PrintUnformatted(cJSON_GetObjectItemCaseSensitive(item, "event"));
  if (!data) return DEXA_E_NOMEM;
  int rc = dexa__sse_append(out, token, NULL, data, strlen(data));
  cJSON_free(data);
  return rc == DEXA_E_INVALID_ARG ? DEXA_E_INVALID_JSON : rc;
}

void dexa__http_event_stream(dexa_http_agent_routes *r, void *connection, const char *session_id,
                             dexa__http_reply *reply) {
  struct MHD_Connection *c = connection;
  const char *resume = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Last-Event-ID");
  if (!resume || !*resume) resume = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "resume_token");
  if (!resume) resume = "";
  if (strlen(resume) > MAX_RESUME_TOKEN) {
    dexa__http_error(reply, 400, DEXA_E_INVALID_RESUME_TOKEN,
                     "the resume token is not valid; reload the snapshot");
    return;
  }
  dexa__pump_open(r, c, session_id, resume, "retry: " RETRY_MS "\n\n", sse_map, NULL, NULL, reply);
}
