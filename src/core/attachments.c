/* Attachments of user messages (see attachments.h). */
#include "core/attachments.h"

#include <string.h>

#define URL_MAX 8192
#define NAME_MAX_BYTES 255

static const char *const image_types[] = {"image/png", "image/jpeg", "image/gif", "image/webp",
                                          NULL};

static int bad(dexa__ctx *c, size_t i, const char *what) {
  return dexa__result_failf(c->result, DEXA_E_INVALID_ARG, "attachments[%zu]: %s", i, what);
}

/* Standard base64 with padding; returns the decoded size, or -1. */
static int64_t base64_size(const char *s, size_t n) {
  if (n == 0 || n % 4) return -1;
  size_t pad = 0;
  for (size_t i = 0; i < n; i++) {
    char ch = s[i];
    int ok = (ch >= 'A' && ch <= 'Z') || (ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') ||
             ch == '+' || ch == '/';
    if (ch == '=' && i >= n - 2) {
      pad++;
      continue;
    }
    if (!ok || pad) return -1;
  }
  return (int64_t)(n / 4 * 3 - pad);
}

/* A media type "type/subtype" of token characters. */
static int media_type_ok(const char *s) {
  size_t n = strlen(s), slash = 0;
  if (n < 3 || n > 100) return 0;
  for (size_t i = 0; i < n; i++) {
    char ch = s[i];
    if (ch == '/') slash++;
    else if (!((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
               strchr("!#$&^_.+-", ch)))
      return 0;
  }
  return slash == 1 && s[0] != '/' && s[n - 1] != '/';
}

static int printable(const char *s, size_t max) {
  size_t n = strlen(s);
  if (n == 0 || n > max) return 0;
  for (size_t i = 0; i < n; i++)
    if ((unsigned char)s[i] < 0x20 || s[i] == 0x7f) return 0;
  return 1;
}

static int check_one(dexa__ctx *c, size_t i, const cJSON *a, size_t *bytes) {
  if (!cJSON_IsObject(a)) return bad(c, i, "must be an object {type, media_type?, data|url, name?}");
  const cJSON *v;
  cJSON_ArrayForEach(v, a) {
    if (strcmp(v->string, "type") && strcmp(v->string, "media_type") && strcmp(v->string, "data") &&
        strcmp(v->string, "url") && strcmp(v->string, "name"))
      return dexa__result_failf(c->result, DEXA_E_UNKNOWN_KEY, "attachments[%zu]: unknown key \"%.40s\"",
                                i, v->string);
  }
  const char *type = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(a, "type"));
  const cJSON *media = cJSON_GetObjectItemCaseSensitive(a, "media_type");
  const cJSON *data = cJSON_GetObjectItemCaseSensitive(a, "data");
  const cJSON *url = cJSON_GetObjectItemCaseSensitive(a, "url");
  const cJSON *name = cJSON_GetObjectItemCaseSensitive(a, "name");
  int image = type && strcmp(type, "image") == 0;
  if (!type || (!image && strcmp(type, "file") != 0)) return bad(c, i, "type must be \"image\" or \"file\"");
  if (!data == !url) return bad(c, i, "give exactly one of data (base64) and url");
  if (media && !(cJSON_IsString(media) && media_type_ok(media->valuestring)))
    return bad(c, i, "media_type must be a media type such as \"image/png\"");
  if (data && !media) return bad(c, i, "data needs its media_type");
  if (image && media) {
    int known = 0;
    for (size_t k = 0; image_types[k]; k++) known |= strcmp(media->valuestring, image_types[k]) == 0;
    if (!known) return bad(c, i, "an image must be image/png, image/jpeg, image/gif or image/webp");
  }
  if (name && !(cJSON_IsString(name) && printable(name->valuestring, NAME_MAX_BYTES)))
    return bad(c, i, "name must be 1 to 255 printable bytes");
  if (data) {
    if (!cJSON_IsString(data) || base64_size(data->valuestring, strlen(data->valuestring)) <= 0)
      return bad(c, i, "data must be standard base64 (with padding)");
    *bytes += strlen(data->valuestring);
  } else {
    const char *u = cJSON_GetStringValue(url);
    if (!u || !printable(u, URL_MAX) || strchr(u, ' ') ||
        (strncmp(u, "https://", 8) != 0 && strncmp(u, "http://", 7) != 0))
      return bad(c, i, "url must be an http(s) URL of at most 8192 bytes");
    *bytes += strlen(u);
  }
  return DEXA_OK;
}

int dexa__attachments_check(dexa__ctx *c, const cJSON *attachments, size_t *bytes) {
  *bytes = 0;
  if (!attachments) return DEXA_OK;
  if (!cJSON_IsArray(attachments))
    return dexa__result_fail(c->result, DEXA_E_INVALID_JSON, "attachments must be an array");
  int n = cJSON_GetArraySize(attachments);
  if (n > DEXA__MAX_ATTACHMENTS)
    return dexa__result_failf(c->result, DEXA_E_TOO_LARGE, "%d attachments; the limit is %d", n,
                              DEXA__MAX_ATTACHMENTS);
  size_t i = 0;
  const cJSON *a;
  cJSON_ArrayForEach(a, attachments) {
    int rc = check_one(c, i++, a, bytes);
    if (rc != DEXA_OK) return rc;
  }
  return DEXA_OK;
}

void dexa__attachments_view(dexa__buf *b, const char *json, size_t len) {
  cJSON *arr = cJSON_ParseWithLength(json, len);
  dexa__buf_putc(b, '[');
  int first = 1;
  const cJSON *a;
  cJSON_ArrayForEach(a, arr) {
    static const char *const keys[] = {"type", "media_type", "name", "url"};
    dexa__buf_puts(b, first ? "{" : ",{");
    first = 0;
    int k0 = 1;
    for (size_t k = 0; k < sizeof keys / sizeof *keys; k++) {
      const char *v = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(a, keys[k]));
      if (!v) continue;
      dexa__buf_printf(b, "%s\"%s\":", k0 ? "" : ",", keys[k]);
      dexa__buf_json_cstr(b, v);
      k0 = 0;
    }
    const char *data = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(a, "data"));
    if (data) dexa__buf_printf(b, ",\"bytes\":%lld", (long long)base64_size(data, strlen(data)));
    dexa__buf_putc(b, '}');
  }
  dexa__buf_putc(b, ']');
  if (!arr) b->oom = 1; /* the stored text was checked: only memory can fail */
  cJSON_Delete(arr);
}
