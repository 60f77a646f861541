/* Step decisions: the next Steps to run (parallel when several). */
#include <string.h>

#include "core/core.h"

void dexa__decision_init(dexa__decision *d) {
  dexa__buf_init(&d->b);
  dexa__buf_puts(&d->b, "{\"next\":[");
  d->next_count = 0;
}

void dexa__decision_next(dexa__decision *d, const char *step, const char *input_json,
                         size_t input_len) {
  if (d->next_count++) dexa__buf_putc(&d->b, ',');
  dexa__buf_puts(&d->b, "{\"step\":");
  dexa__buf_json_cstr(&d->b, step);
  dexa__buf_puts(&d->b, ",\"input\":");
  if (input_json) dexa__buf_append(&d->b, input_json, input_len);
  else dexa__buf_puts(&d->b, "{}");
  dexa__buf_putc(&d->b, '}');
}

int dexa__decision_commit(dexa__ctx *c, dexa__decision *d) {
  dexa__buf_puts(&d->b, "]}");
  int rc = d->b.oom ? DEXA_E_NOMEM : dexa__result_set_decision(c->result, d->b.data, d->b.len);
  dexa__buf_free(&d->b);
  return rc;
}

int dexa__decide_next(dexa__ctx *c, const char *step, const char *input_json) {
  dexa__decision d;
  dexa__decision_init(&d);
  dexa__decision_next(&d, step, input_json, input_json ? strlen(input_json) : 0);
  return dexa__decision_commit(c, &d);
}
