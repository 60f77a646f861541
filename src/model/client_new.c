/* dexa_model_client_new: the argument checks and the demo models, which
 * every build has; a provider name goes on to dexa__model_provider_new. */
#include "model/client_new.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "dexagents/errors.h"

static const char *const provider_prefixes[] = {"openai/", "openai-chat/", "anthropic/", "gemini/",
                                                "vertex/", "bedrock/",     "azure/"};

static int say(char *errmsg, size_t n, int rc, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static int say(char *errmsg, size_t n, int rc, const char *fmt, ...) {
  if (errmsg && n) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(errmsg, n, fmt, ap);
    va_end(ap);
  }
  return rc;
}

static int demo_client(dexa_model **out, const char *name, const char *o, size_t n, char *errmsg,
                       size_t errmsg_size) {
  while (n && (*o == ' ' || *o == '\n' || *o == '\t' || *o == '\r')) o++, n--;
  while (n && (o[n - 1] == ' ' || o[n - 1] == '\n' || o[n - 1] == '\t' || o[n - 1] == '\r')) n--;
  if (n && !(n == 2 && o[0] == '{' && o[1] == '}'))
    return say(errmsg, errmsg_size, DEXA_E_UNKNOWN_KEY, "the demo model takes no options");
  int rc = dexa_model_demo_new(out, name);
  return rc == DEXA_OK ? rc : say(errmsg, errmsg_size, rc, "demo model %s: %s", name, dexa_strerror(rc));
}

DEXA_EXTERN int dexa_model_client_new(dexa_model **out, const char *name, const char *options_json,
                                      size_t options_len, char *errmsg, size_t errmsg_size) {
  if (errmsg && errmsg_size) errmsg[0] = '\0';
  if (!out) return say(errmsg, errmsg_size, DEXA_E_INVALID_ARG, "out is NULL");
  *out = NULL;
  if (!name || (!options_json && options_len))
    return say(errmsg, errmsg_size, DEXA_E_INVALID_ARG, "name is NULL");
  if (strncmp(name, "mock/", 5) == 0)
    return demo_client(out, name, options_json, options_len, errmsg, errmsg_size);
  for (size_t i = 0; i < sizeof provider_prefixes / sizeof *provider_prefixes; i++)
    if (!strncmp(name, provider_prefixes[i], strlen(provider_prefixes[i])))
      return dexa__model_provider_new(out, name, options_json, options_len, errmsg, errmsg_size);
  return say(errmsg, errmsg_size, DEXA_E_INVALID_ARG,
             "unknown model provider in \"%.80s\" (openai/, openai-chat/, anthropic/, gemini/, "
             "vertex/, bedrock/, azure/, mock/)",
             name);
}
