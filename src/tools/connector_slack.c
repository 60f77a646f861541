/* The Slack connector: slack_post_thread_reply, Slack Web API
 * chat.postMessage with thread_ts, on libcurl.
 *
 * A post is a write that is not idempotent (Slack has no idempotency key),
 * so the tool is a WRITE that needs approval: the flow runs it once, in
 * CallSingleAttemptTool. Inside that one attempt only what Slack refused
 * before posting is tried again: a 429 whose Retry-After fits in
 * rateLimitWaitMs. Everything else is reported to the model as it is, and
 * an answer that never came says the reply may or may not have been posted.
 * The call's idempotency key goes along as message metadata, so a person
 * can tell which call posted a message.
 *
 * The token goes only into the Authorization header of the request; no
 * result text, content or error message holds it. Redirects are not
 * followed, so the header never goes to another host. */
#include <cjson/cJSON.h>
#include <curl/curl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "dexagents/errors.h"
#include "tools/connector_internal.h"
#include "util/buf.h"
#include "util/curl_global.h"
#include "util/http_header.h"

#define TOOL_NAME "slack_post_thread_reply"
#define MAX_REPLY_BYTES (1024 * 1024)
#define MAX_TEXT_BYTES 40000 /* Slack truncates longer messages */
#define DEFAULT_RETRY_S 1

static const char DESCRIPTION[] =
    "Posts a reply in a Slack thread (chat.postMessage with thread_ts). Needs a person's "
    "approval; runs once.";

static const char SCHEMA[] =
    "{\"type\":\"object\",\"properties\":{"
    "\"channelId\":{\"type\":\"string\",\"description\":\"The channel's ID, such as "
    "C0123456789.\"},"
    "\"threadTimestamp\":{\"type\":\"string\",\"description\":\"The ts of the thread's parent "
    "message, such as 1710000000.000100.\"},"
    "\"text\":{\"type\":\"string\",\"description\":\"The reply, in Slack mrkdwn.\"}},"
    "\"required\":[\"channelId\",\"threadTimestamp\",\"text\"],\"additionalProperties\":false}";

typedef struct slack {
  dexa__connection c; /* its own copy */
} slack;

/* ---- one request ---------------------------------------------------------------- */

typedef struct reply {
  dexa__buf body;
  long status;
  long retry_after_s; /* -1: none */
  int too_large;
} reply;

static size_t on_body(char *p, size_t size, size_t n, void *ud) {
  reply *r = ud;
  size_t len = size * n;
  if (r->body.len + len > MAX_REPLY_BYTES) {
    r->too_large = 1;
    return 0;
  }
  dexa__buf_append(&r->body, p, len);
  return r->body.oom ? 0 : len;
}

static size_t on_header(char *p, size_t size, size_t n, void *ud) {
  reply *r = ud;
  size_t len = size * n;
  long s = dexa__retry_after_seconds(p, len, 86400);
  if (s >= 0) r->retry_after_s = s;
  return len;
}

/* POST body to baseUrl/chat.postMessage. Returns the curl code. */
static CURLcode post(const slack *s, const char *body, reply *r, char *why, size_t why_size) {
  r->status = 0;
  r->retry_after_s = -1;
  r->too_large = 0;
  dexa__buf_reset(&r->body);
  CURL *h = curl_easy_init();
  if (!h) return CURLE_OUT_OF_MEMORY;
  char url[1200], auth[4200];
  snprintf(url, sizeof url, "%s/chat.postMessage", s->c.base_url);
  snprintf(auth, sizeof auth, "Authorization: Bearer %s", s->c.token);
  struct curl_slist *headers = curl_slist_append(NULL, auth);
  memset(auth, 0, sizeof auth);
  struct curl_slist *more = headers ? curl_slist_append(headers, "Content-Type: application/json; charset=utf-8") : NULL;
  if (more) headers = more;
  char errbuf[CURL_ERROR_SIZE] = "";
  curl_easy_setopt(h, CURLOPT_URL, url);
  curl_easy_setopt(h, CURLOPT_HTTPHEADER, headers);
  curl_easy_setopt(h, CURLOPT_POSTFIELDS, body);
  curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE, (long)strlen(body));
  curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_body);
  curl_easy_setopt(h, CURLOPT_WRITEDATA, r);
  curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, on_header);
  curl_easy_setopt(h, CURLOPT_HEADERDATA, r);
  curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, (long)s->c.timeout_ms);
  curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, (long)(s->c.timeout_ms < 10000 ? s->c.timeout_ms : 10000));
  curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(h, CURLOPT_FOLLOWLOCATION, 0L);
  curl_easy_setopt(h, CURLOPT_ERRORBUFFER, errbuf);
#if LIBCURL_VERSION_NUM >= 0x075500
  curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
