/* The exporter's configuration from the standard OTEL_* variables
 * (the OpenTelemetry SDK environment variable specification, traces). */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "dexagents/errors.h"
#include "dexagents/version.h"
#include "trace/otlp.h"

#define MAX_QUEUE_CAP 16384 /* bounds memory: each queued span is one fixed-size block */

void dexa__otlp_config_defaults(dexa__otlp_config *cfg) {
  memset(cfg, 0, sizeof *cfg);
  cfg->timeout_ms = 10000;
  cfg->schedule_delay_ms = 5000;
  cfg->export_timeout_ms = 30000;
  cfg->max_queue = 2048;
  cfg->max_batch = 512;
  cfg->max_attempts = 5;
  cfg->initial_backoff_ms = 500;
}

static void kv_free(dexa__otlp_kv *list, size_t n) {
  for (size_t i = 0; i < n; i++) {
    free(list[i].key);
    free(list[i].value);
  }
  free(list);
}

void dexa__otlp_config_free(dexa__otlp_config *cfg) {
  if (!cfg) return;
  free(cfg->endpoint);
  kv_free(cfg->headers, cfg->header_count);
  kv_free(cfg->resource, cfg->resource_count);
  memset(cfg, 0, sizeof *cfg);
}

static const char *env(const char *name) {
  const char *v = getenv(name);
  return v && *v ? v : NULL;
}

/* The traces-specific variable, else the general one. */
static const char *env2(const char *traces, const char *general) {
  const char *v = env(traces);
  return v ? v : env(general);
}

static int64_t env_ms(const char *traces, const char *general, int64_t dflt, int64_t min) {
  const char *v = traces ? env2(traces, general) : env(general);
  if (!v) return dflt;
  char *end;
  errno = 0;
  long long n = strtoll(v, &end, 10);
  if (errno || end == v || *end || n < min) return dflt;
  return (int64_t)n;
}

