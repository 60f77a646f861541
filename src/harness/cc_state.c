/* The Claude session in the Dex session's state (see cc_state.h). Entries
 * are written once and never rewritten: a long session costs its growth. */
#include "harness/cc_state.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "dexagents/errors.h"

void dexa__cc_pending_free(dexa__cc_pending *p, size_t n) {
  for (size_t i = 0; p && i < n; i++) {
    free(p[i].id);
    free(p[i].name);
    free(p[i].result);
  }
  free(p);
}

void dexa__cc_state_free(dexa__cc_state *s) {
  free(s->sid);
  free(s->at);
  dexa__cc_pending_free(s->pending, s->pending_count);
  dexa__buf_free(&s->jsonl);
  memset(s, 0, sizeof *s);
}

static int replace(char **dst, const cJSON *v) {
  const char *s = cJSON_GetStringValue(v);
  free(*dst);
  *dst = s && *s ? strdup(s) : NULL;
  return !s || !*s || *dst ? DEXA_OK : DEXA_E_NOMEM;
}

static int load_pending(dexa__cc_state *s, const cJSON *list) {
  dexa__cc_pending_free(s->pending, s->pending_count);
  s->pending = NULL;
  s->pending_count = 0;
  size_t n = (size_t)cJSON_GetArraySize(list);
  if (!n) return DEXA_OK;
  if (!(s->pending = calloc(n, sizeof *s->pending))) return DEXA_E_NOMEM;
  const cJSON *p;
  cJSON_ArrayForEach(p, list) {
    dexa__cc_pending *d = &s->pending[s->pending_count++];
    const cJSON *result = cJSON_GetObjectItemCaseSensitive(p, "result");
    if (replace(&d->id, cJSON_GetObjectItemCaseSensitive(p, "id")) != DEXA_OK ||
        replace(&d->name, cJSON_GetObjectItemCaseSensitive(p, "name")) != DEXA_OK)
      return DEXA_E_NOMEM;
    if (!d->id) return DEXA_E_CORRUPT;
    if (result && !(d->result = cJSON_PrintUnformatted(result))) return DEXA_E_NOMEM;
    d->is_error = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(p, "is_error"));
  }
  return DEXA_OK;
}

static int load_entry(dexa__cc_state *s, const char *json, size_t len) {
  cJSON *e = cJSON_ParseWithLength(json, len);
  int rc = DEXA_E_CORRUPT;
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(e, "v");
  const cJSON *jsonl = cJSON_GetObjectItemCaseSensitive(e, "jsonl");
  if (!cJSON_IsNumber(v) || v->valueint != 1 || !cJSON_IsString(jsonl)) goto cleanup;
  rc = replace(&s->sid, cJSON_GetObjectItemCaseSensitive(e, "sid"));
  if (rc == DEXA_OK) rc = replace(&s->at, cJSON_GetObjectItemCaseSensitive(e, "at"));
  if (rc == DEXA_OK) rc = load_pending(s, cJSON_GetObjectItemCaseSensitive(e, "pending"));
  dexa__buf_puts(&s->jsonl, jsonl->valuestring);
  if (rc == DEXA_OK && s->jsonl.oom) rc = DEXA_E_NOMEM;
cleanup:
  cJSON_Delete(e);
  return rc;
}

int dexa__cc_state_load(dexa__cc_state *s, const dexa_model_request *req) {
  memset(s, 0, sizeof *s);
  dexa__buf_init(&s->jsonl);
  const char *json;
  size_t len;
  /* This harness only appends; a set state is not its own. */
  if (dexa_model_request_harness_state(req, &json, &len) == DEXA_OK && json) return DEXA_E_CORRUPT;
  size_t n = dexa_model_request_harness_entry_count(req);
  for (size_t i = 0; i < n; i++) {
    int rc = dexa_model_request_harness_entry_at(req, i, &json, &len);
    if (rc == DEXA_OK) rc = load_entry(s, json, len);
    if (rc != DEXA_OK) return rc;
  }
  return DEXA_OK;
}

static int make_dir(const char *path) {
  return mkdir(path, 0700) == 0 || errno == EEXIST ? DEXA_OK : DEXA_E_IO;
}

int dexa__cc_state_materialize(const dexa__cc_state *s, const char *config_dir) {
  if (!s->sid) return DEXA_OK;
  /* A session id is the CLI's UUID: never a path. */
  if (strspn(s->sid, "0123456789abcdefABCDEF-") != strlen(s->sid)) return DEXA_E_CORRUPT;
  char path[4096];
  snprintf(path, sizeof path, "%s/projects", config_dir);
  if (make_dir(path) != DEXA_OK) return DEXA_E_IO;
  snprintf(path, sizeof path, "%s/projects/" DEXA__CC_PROJECT, config_dir);
  if (make_dir(path) != DEXA_OK) return DEXA_E_IO;
  snprintf(path, sizeof path, "%s/projects/" DEXA__CC_PROJECT "/%s.jsonl", config_dir, s->sid);
  FILE *f = fopen(path, "wx");
  if (!f) return DEXA_E_IO;
  size_t w = s->jsonl.len ? fwrite(s->jsonl.data, 1, s->jsonl.len, f) : 0;
  int bad = fclose(f) != 0 || w != s->jsonl.len;
  return bad ? DEXA_E_IO : DEXA_OK;
}

void dexa__cc_state_entry(dexa__buf *out, const char *sid, const char *at,
                          const dexa__cc_pending *pending, size_t n, const char *jsonl,
                          size_t jsonl_len) {
  dexa__buf_puts(out, "{\"v\":1,\"sid\":");
  dexa__buf_json_cstr(out, sid ? sid : "");
  dexa__buf_puts(out, ",\"at\":");
  dexa__buf_json_cstr(out, at ? at : "");
  dexa__buf_puts(out, ",\"pending\":[");
  for (size_t i = 0; i < n; i++) {
    dexa__buf_puts(out, i ? ",{\"id\":" : "{\"id\":");
    dexa__buf_json_cstr(out, pending[i].id);
    dexa__buf_puts(out, ",\"name\":");
    dexa__buf_json_cstr(out, pending[i].name ? pending[i].name : "");
    if (pending[i].result) {
      dexa__buf_puts(out, ",\"result\":");
      dexa__buf_puts(out, pending[i].result);
      dexa__buf_puts(out, pending[i].is_error ? ",\"is_error\":true" : ",\"is_error\":false");
    }
    dexa__buf_putc(out, '}');
  }
  dexa__buf_puts(out, "],\"jsonl\":");
  dexa__buf_json_str(out, jsonl ? jsonl : "", jsonl_len);
  dexa__buf_putc(out, '}');
}
