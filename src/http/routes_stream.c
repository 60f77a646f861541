/* The event stream route: GET sessions/ID/events as Server-Sent Events.
 *
 * The resume token comes from Last-Event-ID (a reconnecting browser) or the
 * resume_token query parameter (the snapshot's), else the stream starts at
 * the oldest retained event. The first batch is read before the response
 * is made, so a missing session gets 404 and a bad token 400. Then the
 * content reader blocks its connection's thread in short slices while it
 * waits for events (so dexa_http_agent_routes_shutdown ends it quickly), and
 * sends a comment after heartbeat_ms without an event. */
#include <microhttpd.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "dexagents/errors.h"
#include "http/http_internal.h"

#define SLICE_MS 250
#define BATCH_EVENTS 200
#define MAX_RESUME_TOKEN 256
#define RETRY_MS "2000"

typedef struct event_stream {
  dexa_http_agent_routes *routes;
  char *session_id;
  char *token;      /* resumes after the last event framed */
  dexa__buf frames; /* framed, not yet handed to the daemon */
  size_t sent;      /* bytes of frames handed over */
  int64_t last_ms;  /* monotonic time of the last frame */
  int ended;
} event_stream;

static int64_t mono_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void stream_free(void *cls) {
  event_stream *s = cls;
  if (!s) return;
  free(s->session_id);
  free(s->token);
  dexa__buf_free(&s->frames);
  free(s);
}

/* Frames a read_events document and moves the token on. */
static int take_batch(event_stream *s, const char *doc, size_t len) {
  cJSON *d = cJSON_ParseWithLength(doc, len);
  if (!d) return DEXA_E_INVALID_JSON;
  int rc = dexa__sse_append_events(&s->frames, d);
  const char *token = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(d, "token"));
  if (rc == DEXA_OK && token && strcmp(token, s->token) != 0) {
    size_t n = strlen(token) + 1;
    char *t = malloc(n);
    if (t) {
      memcpy(t, token, n);
      free(s->token);
      s->token = t;
    } else {
      rc = DEXA_E_NOMEM;
    }
  }
  cJSON_Delete(d);
  return rc;
}

/* Waits for the next events (or the heartbeat); 0 when the stream ends. */
static int refill(event_stream *s) {
  dexa__buf_reset(&s->frames);
  s->sent = 0;
  for (;;) {
    if (atomic_load(&s->routes->closing)) return 0;
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
    if (mono_ms() - s->last_ms >= s->routes->heartbeat_ms) {
      dexa__buf_puts(&s->frames, ": keep-alive\n\n");
      break;
    }
  }
  s->last_ms = mono_ms();
  return !s->frames.oom;
}

static ssize_t read_frames(void *cls, uint64_t pos, char *buf, size_t max) {
  (void)pos;
  event_stream *s = cls;
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

void dexa__http_event_stream(dexa_http_agent_routes *r, void *connection, const char *session_id,
                             dexa__http_reply *reply) {
  struct MHD_Connection *c = connection;
  if (atomic_load(&r->closing)) {
    dexa__http_error(reply, 503, DEXA_E_BAD_STATE, "the server is shutting down");
    return;
  }
  const char *resume = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Last-Event-ID");
  if (!resume || !*resume) resume = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "resume_token");
  if (!resume) resume = "";
  if (strlen(resume) > MAX_RESUME_TOKEN) {
    dexa__http_error(reply, 400, DEXA_E_INVALID_RESUME_TOKEN,
                     "the resume token is not valid; reload the snapshot");
    return;
  }
  char *out = NULL;
  size_t len = 0;
  int rc = dexa_runtime_read_events(r->rt, session_id, resume, BATCH_EVENTS, 0, &out, &len);
  if (rc != DEXA_OK) {
    dexa_free(out);
    if (rc == DEXA_E_NOT_FOUND)
      dexa__http_error(reply, 404, rc, "the AI Agent session is missing or no longer retained");
    else if (rc == DEXA_E_INVALID_RESUME_TOKEN)
      dexa__http_error(reply, 400, rc, "the resume token is not valid; reload the snapshot");
    else
      dexa__http_error(reply, dexa__http_status_of(rc), rc, dexa_strerror(rc));
    return;
  }
  event_stream *s = calloc(1, sizeof *s);
  if (s) {
    s->routes = r;
    dexa__buf_init(&s->frames);
    s->session_id = dup_str(session_id);
    s->token = dup_str(resume);
    s->last_ms = mono_ms();
    dexa__buf_puts(&s->frames, "retry: " RETRY_MS "\n\n");
  }
  rc = s && s->session_id && s->token ? take_batch(s, out, len) : DEXA_E_NOMEM;
  dexa_free(out);
  struct MHD_Response *resp = NULL;
  if (rc == DEXA_OK && !s->frames.oom)
    resp = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 16 * 1024, read_frames, s,
                                             stream_free);
  if (!resp) {
    stream_free(s);
    dexa__http_error(reply, 500, rc == DEXA_OK ? DEXA_E_NOMEM : rc, "cannot open the event stream");
    return;
  }
  MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, "text/event-stream; charset=utf-8");
  MHD_add_response_header(resp, MHD_HTTP_HEADER_CACHE_CONTROL, "no-store");
  MHD_add_response_header(resp, "X-Accel-Buffering", "no");
  reply->status = 200;
  reply->stream = resp;
}
