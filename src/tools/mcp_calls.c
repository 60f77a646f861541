/* Tool calls that may wait for the person. A tools/call runs on a runner
 * thread of its own, so the worker thread that waits for it is free to
 * handle what the server asks meanwhile (elicitation, sampling), and to end
 * its Step with a question while the server call stays open: the call is
 * parked with the server's open request, its deadlines held for the
 * question's time. When the answer runs the Step again on this worker, the
 * source takes the call back and answers the open request: the same server
 * call goes on, nothing runs twice. A parked call that nobody takes back
 * (the answer ran on another worker, the worker restarted, the question
 * timed out) ends when its hold does: the request times out and is
 * cancelled like any other.
 *
 * Locks: the call's state is under its client's mutex (the runner, the
 * message readers and the waiting thread all take it); the parking has its
 * own mutex, never held with the client's. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "dexagents/errors.h"
#include "tools/mcp_internal.h"

#define LISTEN_WAIT_MS 5000

void dexa__mcp_server_request_free(dexa__mcp_server_request *r) {
  while (r) {
    dexa__mcp_server_request *next = r->next;
    cJSON_Delete(r->msg);
    free(r);
    r = next;
  }
}

static void call_free(dexa__mcp_call *call) {
  cJSON_Delete(call->params);
  cJSON_Delete(call->result);
  dexa__mcp_server_request_free(call->inbox);
  dexa__mcp_server_request_free(call->waiting);
  free(call);
}

void dexa__mcp_call_unref(dexa__mcp_call *call) {
  if (!call) return;
  dexa__mcp_client *c = call->c;
  pthread_mutex_lock(&c->mu);
  int last = --call->refs == 0;
  pthread_mutex_unlock(&c->mu);
  if (last) call_free(call);
}

/* The runner's stop check: the waiting thread saw the turn stopped. */
static int stop_asked(void *arg) {
  dexa__mcp_call *call = arg;
  pthread_mutex_lock(&call->c->mu);
  int stop = call->stop;
  pthread_mutex_unlock(&call->c->mu);
  return stop;
}

static void *runner(void *arg) {
  dexa__mcp_call *call = arg;
  dexa__mcp_client *c = call->c;
  cJSON *params = call->params, *result = NULL;
  call->params = NULL;
  int64_t code = 0;
  char err[600] = "";
  dexa__mcp_cancel cancel = {stop_asked, call};
  int rc = dexa__mcp_request_for(c, call, "tools/call", params, call->timeout_ms, &cancel, &result,
                                 &code, err, sizeof err);
  pthread_mutex_lock(&c->mu);
  call->done = 1;
  call->rc = rc;
  call->result = result;
  call->rpc_code = code;
  memcpy(call->err, err, sizeof call->err);
  call->hold_until_ms = 0;
  int last = --call->refs == 0;
  c->runners--;
  pthread_cond_broadcast(&c->cv);
  pthread_mutex_unlock(&c->mu);
  if (last) call_free(call);
  return NULL;
}

int dexa__mcp_call_start(dexa__mcp_client *c, const char *key, cJSON *params, int64_t timeout_ms,
                         dexa__mcp_call **out) {
  *out = NULL;
  dexa__mcp_call *call = calloc(1, sizeof *call);
  if (!call) {
    cJSON_Delete(params);
    return DEXA_E_NOMEM;
  }
  call->c = c;
  call->refs = 2; /* the runner's and the caller's */
  snprintf(call->key, sizeof call->key, "%s", key ? key : "");
  call->params = params;
  call->timeout_ms = timeout_ms;
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
  pthread_mutex_lock(&c->mu);
  c->runners++; /* closing the client waits for its runners */
  int listen = c->http && c->era != DEXA__MCP_ERA_MODERN &&
               (c->cfg.elicitation || c->cfg.sampling != DEXA__MCP_SAMPLING_OFF || c->cfg.rootc);
  pthread_mutex_unlock(&c->mu);
  /* Requests the server sends apart from our tools/call come on the
   * listen stream: open it first. */
  if (listen) dexa__mcp_http_listen(c->http, LISTEN_WAIT_MS);
  pthread_t t;
  int err = pthread_create(&t, &attr, runner, call);
  pthread_attr_destroy(&attr);
  if (err) {
    pthread_mutex_lock(&c->mu);
    c->runners--;
    pthread_mutex_unlock(&c->mu);
    call_free(call);
    return DEXA_E_NOMEM;
  }
  *out = call;
  return DEXA_OK;
}

