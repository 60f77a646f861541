/* The flow description (dexa_flow_describe) as the runtime needs it: the
 * start Step, each Step's default options, and the RPCs. */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/runtime_internal.h"
#include "util/json_num.h"

static const dexa__step_opts default_opts = {
    .max_attempts = 3,
    .initial_backoff_ms = 1000,
    .backoff_coefficient = 2.0,
    .max_backoff_ms = 60000,
    .timeout_ms = 900000,
};

static void read_int(const cJSON *o, const char *k, int64_t *out) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
  (void)dexa__json_exact_int(v, out);
}

static void read_bool(const cJSON *o, const char *k, int32_t *out) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
  if (cJSON_IsBool(v)) *out = cJSON_IsTrue(v) ? 1 : 0;
}

/* Unknown keys are ignored so that newer cores can add options. */
static void overlay_obj(dexa__step_opts *o, const cJSON *obj) {
  int64_t max_attempts = o->max_attempts;
  read_int(obj, "max_attempts", &max_attempts);
  o->max_attempts = max_attempts < 0 ? 0 : (int32_t)(max_attempts > 1000000 ? 1000000 : max_attempts);
  read_int(obj, "initial_backoff_ms", &o->initial_backoff_ms);
  read_int(obj, "max_backoff_ms", &o->max_backoff_ms);
  read_int(obj, "timeout_ms", &o->timeout_ms);
  const cJSON *coef = cJSON_GetObjectItemCaseSensitive(obj, "backoff_coefficient");
  if (cJSON_IsNumber(coef)) o->backoff_coefficient = coef->valuedouble;
  read_bool(obj, "has_wait_for", &o->has_wait_for);
  read_bool(obj, "locked", &o->locked);
  const cJSON *rec = cJSON_GetObjectItemCaseSensitive(obj, "recovery");
  if (cJSON_IsString(rec) && strlen(rec->valuestring) < sizeof o->recovery)
    snprintf(o->recovery, sizeof o->recovery, "%s", rec->valuestring);
  else if (cJSON_IsNull(rec))
    o->recovery[0] = '\0';
  if (o->initial_backoff_ms < 0) o->initial_backoff_ms = 0;
  if (o->max_backoff_ms < 0) o->max_backoff_ms = 0;
  if (o->timeout_ms <= 0) o->timeout_ms = default_opts.timeout_ms;
  if (!(o->backoff_coefficient >= 1.0)) o->backoff_coefficient = 1.0;
}

int dexa__opts_overlay(dexa__step_opts *o, const char *json, size_t len) {
  if (!json || len == 0) return DEXA_OK;
  cJSON *obj = cJSON_ParseWithLength(json, len);
  if (!obj) return DEXA_E_INVALID_JSON;
  int rc = DEXA_OK;
  if (cJSON_IsObject(obj))
    overlay_obj(o, obj);
  else if (!cJSON_IsNull(obj))
    rc = DEXA_E_INVALID_JSON;
  cJSON_Delete(obj);
  return rc;
}

int dexa__row_opts(const dexa_runtime *rt, const dexa__step_row *row, dexa__step_opts *out) {
  const dexa__step_def *def = dexa__flow_step(&rt->desc, row->step_type);
  *out = def ? def->opts : default_opts;
  return dexa__opts_overlay(out, row->options, row->options_len);
}

int64_t dexa__backoff_ms(const dexa__step_opts *o, int32_t attempt) {
  double b = (double)o->initial_backoff_ms * pow(o->backoff_coefficient, attempt > 1 ? attempt - 1 : 0);
  if (b > (double)o->max_backoff_ms) b = (double)o->max_backoff_ms;
  return b < 0 ? 0 : (int64_t)b;
}

const dexa__step_def *dexa__flow_step(const dexa__flow_desc *d, const char *name) {
  for (size_t i = 0; name && i < d->step_count; i++)
    if (strcmp(d->steps[i].name, name) == 0) return &d->steps[i];
  return NULL;
}

