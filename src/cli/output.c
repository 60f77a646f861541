/* Output shared by the subcommands: errors with their exit code, JSON for
 * scripts, terminal styles. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"

int cli_exit_code(int rc) {
  switch (rc) {
  case DEXA_OK: return CLI_OK;
  case DEXA_E_NOT_FOUND: return CLI_NOT_FOUND;
  case DEXA_E_BAD_STATE:
  case DEXA_E_NOT_PENDING:
  case DEXA_E_SESSION_ENDED:
  case DEXA_E_STALE_REVISION:
  case DEXA_E_EMPTY_MESSAGE:
  case DEXA_E_ALREADY_EXISTS:
  case DEXA_E_INVALID_JSON:
  case DEXA_E_INVALID_ARG:
  case DEXA_E_INVALID_RESUME_TOKEN:
  case DEXA_E_TOO_LARGE:
  case DEXA_E_STATE_LIMIT: return CLI_REFUSED;
  case DEXA_E_IO:
  case DEXA_E_CORRUPT:
  case DEXA_E_BUSY: return CLI_STORE;
  case DEXA_E_UNKNOWN_KEY:
  case DEXA_E_UNSUPPORTED: return CLI_CONFIG;
  case DEXA_E_TIMEOUT: return CLI_TIMEOUT;
  default: return CLI_FAIL;
  }
}

/* The message of an error document {"error":{"message"}}, else "". */
static const char *doc_message(const cJSON *doc) {
  return cli_str(cJSON_GetObjectItemCaseSensitive(doc, "error"), "message");
}

int cli_fail(const cli_globals *g, const char *what, int rc, const char *doc) {
  cJSON *d = doc ? cJSON_Parse(doc) : NULL;
  const char *msg = doc_message(d);
  if (g && g->json) {
    if (d && cJSON_GetObjectItemCaseSensitive(d, "error")) {
      cli_print_tree(d);
      d = NULL;
    } else {
      cJSON *e = cJSON_CreateObject(), *in = cJSON_AddObjectToObject(e, "error");
      cJSON_AddNumberToObject(in, "code", rc);
      cJSON_AddStringToObject(in, "name", dexa_error_name(rc));
      cJSON_AddStringToObject(in, "message", *msg ? msg : doc && !d ? doc : dexa_strerror(rc));
      cli_print_tree(e);
    }
  } else {
    fprintf(stderr, "dexagents: %s: %s (%s)\n", what, *msg ? msg : doc && !d ? doc : dexa_strerror(rc),
            dexa_error_name(rc));
  }
  cJSON_Delete(d);
  return cli_exit_code(rc);
}

void cli_print_json(const char *json) {
  fputs(json, stdout);
  fputc('\n', stdout);
  fflush(stdout);
}

void cli_print_tree(cJSON *doc) {
  char *text = doc ? cJSON_PrintUnformatted(doc) : NULL;
  if (text) cli_print_json(text);
  cJSON_free(text);
  cJSON_Delete(doc);
}

/* Colour when asked (1), or by default (-1) when f is a terminal, NO_COLOR
 * is not set and TERM is not "dumb". */
void cli_style_init(cli_style *s, int color, FILE *f) {
  const char *term = getenv("TERM"), *no = getenv("NO_COLOR");
  int on = color == 1 || (color == -1 && isatty(fileno(f)) && !(no && *no) &&
                          !(term && strcmp(term, "dumb") == 0));
  s->bold = on ? "\033[1m" : "";
  s->dim = on ? "\033[2m" : "";
  s->user = on ? "\033[1;34m" : "";
  s->model = on ? "\033[1;32m" : "";
  s->tool = on ? "\033[33m" : "";
  s->warn = on ? "\033[1;35m" : "";
  s->err = on ? "\033[1;31m" : "";
  s->reset = on ? "\033[0m" : "";
}

const char *cli_store_name(const char *uri) {
  static char name[1024];
  return uri && dexa_store_display_name(uri, name, sizeof name) == DEXA_OK ? name : "(store)";
}

const char *cli_str(const cJSON *o, const char *k) {
  const char *s = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(o, k));
  return s ? s : "";
}

int64_t cli_num(const cJSON *o, const char *k) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
  return cJSON_IsNumber(v) ? (int64_t)v->valuedouble : 0;
}

int cli_call(dexa_runtime *rt, const char *sid, const char *rpc, const char *input, cJSON **doc,
             char **err_doc) {
  char *out = NULL;
  size_t len = 0;
  if (doc) *doc = NULL;
  if (err_doc) *err_doc = NULL;
  int rc = dexa_runtime_call(rt, sid, rpc, input, strlen(input), &out, &len);
  if (rc == DEXA_OK && doc) {
    *doc = cJSON_ParseWithLength(out, len);
    if (!*doc) rc = DEXA_E_NOMEM;
  }
  if (rc != DEXA_OK && err_doc) {
    *err_doc = out;
    out = NULL;
  }
  dexa_free(out);
  return rc;
}
