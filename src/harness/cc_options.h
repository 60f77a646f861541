/* Options of the Claude Code harness (dexa_harness_claude_code_new): parsed
 * once from the host's JSON, owned by the harness, read-only afterwards so
 * segments on several worker threads share them. */
#ifndef DEXA_HARNESS_CC_OPTIONS_H
#define DEXA_HARNESS_CC_OPTIONS_H

#include <stddef.h>
#include <stdint.h>

typedef struct dexa__cc_options {
  char *cli_path;      /* the claude executable; "claude" (found on PATH) by default */
  char *model;         /* --model, or NULL for the CLI's default */
  char *cwd;           /* the CLI's working directory, or NULL for the worker's */
  char **tools;        /* CLI tools allowed (Bash, Read, Edit, Agent, ...) */
  size_t tool_count;   /* 0: none of the CLI's own tools */
  char **env;          /* "KEY=VALUE" set over the worker's environment */
  size_t env_count;
  int64_t timeout_ms;  /* a segment's limit; 15 minutes by default */
  int64_t stop_grace_ms; /* SIGTERM to SIGKILL when a CLI is ended */
} dexa__cc_options;

/* Fills o from options_json (NULL or "{}" for the defaults). Returns
 * DEXA_OK, DEXA_E_INVALID_JSON, DEXA_E_UNKNOWN_KEY, DEXA_E_INVALID_ARG (a
 * bad value, or an API key among "env") or DEXA_E_NOMEM, with a message in
 * err. On error o holds nothing to free. */
int dexa__cc_options_parse(dexa__cc_options *o, const char *json, size_t len, char *err,
                           size_t err_size);
void dexa__cc_options_free(dexa__cc_options *o);

#endif