const dexa__rpc_def *dexa__flow_rpc(const dexa__flow_desc *d, const char *name) {
  for (size_t i = 0; name && i < d->rpc_count; i++)
    if (strcmp(d->rpcs[i].name, name) == 0) return &d->rpcs[i];
  return NULL;
}

static int parse_steps(dexa__flow_desc *d, const cJSON *steps) {
  int n = cJSON_GetArraySize(steps);
  d->steps = calloc(n > 0 ? (size_t)n : 1, sizeof *d->steps);
  if (!d->steps) return DEXA_E_NOMEM;
  const cJSON *s;
  cJSON_ArrayForEach(s, steps) {
    const cJSON *name = cJSON_GetObjectItemCaseSensitive(s, "name");
    if (!cJSON_IsString(name) || strlen(name->valuestring) >= DEXA__NAME_MAX)
      return DEXA_E_INVALID_JSON;
    dexa__step_def *def = &d->steps[d->step_count];
    def->name = strdup(name->valuestring);
    if (!def->name) return DEXA_E_NOMEM;
    d->step_count++;
    def->opts = default_opts;
    const cJSON *opts = cJSON_GetObjectItemCaseSensitive(s, "options");
    if (cJSON_IsObject(opts)) overlay_obj(&def->opts, opts);
  }
  return DEXA_OK;
}

static int parse_rpcs(dexa__flow_desc *d, const cJSON *rpcs) {
  int n = cJSON_GetArraySize(rpcs);
  d->rpcs = calloc(n > 0 ? (size_t)n : 1, sizeof *d->rpcs);
  if (!d->rpcs) return DEXA_E_NOMEM;
  const cJSON *r;
  cJSON_ArrayForEach(r, rpcs) {
    const cJSON *name = cJSON_GetObjectItemCaseSensitive(r, "name");
    if (!cJSON_IsString(name)) return DEXA_E_INVALID_JSON;
    dexa__rpc_def *def = &d->rpcs[d->rpc_count];
    def->name = strdup(name->valuestring);
    if (!def->name) return DEXA_E_NOMEM;
    d->rpc_count++;
    def->read_only = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(r, "read_only"));
    def->interrupts = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(r, "interrupts"));
  }
  return DEXA_OK;
}

int dexa__flow_desc_parse(dexa__flow_desc *d, const char *json, size_t len, char *errmsg,
                          size_t n) {
  memset(d, 0, sizeof *d);
  int rc = DEXA_E_INVALID_JSON;
  cJSON *root = cJSON_ParseWithLength(json, len);
  const cJSON *ft = cJSON_GetObjectItemCaseSensitive(root, "flow_type");
  const cJSON *start = cJSON_GetObjectItemCaseSensitive(root, "start_step");
  const cJSON *steps = cJSON_GetObjectItemCaseSensitive(root, "steps");
  const cJSON *rpcs = cJSON_GetObjectItemCaseSensitive(root, "rpcs");
  if (!cJSON_IsString(ft) || !cJSON_IsString(start) || !cJSON_IsArray(steps)) goto cleanup;
  d->flow_type = strdup(ft->valuestring);
  d->start_step = strdup(start->valuestring);
  rc = (d->flow_type && d->start_step) ? parse_steps(d, steps) : DEXA_E_NOMEM;
  if (rc == DEXA_OK && cJSON_IsArray(rpcs)) rc = parse_rpcs(d, rpcs);
  if (rc == DEXA_OK && !dexa__flow_step(d, d->start_step)) rc = DEXA_E_INVALID_JSON;
cleanup:
  if (rc != DEXA_OK) {
    if (errmsg) snprintf(errmsg, n, "invalid flow description: %s", dexa_strerror(rc));
    dexa__flow_desc_free(d);
  }
  cJSON_Delete(root);
  return rc;
}

void dexa__flow_desc_free(dexa__flow_desc *d) {
  for (size_t i = 0; i < d->step_count; i++) free(d->steps[i].name);
  for (size_t i = 0; i < d->rpc_count; i++) free(d->rpcs[i].name);
  free(d->steps);
  free(d->rpcs);
  free(d->flow_type);
  free(d->start_step);
  memset(d, 0, sizeof *d);
}
