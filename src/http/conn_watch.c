/* The header timeout: a request whose headers are not complete within
 * request_timeout_ms is cut off, even when they trickle in a byte at a
 * time (each byte resets libmicrohttpd's idle timer, so the idle timeout
 * alone never ends such a connection).
 *
 * dexa_http_agent_routes_daemon_options sets two callbacks of the daemon:
 * the connection notification (each connection is tracked from its start)
 * and the URI log callback (a request line arrived: a new request). A
 * watchdog thread, started with the first connection, looks at each
 * connection every WATCH_MS: while its current request's headers are not
 * complete (libmicrohttpd gives no header size yet) for longer than
 * request_timeout_ms since the connection opened or its previous request
 * ended, the socket is shut down, so the connection's thread sees the end
 * and libmicrohttpd closes it. The tracker outlives every look: the
 * notification of the connection's end takes the same lock before the
 * connection and its socket go away. */
#include <microhttpd.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <time.h>

#include "dexagents/errors.h"
#include "http/http_internal.h"

#define WATCH_MS 100

struct dexa__conn {
  struct MHD_Connection *c;
  int fd;
  int64_t since_ms;    /* when the current header phase began (as seen) */
  atomic_uint requests; /* request lines seen (the URI log callback) */
  unsigned seen;       /* requests at the last look */
  int in_request;      /* the last look saw complete headers */
  int cut;
  struct dexa__conn *prev, *next;
};

static void look(dexa_http_agent_routes *r, int64_t now) {
  for (dexa__conn *k = r->conns; k; k = k->next) {
    const union MHD_ConnectionInfo *hs =
        MHD_get_connection_info(k->c, MHD_CONNECTION_INFO_REQUEST_HEADER_SIZE);
    unsigned n = atomic_load(&k->requests);
    if (hs) { /* headers complete: the request runs (its body has its own limit) */
      k->in_request = 1;
      k->seen = n;
      continue;
    }
    if (k->in_request || n != k->seen) { /* a request ended since the last look */
      k->in_request = 0;
      k->seen = n;
      k->since_ms = now;
      continue;
    }
    if (!k->cut && now - k->since_ms > r->request_timeout_ms) {
      k->cut = 1;
      shutdown(k->fd, SHUT_RDWR);
    }
  }
}

static void *watchdog(void *p) {
  dexa_http_agent_routes *r = p;
  pthread_mutex_lock(&r->conn_mu);
  while (!r->watch_stop) {
    look(r, dexa__http_mono_ms());
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    ts.tv_nsec += WATCH_MS * 1000000L;
    if (ts.tv_nsec >= 1000000000L) {
      ts.tv_sec++;
      ts.tv_nsec -= 1000000000L;
    }
    pthread_cond_timedwait(&r->conn_cv, &r->conn_mu, &ts);
  }
  pthread_mutex_unlock(&r->conn_mu);
  return NULL;
}

void dexa__conn_watch_init(dexa_http_agent_routes *r) {
  pthread_mutex_init(&r->conn_mu, NULL);
  pthread_condattr_t a;
  pthread_condattr_init(&a);
  pthread_condattr_setclock(&a, CLOCK_MONOTONIC);
  pthread_cond_init(&r->conn_cv, &a);
  pthread_condattr_destroy(&a);
}

void dexa__conn_watch_stop(dexa_http_agent_routes *r) {
  pthread_mutex_lock(&r->conn_mu);
  int running = r->watch_running;
  r->watch_stop = 1;
  pthread_cond_broadcast(&r->conn_cv);
  pthread_mutex_unlock(&r->conn_mu);
  if (running) pthread_join(r->watch_thread, NULL);
  /* The daemon is stopped: every connection has been notified closed. */
  while (r->conns) {
    dexa__conn *k = r->conns;
    r->conns = k->next;
    free(k);
  }
  pthread_cond_destroy(&r->conn_cv);
  pthread_mutex_destroy(&r->conn_mu);
}

static void on_connection(void *cls, struct MHD_Connection *c, void **socket_context,
                          enum MHD_ConnectionNotificationCode code) {
  dexa_http_agent_routes *r = cls;
  if (code == MHD_CONNECTION_NOTIFY_STARTED) {
    const union MHD_ConnectionInfo *fd = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
    dexa__conn *k = fd ? calloc(1, sizeof *k) : NULL;
    *socket_context = k;
    if (!k) return; /* untracked: only the idle timeout applies */
    k->c = c;
    k->fd = fd->connect_fd;
    k->since_ms = dexa__http_mono_ms();
    atomic_init(&k->requests, 0);
    pthread_mutex_lock(&r->conn_mu);
    k->next = r->conns;
    if (r->conns) r->conns->prev = k;
    r->conns = k;
    if (!r->watch_running && !r->watch_stop &&
        pthread_create(&r->watch_thread, NULL, watchdog, r) == 0)
      r->watch_running = 1;
    pthread_mutex_unlock(&r->conn_mu);
    return;
  }
  dexa__conn *k = *socket_context;
  if (!k) return;
  pthread_mutex_lock(&r->conn_mu);
  if (k->prev) k->prev->next = k->next;
  else r->conns = k->next;
  if (k->next) k->next->prev = k->prev;
  pthread_mutex_unlock(&r->conn_mu);
  free(k);
  *socket_context = NULL;
}

/* Called when a request line has arrived; the result is the request's
 * initial con_cls, which stays NULL. */
static void *on_request_line(void *cls, const char *uri, struct MHD_Connection *c) {
  (void)cls;
  (void)uri;
  const union MHD_ConnectionInfo *ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
  dexa__conn *k = ci ? ci->socket_context : NULL;
  if (k) atomic_fetch_add(&k->requests, 1);
  return NULL;
}

size_t dexa__conn_watch_options(dexa_http_agent_routes *r, struct MHD_OptionItem *o) {
  o[0] = (struct MHD_OptionItem){MHD_OPTION_NOTIFY_CONNECTION, (intptr_t)on_connection, r};
  o[1] = (struct MHD_OptionItem){MHD_OPTION_URI_LOG_CALLBACK, (intptr_t)on_request_line, r};
  return 2;
}
