/* PostgreSQL backend: wake-ups across processes with LISTEN/NOTIFY.
 *
 * Every write transaction that changed sessions sends, before its COMMIT,
 * one notification on DEXA__PG_CHANNEL: this store's instance name and the
 * session ids, one a line ("*" for all when they would not fit). PostgreSQL
 * delivers it at commit, to every listening connection of the database.
 *
 * Each store has a listener thread with a connection of its own, LISTENing
 * on the channel. A notification from another instance calls the wake hook
 * (store.h: set_wake) once per session, which wakes that process's idle
 * workers and the event readers of those sessions within milliseconds.
 * Notifications may be lost (the listener's connection breaks, the server
 * restarts): the runtime's waiters still look at the store every poll_ms,
 * and the listener, once it is back, wakes everything once. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "dexagents/errors.h"
#include "store/pg_internal.h"
#include "util/buf.h"

/* Payloads must stay under PostgreSQL's 8000 bytes. */
#define PAYLOAD_MAX 7000
#define BACKOFF_MIN_MS 50
#define BACKOFF_MAX_MS 2000

struct pg_listener {
  pg_store *store;
  pthread_t thread;
  int stop_pipe[2]; /* written to stop the thread */
};

int dexa__pg_notify_touched(pg_conn *c) {
  if (c->ntouched == 0) return DEXA_OK;
  dexa__buf b;
  dexa__buf_init(&b);
  dexa__buf_puts(&b, c->store->instance);
  for (size_t i = 0; i < c->ntouched && b.len < PAYLOAD_MAX; i++) {
    dexa__buf_putc(&b, '\n');
    dexa__buf_puts(&b, c->touched[i]);
  }
  if (b.len >= PAYLOAD_MAX) {
    b.len = 0;
    dexa__buf_puts(&b, c->store->instance);
    dexa__buf_puts(&b, "\n*");
  }
  dexa__buf_putc(&b, '\0');
  int rc = DEXA_E_NOMEM;
  if (!b.oom) {
    pg_params p = {0};
    dexa__pg_p_text(&p, b.data);
    rc = dexa__pg_exec(c, PG_NOTIFY, &p, NULL);
  }
  dexa__buf_free(&b);
  return rc;
}

void dexa__pg_set_wake(dexa__store *base, dexa__store_wake_fn fn, void *ctx) {
  pg_store *s = (pg_store *)base;
  pthread_mutex_lock(&s->wake_mu);
  s->wake = fn;
  s->wake_ctx = ctx;
  pthread_mutex_unlock(&s->wake_mu);
}

/* Calls the hook for each session of a payload from another instance. */
static void deliver(pg_store *s, char *payload) {
  char *nl = strchr(payload, '\n');
  if (!nl) return;
  *nl = '\0';
  if (strcmp(payload, s->instance) == 0) return; /* our own commit */
  pthread_mutex_lock(&s->wake_mu);
  for (char *sid = nl + 1; s->wake && sid && *sid;) {
    char *next = strchr(sid, '\n');
    if (next) *next++ = '\0';
    s->wake(s->wake_ctx, strcmp(sid, "*") == 0 ? NULL : sid);
    sid = next;
  }
  pthread_mutex_unlock(&s->wake_mu);
}

static void wake_all(pg_store *s) {
  pthread_mutex_lock(&s->wake_mu);
  if (s->wake) s->wake(s->wake_ctx, NULL);
  pthread_mutex_unlock(&s->wake_mu);
}

/* Waits for the socket (fd >= 0) or the stop pipe, for at most ms. 1 when
 * the thread must stop. */
static int wait_input(pg_listener *l, int fd, int ms) {
  struct pollfd p[2] = {{l->stop_pipe[0], POLLIN, 0}, {fd, POLLIN, 0}};
  int n = poll(p, fd >= 0 ? 2 : 1, ms);
  return n > 0 && (p[0].revents & POLLIN);
}

static PGconn *listen_connect(pg_listener *l) {
  PGconn *db = NULL;
  char why[512] = "";
  if (dexa__pg_connect(l->store->conninfo, &db, why, sizeof why) != DEXA_OK) {
    dexa__store_log(&l->store->base, DEXA_LOG_WARNING, "pg-listen",
                    "PostgreSQL: the listener for other processes' commits cannot connect: %s;"
                    " waiters poll until it is back", why);
    return NULL;
  }
  PGresult *r = PQexec(db, "LISTEN " DEXA__PG_CHANNEL);
  int ok = PQresultStatus(r) == PGRES_COMMAND_OK;
  PQclear(r);
  if (!ok) {
    PQfinish(db);
    return NULL;
  }
  return db;
}

static void *listener_main(void *arg) {
  pg_listener *l = arg;
  pthread_setname_np(pthread_self(), "dexa-pg-listen");
  PGconn *db = NULL;
  int backoff = 0;
  for (;;) {
    if (!db) {
      db = listen_connect(l);
      if (!db) {
        backoff = backoff ? backoff * 2 : BACKOFF_MIN_MS;
        if (backoff > BACKOFF_MAX_MS) backoff = BACKOFF_MAX_MS;
        if (wait_input(l, -1, backoff)) break;
        continue;
      }
      /* Whatever was notified while we were away is lost: look at all. */
      if (backoff) wake_all(l->store);
      backoff = 0;
    }
    if (wait_input(l, PQsocket(db), 1000)) break;
    if (!PQconsumeInput(db) || PQstatus(db) != CONNECTION_OK) {
      dexa__store_log(&l->store->base, DEXA_LOG_WARNING, "pg-listen-lost",
                      "PostgreSQL: the listener's connection is lost: %s; connecting again",
                      PQerrorMessage(db));
      PQfinish(db);
      db = NULL;
      backoff = BACKOFF_MIN_MS;
      continue;
    }
    for (PGnotify *n; (n = PQnotifies(db)); PQfreemem(n)) deliver(l->store, n->extra);
  }
  if (db) PQfinish(db);
  return NULL;
}

int dexa__pg_listener_start(pg_store *s, pg_listener **out) {
  *out = NULL;
  pg_listener *l = calloc(1, sizeof *l);
  if (!l) return DEXA_E_NOMEM;
  l->store = s;
  if (pipe2(l->stop_pipe, O_CLOEXEC) != 0) {
    free(l);
    return DEXA_E_IO;
  }
  if (pthread_create(&l->thread, NULL, listener_main, l) != 0) {
    close(l->stop_pipe[0]);
    close(l->stop_pipe[1]);
    free(l);
    return DEXA_E_NOMEM;
  }
  *out = l;
  return DEXA_OK;
}

void dexa__pg_listener_stop(pg_listener *l) {
  if (!l) return;
  ssize_t w;
  do {
    w = write(l->stop_pipe[1], "x", 1);
  } while (w < 0 && errno == EINTR);
  pthread_join(l->thread, NULL);
  close(l->stop_pipe[0]);
  close(l->stop_pipe[1]);
  free(l);
}
