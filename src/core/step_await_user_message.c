/* AwaitUserMessage: the idle Step between turns. WaitFor returns at once
 * when a message is queued, else waits for a signal on UserMessageSignals.
 * Execute starts the next turn: with every steered message when some were
 * steered, else with the oldest queued message.
 *
 * Every queued message also left a signal. Returning at once still takes
 * the signals waiting then (a condition with min 0), for the queue already
 * says what they would: left behind, they would end the next idle wait at
 * once, only for Execute to find the queue empty and wait again. */
#include <stdlib.h>

#include "core/turns.h"

static const char wait_for_signal[] =
    "{\"mode\":\"any\",\"conditions\":[{\"id\":\"message\",\"channel\":\"" CHAN_USER_MESSAGE_SIGNALS
    "\",\"min\":1}]}";

static const char take_signals[] =
    "{\"mode\":\"any\",\"conditions\":[{\"id\":\"message\",\"channel\":\"" CHAN_USER_MESSAGE_SIGNALS
    "\",\"min\":0}]}";

static int wait_for(dexa__ctx *c) {
  dexa__queue q;
  int rc = dexa__queue_load(c, &q);
  size_t n = q.count;
  dexa__queue_free(&q);
  if (rc != DEXA_OK) return rc;
  if (n) return dexa__result_set_wait(c->result, take_signals, sizeof take_signals - 1);
  return dexa__result_set_wait(c->result, wait_for_signal, sizeof wait_for_signal - 1);
}

static int execute(dexa__ctx *c) {
  dexa__queue q;
  int rc = dexa__queue_load(c, &q);
  if (rc != DEXA_OK) {
    dexa__queue_free(&q);
    return rc;
  }
  dexa__queued **take = calloc(q.count + 1, sizeof *take);
  size_t n = 0;
  for (size_t i = 0; take && i < q.count; i++)
    if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(q.items[i].entry, "steered")))
      take[n++] = &q.items[i];
  if (take && n == 0 && q.count) take[n++] = &q.items[0];
  if (!take) rc = DEXA_E_NOMEM;
  else if (n == 0) rc = dexa__decide_next(c, STEP_AWAIT_USER_MESSAGE, NULL); /* deleted meanwhile */
  else rc = dexa__turn_start(c, take, n);
  free(take);
  dexa__queue_free(&q);
  return rc;
}

int dexa__step_await_user_message(dexa__ctx *c) {
  return c->call->kind == DEXA_CALL_WAIT_FOR ? wait_for(c) : execute(c);
}
