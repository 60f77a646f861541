/* The option parser of every subcommand: the global options anywhere on
 * the line, the subcommand's own, "--name value" or "--name=value", and
 * positionals; "--" ends the options. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"

static int usage_error(const char *cmd, const char *fmt, const char *arg) {
  fprintf(stderr, "dexagents %s: ", cmd);
  fprintf(stderr, fmt, arg);
  fprintf(stderr, "\n");
  cli_print_usage(cmd, stderr);
  return CLI_USAGE;
}

/* The global options (main.c answers --help before any parsing); 1 when arg was one (consumed *i as needed), 0 when
 * not, -1 on a usage error. */
static int global_opt(int argc, char **argv, int *i, cli_globals *g, const char *cmd) {
  const char *a = argv[*i], *eq = strchr(a, '='), *v = NULL;
  size_t n = eq ? (size_t)(eq - a) : strlen(a);
  static const char *const valued[] = {"--config", "--store", "--color"};
  for (size_t k = 0; k < 3; k++) {
    if (strlen(valued[k]) != n || strncmp(a, valued[k], n) != 0) continue;
    if (eq) v = eq + 1;
    else if (*i + 1 < argc) v = argv[++*i];
    else return usage_error(cmd, "%s needs a value", valued[k]), -1;
    if (k == 0) g->config = v;
    else if (k == 1) g->store = v;
    else if (!strcmp(v, "auto")) g->color = -1;
    else if (!strcmp(v, "always")) g->color = 1;
    else if (!strcmp(v, "never")) g->color = 0;
    else return usage_error(cmd, "--color takes auto, always or never, not %s", v), -1;
    return 1;
  }
  if (!strcmp(a, "--json")) g->json = 1;
  else if (!strcmp(a, "--no-color")) g->color = 0;
  else return 0;
  return 1;
}

static int own_opt(int argc, char **argv, int *i, const cli_opt *opts, const char *cmd) {
  const char *a = argv[*i], *eq = strchr(a, '=');
  size_t n = eq ? (size_t)(eq - a) : strlen(a);
  for (const cli_opt *o = opts; o && o->name; o++) {
    if (strlen(o->name) != n || strncmp(a, o->name, n) != 0) continue;
    if (!o->takes_value) {
      if (eq) return usage_error(cmd, "%s takes no value", o->name), -1;
      *o->flag = 1;
      return 1;
    }
    if (eq) *o->value = eq + 1;
    else if (*i + 1 < argc) *o->value = argv[++*i];
    else return usage_error(cmd, "%s needs a value", o->name), -1;
    return 1;
  }
  return 0;
}

int cli_parse(int argc, char **argv, int first, cli_globals *g, const cli_opt *opts,
              const char **pos, int max_pos, int *npos, const char *cmd) {
  *npos = 0;
  int only_pos = 0;
  for (int i = first; i < argc; i++) {
    const char *a = argv[i];
    if (!only_pos && !strcmp(a, "--")) {
      only_pos = 1;
      continue;
    }
    if (!only_pos && a[0] == '-' && a[1]) {
      int r = global_opt(argc, argv, &i, g, cmd);
      if (r == 0) r = own_opt(argc, argv, &i, opts, cmd);
      if (r < 0) return CLI_USAGE;
      if (r == 0) return usage_error(cmd, "unknown option %s", a);
      continue;
    }
    if (*npos >= max_pos) return usage_error(cmd, "unexpected argument %s", a);
    pos[(*npos)++] = a;
  }
  return CLI_OK;
}

int cli_int(const char *what, const char *v, long max, long *out) {
  char *end;
  errno = 0;
  long n = strtol(v, &end, 10);
  if (errno || end == v || *end || n < 1 || n > max) {
    fprintf(stderr, "dexagents: %s takes 1..%ld, not %s\n", what, max, v);
    return CLI_USAGE;
  }
  *out = n;
  return CLI_OK;
}
