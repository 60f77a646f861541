/* dexagents store check|vacuum [URI], store copy SRC DST: the store
 * administration of dexagents/store.h. URI defaults to the configured
 * store. */
#include <string.h>

#include "cli/cli.h"

static void print_check(const cJSON *r) {
  const cJSON *p;
  cJSON_ArrayForEach(p, cJSON_GetObjectItemCaseSensitive(r, "problems")) {
    const char *sid = cli_str(p, "session_id");
    printf("problem%s%s: %s\n", *sid ? " in " : "", sid, cli_str(p, "problem"));
  }
  printf("%s: %lld sessions, %lld attributes, %lld channel messages, %lld Step rows, %lld events"
         "%s\n",
         cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(r, "ok")) ? "ok" : "PROBLEMS",
         (long long)cli_num(r, "sessions"), (long long)cli_num(r, "attributes"),
         (long long)cli_num(r, "channel_messages"), (long long)cli_num(r, "steps"),
         (long long)cli_num(r, "events"), "");
}

static void print_text(const char *what, const cJSON *r) {
  if (!strcmp(what, "check")) {
    print_check(r);
  } else if (!strcmp(what, "vacuum")) {
    printf("%lld bytes before, %lld after\n", (long long)cli_num(r, "bytes_before"),
           (long long)cli_num(r, "bytes_after"));
  } else {
    printf("copied %lld sessions: %lld attributes, %lld channel messages, %lld Step rows, "
           "%lld events\n",
           (long long)cli_num(r, "sessions"), (long long)cli_num(r, "attributes"),
           (long long)cli_num(r, "channel_messages"), (long long)cli_num(r, "steps"),
           (long long)cli_num(r, "events"));
  }
}

int cmd_store(int argc, char **argv) {
  cli_globals g = {NULL, NULL, 0, -1, NULL, NULL, NULL};
  const char *pos[3];
  int npos;
  int rc = cli_parse(argc, argv, 2, &g, NULL, pos, 3, &npos, "store");
  if (rc != CLI_OK) return rc;
  const char *what = npos ? pos[0] : "";
  int copy = !strcmp(what, "copy");
  if ((!copy && strcmp(what, "check") && strcmp(what, "vacuum")) || (copy && npos != 3) ||
      (!copy && npos > 2)) {
    fprintf(stderr, "dexagents store: %s\n", npos ? "bad arguments" : "check, vacuum or copy?");
    cli_print_usage("store", stderr);
    return CLI_USAGE;
  }
  cli_config cfg;
  const char *uri = npos > 1 ? pos[1] : g.store;
  int loaded = !uri;
  if (loaded && (rc = cli_config_load(&cfg, g.config)) != CLI_OK) {
    cli_config_free(&cfg);
    return rc;
  }
  if (loaded) uri = cfg.store;
  char *out = NULL, err[512] = "";
  int drc = copy ? dexa_store_copy(pos[1], pos[2], &out, NULL, err, sizeof err)
            : !strcmp(what, "check") ? dexa_store_check(uri, &out, NULL, err, sizeof err)
                                     : dexa_store_vacuum(uri, &out, NULL, err, sizeof err);
  cJSON *r = out ? cJSON_Parse(out) : NULL;
  if (r && g.json) cli_print_json(out);
  else if (r) print_text(what, r);
  if (drc != DEXA_OK) {
    rc = cli_exit_code(drc);
    if (!r || !g.json) rc = cli_fail(&g, copy ? "store copy" : cli_store_name(uri), drc, *err ? err : NULL);
    /* a check that ran and found problems, or a store that cannot be read */
    if (drc == DEXA_E_CORRUPT || drc == DEXA_E_IO) rc = CLI_STORE;
  }
  cJSON_Delete(r);
  dexa_free(out);
  if (loaded) cli_config_free(&cfg);
  return rc;
}