static int hexval(int c) {
  if (c >= '0' && c <= '9') return c - '0';
  c = tolower(c);
  return c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

/* A trimmed, percent-decoded copy of s[0..n). */
static char *decoded(const char *s, size_t n) {
  while (n && isspace((unsigned char)*s)) s++, n--;
  while (n && isspace((unsigned char)s[n - 1])) n--;
  char *out = malloc(n + 1);
  if (!out) return NULL;
  size_t k = 0;
  for (size_t i = 0; i < n; i++) {
    int h, l;
    if (s[i] == '%' && i + 2 < n && (h = hexval(s[i + 1])) >= 0 &&
        (l = hexval(s[i + 2])) >= 0) {
      out[k++] = (char)(h * 16 + l);
      i += 2;
    } else {
      out[k++] = s[i];
    }
  }
  out[k] = '\0';
  return out;
}

/* Sets key to value in the list (replacing an earlier one). Takes both. */
static int kv_set(dexa__otlp_kv **list, size_t *count, char *key, char *value) {
  for (size_t i = 0; i < *count; i++)
    if (strcmp((*list)[i].key, key) == 0) {
      free((*list)[i].value);
      (*list)[i].value = value;
      free(key);
      return DEXA_OK;
    }
  dexa__otlp_kv *p = realloc(*list, (*count + 1) * sizeof *p);
  if (!p) {
    free(key);
    free(value);
    return DEXA_E_NOMEM;
  }
  *list = p;
  p[*count].key = key;
  p[*count].value = value;
  (*count)++;
  return DEXA_OK;
}

int dexa__otlp_parse_kv_list(const char *s, dexa__otlp_kv **list, size_t *count) {
  while (s && *s) {
    const char *end = strchr(s, ',');
    size_t n = end ? (size_t)(end - s) : strlen(s);
    const char *eq = memchr(s, '=', n);
    if (eq && eq > s) {
      char *k = decoded(s, (size_t)(eq - s)), *v = decoded(eq + 1, n - (size_t)(eq - s) - 1);
      if (!k || !v) {
        free(k);
        free(v);
        return DEXA_E_NOMEM;
      }
      if (!*k) {
        free(k);
        free(v);
      } else if (kv_set(list, count, k, v) != DEXA_OK) {
        return DEXA_E_NOMEM;
      }
    }
    s = end ? end + 1 : NULL;
  }
  return DEXA_OK;
}

/* A comma list contains word (case-insensitive)? */
static int list_has(const char *list, const char *word) {
  size_t w = strlen(word);
  for (const char *p = list; p && *p;) {
    while (*p == ' ' || *p == ',') p++;
    const char *e = p;
    while (*e && *e != ',' && *e != ' ') e++;
    if ((size_t)(e - p) == w && strncasecmp(p, word, w) == 0) return 1;
    p = e;
  }
  return 0;
}

static int resource_from_env(dexa__otlp_config *cfg) {
  int rc = dexa__otlp_parse_kv_list(env("OTEL_RESOURCE_ATTRIBUTES"), &cfg->resource,
                                    &cfg->resource_count);
  const char *svc = env("OTEL_SERVICE_NAME");
  char dflt[300];
  int have = 0;
  for (size_t i = 0; i < cfg->resource_count; i++) have |= strcmp(cfg->resource[i].key, "service.name") == 0;
  if (!svc && !have) {
    snprintf(dflt, sizeof dflt, "unknown_service:%s", program_invocation_short_name);
    svc = dflt;
  }
  if (rc == DEXA_OK && svc) {
    char *k = strdup("service.name"), *v = strdup(svc);
    rc = k && v ? kv_set(&cfg->resource, &cfg->resource_count, k, v) : DEXA_E_NOMEM;
  }
  static const char *const sdk[][2] = {{"telemetry.sdk.name", "libdexagents"},
                                       {"telemetry.sdk.version", DEXA_VERSION_STRING}};
  for (size_t i = 0; i < 2 && rc == DEXA_OK; i++) {
    char *k = strdup(sdk[i][0]), *v = strdup(sdk[i][1]);
    rc = k && v ? kv_set(&cfg->resource, &cfg->resource_count, k, v) : DEXA_E_NOMEM;
  }
  return rc;
}

static char *traces_url(void) {
  const char *t = env("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT");
  if (t) return strdup(t);
  const char *base = env("OTEL_EXPORTER_OTLP_ENDPOINT");
  if (!base) return NULL;
  size_t n = strlen(base);
  while (n && base[n - 1] == '/') n--;
  char *u = malloc(n + sizeof "/v1/traces");
  if (u) {
    memcpy(u, base, n);
    memcpy(u + n, "/v1/traces", sizeof "/v1/traces");
  }
  return u;
}

int dexa__otlp_config_from_env(dexa__otlp_config *cfg, char *why, size_t why_size) {
  dexa__otlp_config_defaults(cfg);
  const char *disabled = env("OTEL_SDK_DISABLED");
  if (disabled && strcasecmp(disabled, "true") == 0) {
    snprintf(why, why_size, "OTEL_SDK_DISABLED is true");
    return 0;
  }
  const char *exporter = env("OTEL_TRACES_EXPORTER");
  if (exporter && !list_has(exporter, "otlp")) {
    snprintf(why, why_size, "OTEL_TRACES_EXPORTER is %s (only otlp is built in)", exporter);
    return 0;
  }
  if (!env("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") && !env("OTEL_EXPORTER_OTLP_ENDPOINT")) {
    snprintf(why, why_size, "no OTEL_EXPORTER_OTLP_ENDPOINT");
    return 0;
  }
  const char *proto = env2("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "OTEL_EXPORTER_OTLP_PROTOCOL");
  if (proto && strcmp(proto, "http/json") == 0) {
    cfg->json = 1;
  } else if (proto && strcmp(proto, "http/protobuf") != 0) {
    snprintf(why, why_size, "OTEL_EXPORTER_OTLP_PROTOCOL %s is not supported (http/protobuf, http/json)", proto);
    return 0;
  }
  cfg->endpoint = traces_url();
  int rc = cfg->endpoint ? DEXA_OK : DEXA_E_NOMEM;
  if (rc == DEXA_OK)
    rc = dexa__otlp_parse_kv_list(env("OTEL_EXPORTER_OTLP_HEADERS"), &cfg->headers, &cfg->header_count);
  if (rc == DEXA_OK)
    rc = dexa__otlp_parse_kv_list(env("OTEL_EXPORTER_OTLP_TRACES_HEADERS"), &cfg->headers,
                                  &cfg->header_count);
  if (rc == DEXA_OK) rc = resource_from_env(cfg);
  if (rc != DEXA_OK) {
    dexa__otlp_config_free(cfg);
    snprintf(why, why_size, "out of memory");
    return rc;
  }
  cfg->timeout_ms = env_ms("OTEL_EXPORTER_OTLP_TRACES_TIMEOUT", "OTEL_EXPORTER_OTLP_TIMEOUT", 10000, 1);
  cfg->schedule_delay_ms = env_ms(NULL, "OTEL_BSP_SCHEDULE_DELAY", 5000, 0);
  cfg->export_timeout_ms = env_ms(NULL, "OTEL_BSP_EXPORT_TIMEOUT", 30000, 1);
  int64_t q = env_ms(NULL, "OTEL_BSP_MAX_QUEUE_SIZE", 2048, 1);
  int64_t b = env_ms(NULL, "OTEL_BSP_MAX_EXPORT_BATCH_SIZE", 512, 1);
  if (q > MAX_QUEUE_CAP) q = MAX_QUEUE_CAP;
  if (b > q) b = q;
  cfg->max_queue = (size_t)q;
  cfg->max_batch = (size_t)b;
  snprintf(why, why_size, "%s", "");
  return 1;
}