void dexa__mcp_call_deliver(dexa__mcp_call *owner, cJSON *msg, uint64_t generation) {
  dexa__mcp_server_request *r = calloc(1, sizeof *r);
  if (!r) {
    cJSON_Delete(msg);
    return;
  }
  r->msg = msg;
  r->generation = generation;
  dexa__mcp_server_request **tail = &owner->inbox;
  while (*tail) tail = &(*tail)->next;
  *tail = r;
  /* Until the waiting thread takes it, the call's clock stops. */
  owner->hold_until_ms = dexa__mcp_now_ms() + owner->c->cfg.question_timeout_ms;
  pthread_cond_broadcast(&owner->c->cv);
}

int dexa__mcp_call_next(dexa__mcp_call *call, dexa__mcp_server_request **req,
                        int (*stopped)(void *ctx), void *ctx) {
  dexa__mcp_client *c = call->c;
  *req = NULL;
  pthread_mutex_lock(&c->mu);
  while (!call->inbox && !call->done) {
    if (stopped && !call->stop) { /* the host's check, outside the lock */
      pthread_mutex_unlock(&c->mu);
      int stop = stopped(ctx);
      pthread_mutex_lock(&c->mu);
      if (stop) {
        call->stop = 1;
        pthread_cond_broadcast(&c->cv);
      }
    }
    struct timespec ts;
    int64_t until = dexa__mcp_now_ms() + (stopped ? DEXA__MCP_STOP_POLL_MS : 1000);
    ts.tv_sec = (time_t)(until / 1000);
    ts.tv_nsec = (long)(until % 1000) * 1000000L;
    pthread_cond_timedwait(&c->cv, &c->mu, &ts);
  }
  int got = call->inbox != NULL;
  if (got) {
    *req = call->inbox;
    call->inbox = (*req)->next;
    (*req)->next = NULL;
  }
  pthread_mutex_unlock(&c->mu);
  return got;
}

void dexa__mcp_call_hold(dexa__mcp_call *call, int64_t ms) {
  pthread_mutex_lock(&call->c->mu);
  call->hold_until_ms = ms > 0 ? dexa__mcp_now_ms() + ms : 0;
  pthread_mutex_unlock(&call->c->mu);
}

/* ---- the parking ---- */

void dexa__mcp_parking_init(dexa__mcp_parking *pk) {
  pthread_mutex_init(&pk->mu, NULL);
  pk->head = NULL;
}

/* 1 when a parked call can no longer be taken back. */
static int stale(dexa__mcp_call *call) {
  pthread_mutex_lock(&call->c->mu);
  int s = call->done || dexa__mcp_now_ms() >= call->parked_until_ms;
  pthread_mutex_unlock(&call->c->mu);
  return s;
}

void dexa__mcp_park(dexa__mcp_parking *pk, dexa__mcp_call *call, dexa__mcp_server_request *req,
                    int64_t ms) {
  pthread_mutex_lock(&call->c->mu);
  dexa__mcp_server_request_free(call->waiting);
  call->waiting = req;
  call->parked_until_ms = dexa__mcp_now_ms() + ms;
  call->hold_until_ms = call->parked_until_ms;
  pthread_mutex_unlock(&call->c->mu);
  pthread_mutex_lock(&pk->mu);
  call->next_parked = pk->head;
  pk->head = call;
  pthread_mutex_unlock(&pk->mu);
}

dexa__mcp_call *dexa__mcp_unpark(dexa__mcp_parking *pk, const char *key,
                                 dexa__mcp_server_request **req) {
  *req = NULL;
  dexa__mcp_call *found = NULL, *drop = NULL;
  pthread_mutex_lock(&pk->mu);
  for (dexa__mcp_call **pp = &pk->head; *pp;) {
    dexa__mcp_call *call = *pp;
    if (!found && strcmp(call->key, key) == 0) {
      *pp = call->next_parked;
      found = call;
    } else if (stale(call)) { /* expired or over: let it go */
      *pp = call->next_parked;
      call->next_parked = drop;
      drop = call;
    } else {
      pp = &call->next_parked;
    }
  }
  pthread_mutex_unlock(&pk->mu);
  while (drop) {
    dexa__mcp_call *next = drop->next_parked;
    dexa__mcp_call_unref(drop);
    drop = next;
  }
  if (found) {
    pthread_mutex_lock(&found->c->mu);
    *req = found->waiting;
    found->waiting = NULL;
    found->next_parked = NULL;
    pthread_mutex_unlock(&found->c->mu);
  }
  return found;
}

void dexa__mcp_parking_free(dexa__mcp_parking *pk) {
  pthread_mutex_lock(&pk->mu);
  dexa__mcp_call *call = pk->head;
  pk->head = NULL;
  pthread_mutex_unlock(&pk->mu);
  while (call) {
    dexa__mcp_call *next = call->next_parked;
    dexa__mcp_call_hold(call, 0); /* its request times out and is cancelled */
    dexa__mcp_call_unref(call);
    call = next;
  }
  pthread_mutex_destroy(&pk->mu);
}
