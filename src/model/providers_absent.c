/* The provider clients in a build without WITH_CURL=1 (they speak HTTP
 * through libcurl): every provider name is DEXA_E_UNSUPPORTED. The demo
 * models (mock/) are in every build (client_new.c). */
#include <stdio.h>

#include "dexagents/errors.h"
#include "model/client_new.h"

int dexa__model_provider_new(dexa_model **out, const char *name, const char *options_json,
                             size_t options_len, char *errmsg, size_t errmsg_size) {
  (void)options_json;
  (void)options_len;
  *out = NULL;
  if (errmsg && errmsg_size)
    snprintf(errmsg, errmsg_size,
             "model %.80s: the provider clients are not in this library (built without "
             "WITH_CURL=1); only the demo models mock/... are",
             name);
  return DEXA_E_UNSUPPORTED;
}
