/* The runtime's log callback (dexa_runtime_options.log): the errors worker
 * threads handle themselves, rate-limited per kind of message. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "runtime/runtime_internal.h"

/* Counts a message of kind; returns 1 when it may be passed, with
 * *left_out the repeats that were not since the last one passed. */
static int admit(dexa_runtime *rt, const char *kind, int64_t now, int64_t *left_out) {
  *left_out = 0;
  size_t n = sizeof rt->log_sites / sizeof rt->log_sites[0];
  pthread_mutex_lock(&rt->log_mu);
  struct dexa__log_site *site = NULL, *oldest = &rt->log_sites[0];
  for (size_t i = 0; i < n && !site; i++) {
    struct dexa__log_site *s = &rt->log_sites[i];
    if (s->kind == kind || (s->kind && strcmp(s->kind, kind) == 0)) site = s;
    else if (!s->kind) site = s;
    else if (s->window_ms < oldest->window_ms) oldest = s;
  }
  if (!site) site = oldest; /* more kinds than slots: the oldest one's window goes */
  int pass = 1;
  if (site->kind != kind && (!site->kind || strcmp(site->kind, kind) != 0)) {
    site->kind = kind;
    site->left_out = 0;
  } else if (now - site->window_ms < DEXA__LOG_WINDOW_MS) {
    site->left_out++;
    pass = 0;
  }
  if (pass) {
    *left_out = site->left_out;
    site->left_out = 0;
    site->window_ms = now;
  }
  pthread_mutex_unlock(&rt->log_mu);
  return pass;
}

void dexa__log(dexa_runtime *rt, int32_t level, const char *kind, const char *fmt, ...) {
  if (!rt || !rt->log) return;
  int64_t left_out = 0;
  if (!admit(rt, kind, dexa__mono_ms(), &left_out)) return;
  char msg[1024];
  va_list ap;
  va_start(ap, fmt);
  int len = vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  if (len < 0) return;
  size_t used = (size_t)len < sizeof msg ? (size_t)len : sizeof msg - 1;
  if (left_out > 0)
    snprintf(msg + used, sizeof msg - used, " (%lld more like this were not logged)",
             (long long)left_out);
  rt->log(rt->log_user, level, msg);
}

const char *dexa__store_error(const dexa_runtime *rt, int rc, char *buf, size_t n) {
  if (!rt->store || dexa__store_cause(rt->store, rc, buf, n) != DEXA_OK)
    snprintf(buf, n, "%s", dexa_strerror(rc));
  return buf;
}