#else
  curl_easy_setopt(h, CURLOPT_PROTOCOLS, (long)(CURLPROTO_HTTP | CURLPROTO_HTTPS));
#endif
  CURLcode cc = curl_easy_perform(h);
  curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &r->status);
  /* The error buffer names the host and the failure, never a header. */
  snprintf(why, why_size, "%s", errbuf[0] ? errbuf : curl_easy_strerror(cc));
  curl_easy_cleanup(h);
  curl_slist_free_all(headers);
  return cc;
}

/* Failures where the request cannot have reached Slack. */
static int not_sent(CURLcode cc) {
  return cc == CURLE_COULDNT_RESOLVE_HOST || cc == CURLE_COULDNT_RESOLVE_PROXY ||
         cc == CURLE_COULDNT_CONNECT || cc == CURLE_SSL_CONNECT_ERROR ||
         cc == CURLE_PEER_FAILED_VERIFICATION || cc == CURLE_UNSUPPORTED_PROTOCOL ||
         cc == CURLE_URL_MALFORMAT || cc == CURLE_OUT_OF_MEMORY;
}

static void sleep_s(long s) {
  struct timespec ts = {s, 0};
  while (nanosleep(&ts, &ts) != 0) {
  }
}

/* ---- the call -------------------------------------------------------------------- */

static const char *arg(const cJSON *args, const char *name) {
  const char *v = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(args, name));
  return v && *v ? v : NULL;
}

/* Slack ids and timestamps: letters and digits; digits '.' digits. */
static int valid_channel(const char *s) {
  size_t n = strlen(s);
  return n <= 64 && strspn(s, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789") == n;
}

static int valid_ts(const char *s) {
  size_t a = strspn(s, "0123456789");
  return a > 0 && a < 20 && s[a] == '.' && strspn(s + a + 1, "0123456789") == strlen(s + a + 1) &&
         strlen(s + a + 1) > 0 && strlen(s + a + 1) < 10;
}

static int fail_text(dexa_tool_output *out, const char *fmt, const char *a, const char *b) {
  char text[1024];
  int n = snprintf(text, sizeof text, fmt, a, b);
  if (n < 0) n = 0;
  if ((size_t)n >= sizeof text) n = (int)sizeof text - 1;
  return dexa_tool_output_set_text(out, text, (size_t)n, 1);
}

static char *request_body(const char *channel, const char *ts, const char *text, const char *key) {
  cJSON *b = cJSON_CreateObject();
  cJSON_AddStringToObject(b, "channel", channel);
  cJSON_AddStringToObject(b, "thread_ts", ts);
  cJSON_AddStringToObject(b, "text", text);
  cJSON *meta = cJSON_AddObjectToObject(b, "metadata");
  cJSON_AddStringToObject(meta, "event_type", "dexagents_tool_call");
  cJSON_AddStringToObject(cJSON_AddObjectToObject(meta, "event_payload"), "idempotency_key", key);
  char *json = cJSON_PrintUnformatted(b);
  cJSON_Delete(b);
  return json;
}

/* Slack's answer to a request that reached it. */
static int answered(const reply *r, const char *channel, const char *ts, dexa_tool_output *out) {
  cJSON *doc = cJSON_ParseWithLength(r->body.data ? r->body.data : "", r->body.len);
  const cJSON *ok = cJSON_GetObjectItemCaseSensitive(doc, "ok");
  int rc;
  char status[32];
  snprintf(status, sizeof status, "%ld", r->status);
  if (r->status == 200 && cJSON_IsTrue(ok)) {
    const char *posted = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(doc, "ts"));
    char text[512];
    int n = snprintf(text, sizeof text, "Posted the reply in thread %s of %s (message ts %s).", ts,
                     channel, posted ? posted : "?");
    rc = dexa_tool_output_set_text(out, text, (size_t)n, 0);
    if (rc == DEXA_OK) rc = dexa_tool_output_set_content(out, r->body.data, r->body.len);
  } else if (cJSON_IsFalse(ok)) {
    const char *err = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(doc, "error"));
    rc = fail_text(out, "Slack refused the post (%s, HTTP %s); the reply was not posted.",
                   err ? err : "no error named", status);
    if (rc == DEXA_OK) rc = dexa_tool_output_set_content(out, r->body.data, r->body.len);
  } else if (r->status >= 500 || r->status < 200) {
    rc = fail_text(out, "Slack answered HTTP %s without a result%s; the reply may or may not "
                   "have been posted, and it is not posted again.", status, "");
  } else {
    rc = fail_text(out, "Slack answered HTTP %s%s; the reply was not posted.", status,
                   r->status == 401 || r->status == 403 ? " (the token was refused)" : "");
  }
  cJSON_Delete(doc);
  return rc;
}

