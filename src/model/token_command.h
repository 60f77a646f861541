/* Bearer tokens for vertex/: from a variable (GOOGLE_CLOUD_ACCESS_TOKEN or
 * the access_token_env option) read at each call, else from the output of
 * the token_command option (e.g. "gcloud auth print-access-token"), kept
 * for token_ttl_s and dropped after a 401. */
#ifndef DEXA_MODEL_TOKEN_COMMAND_H
#define DEXA_MODEL_TOKEN_COMMAND_H

#include "model/provider.h"

/* The auth hook of vertex/: Authorization: Bearer <token>. DEXA_OK, or
 * DEXA_E_AUTH / DEXA_E_NOMEM with call->err. */
int dexa__auth_google_token(dexa__call *call);

/* Drops the cached token (the server refused it). */
void dexa__token_forget(dexa__client_cfg *cfg);

/* Runs command with /bin/sh -c, waits at most timeout_ms, and returns its
 * first line of output (malloc'd, trimmed) in *out. DEXA_OK, DEXA_E_AUTH
 * (it failed, printed nothing or ran out of time; why says so) or
 * DEXA_E_NOMEM. */
int dexa__run_token_command(const char *command, int64_t timeout_ms, char **out, char *why,
                            size_t why_size);

#endif
