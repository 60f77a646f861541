/* Waits (the WaitFor result) and when they are satisfied, as flow.h says:
 * "all" needs every condition; "any" tries timers first, then channels, in
 * declaration order, and only the winner consumes. Several conditions on
 * one channel share its queue: every minimum is reserved first, the rest
 * is handed out in declaration order. No I/O: the caller supplies the
 * channel counts and which timers fired, and consumes what the plan says.
 * dexa_wait_evaluate (the hosts' helper) is built on this. */
#ifndef DEXA_FLOW_WAIT_H
#define DEXA_FLOW_WAIT_H

#include <cjson/cJSON.h>
#include <stddef.h>
#include <stdint.h>

typedef struct dexa__wait_cond {
  const char *id;      /* borrowed from the parsed wait */
  const char *channel; /* NULL for a timer */
  int64_t min, max;    /* max < 0: everything queued */
  int64_t timer_ms;    /* timers: as given, or -1 for a stored deadline */
  int64_t deadline;    /* timers: absolute ms */
  int64_t count;       /* in: messages queued on the channel */
  int fired;           /* in: the timer fired */
  int64_t take;        /* out: messages to consume */
} dexa__wait_cond;

typedef struct dexa__wait {
  cJSON *root;
  int all;
  dexa__wait_cond *conds;
  size_t n;
} dexa__wait;

/* Parses a wait: {"mode":"any"|"all","conditions":[...]}; NULL, "" or null
 * is the empty wait (ready at once). A timer's deadline is start_ms +
 * timer_ms, or its "deadline_ms" when stored that way. Returns DEXA_OK,
 * DEXA_E_INVALID_JSON or DEXA_E_NOMEM; free w with dexa__wait_free either
 * way. */
int dexa__wait_parse(dexa__wait *w, const char *json, size_t len, int64_t start_ms);
void dexa__wait_free(dexa__wait *w);

/* With every condition's count (channels) and fired (timers) set: 0 when
 * the wait is not satisfied; otherwise 1 and each condition's take, and
 * *winner the index of the winning condition of an "any" wait (SIZE_MAX
 * for "all" or no condition: every channel condition consumes). */
int dexa__wait_plan(dexa__wait *w, size_t *winner);

/* 1 when condition i consumes under the plan (see dexa__wait_plan). */
int dexa__wait_consumes(const dexa__wait *w, size_t winner, size_t i);

/* The earliest deadline of a timer that has not fired, or INT64_MAX. */
int64_t dexa__wait_next_due(const dexa__wait *w);

#endif