static int call_tool(void *user_data, const dexa_tool_invocation *inv, dexa_tool_output *out) {
  const slack *s = user_data;
  if (strcmp(dexa_tool_invocation_name(inv), TOOL_NAME) != 0)
    return fail_text(out, "unknown tool %.64s%s", dexa_tool_invocation_name(inv), "");
  const char *json;
  size_t len;
  dexa_tool_invocation_arguments(inv, &json, &len);
  cJSON *args = cJSON_ParseWithLength(json, len);
  const char *channel = arg(args, "channelId"), *ts = arg(args, "threadTimestamp"),
             *text = arg(args, "text");
  int rc;
  if (!channel || !ts || !text || !valid_channel(channel) || !valid_ts(ts) ||
      strlen(text) > MAX_TEXT_BYTES) {
    rc = fail_text(out, "%s needs channelId (such as C0123456789), threadTimestamp (such as "
                   "1710000000.000100) and a text of at most 40000 bytes%s; nothing was posted.",
                   TOOL_NAME, "");
    cJSON_Delete(args);
    return rc;
  }
  char *body = request_body(channel, ts, text, dexa_tool_invocation_idempotency_key(inv));
  if (!body) {
    cJSON_Delete(args);
    return DEXA_E_NOMEM;
  }
  reply r;
  memset(&r, 0, sizeof r);
  dexa__buf_init(&r.body);
  char why[CURL_ERROR_SIZE + 64];
  int64_t waited_ms = 0;
  for (;;) {
    CURLcode cc = post(s, body, &r, why, sizeof why);
    if (cc == CURLE_OK && r.status == 429) {
      long after = r.retry_after_s >= 0 ? r.retry_after_s : DEFAULT_RETRY_S;
      /* Refused before posting: safe to send again, if the wait fits. */
      if (waited_ms + after * 1000 <= s->c.rate_wait_ms) {
        sleep_s(after);
        waited_ms += after * 1000;
        continue;
      }
      char secs[32];
      snprintf(secs, sizeof secs, "%ld", after);
      rc = fail_text(out, "Slack is rate limiting this app (retry after %s s)%s; the reply was not "
                     "posted.", secs, "");
    } else if (cc == CURLE_OK && !r.body.oom) {
      rc = answered(&r, channel, ts, out);
    } else if (cc != CURLE_OK && (not_sent(cc) || r.too_large)) {
      rc = r.too_large ? fail_text(out, "Slack's answer was over 1 MiB%s%s; the reply may have "
                                   "been posted, and it is not posted again.", "", "")
                       : fail_text(out, "Slack could not be reached (%s)%s; the reply was not "
                                   "posted.", why, "");
    } else {
      rc = fail_text(out, "Slack did not answer (%s)%s; the reply may or may not have been "
                     "posted, and it is not posted again.", why, "");
    }
    break;
  }
  dexa__buf_free(&r.body);
  cJSON_free(body);
  cJSON_Delete(args);
  return rc;
}

static int list_tools(void *user_data, dexa_tool_list *list) {
  (void)user_data;
  return dexa_tool_list_add(list, TOOL_NAME, DESCRIPTION, SCHEMA, sizeof SCHEMA - 1, DEXA_TOOL_WRITE,
                            DEXA_APPROVAL_REQUIRED);
}

static void destroy(void *user_data) {
  slack *s = user_data;
  if (!s) return;
  free(s->c.name);
  free(s->c.type);
  if (s->c.token) memset(s->c.token, 0, strlen(s->c.token));
  free(s->c.token);
  free(s->c.token_env);
  free(s->c.base_url);
  free(s);
}

static char *dup_or_null(const char *v, int *oom) {
  char *p = v ? strdup(v) : NULL;
  if (v && !p) *oom = 1;
  return p;
}

int dexa__slack_source_new(dexa_tool_source **out, const dexa__connection *c) {
  *out = NULL;
  if (dexa__curl_global_init() != DEXA_OK) return DEXA_E_INTERNAL;
  slack *s = calloc(1, sizeof *s);
  if (!s) return DEXA_E_NOMEM;
  int oom = 0;
  s->c.name = dup_or_null(c->name, &oom);
  s->c.type = dup_or_null(c->type, &oom);
  s->c.token = dup_or_null(c->token, &oom);
  s->c.token_env = dup_or_null(c->token_env, &oom);
  s->c.base_url = dup_or_null(c->base_url, &oom);
  s->c.timeout_ms = c->timeout_ms;
  s->c.rate_wait_ms = c->rate_wait_ms;
  dexa_tool_source_vtable vt;
  dexa_tool_source_vtable_init(&vt, sizeof vt);
  vt.list_tools = list_tools;
  vt.call_tool = call_tool;
  vt.destroy = destroy;
  int rc = oom ? DEXA_E_NOMEM : dexa_tool_source_new(out, c->name, &vt, s);
  if (rc != DEXA_OK) destroy(s);
  return rc;
}
