/* MCP servers as tool sources: one dexa_tool_source per configured server
 * ("mcp:<server>"), so a server that cannot be started or listed leaves out
 * only its own tools from a model call (the core drops a source whose
 * list_tools fails and asks it again on the next call).
 *
 * Tool names: "<server>__<tool>" when that is 1..64 of [A-Za-z0-9_-] (what
 * OpenAI and Anthropic accept); otherwise "<server>__<sanitized>_<h>",
 * where sanitized maps every other byte to '_' and is cut so the whole
 * fits 64, and h is the low 48 bits (12 hex digits) of the FNV-1a 64-bit
 * hash of the tool's original name. The names 1.0 gave (a '.' kept, a
 * wrong offset basis) are still resolved when a call comes back. Server names never hold "__" nor end in '_' (mcp_config.c), so
 * names of different servers never collide; a name depends only on the
 * server's and the tool's names, so it is stable across restarts and
 * workers. The rare clash of a hashed name with a verbatim one keeps the
 * first tool listed.
 *
 * Effects: with "trustAnnotations": true, readOnlyHint:true is READ (runs at
 * once, retried); idempotentHint:true is IDEMPOTENT_WRITE (retried) and,
 * like every other write, waits for approval; anything else is a WRITE that
 * waits for approval and runs at most once. Without trust every tool is a
 * WRITE that needs approval (annotations are only hints). Missing hints take
 * the spec's defaults (readOnly false, idempotent false).
 *
 * Tool lists are cached: a stdio server of the legacy era until it sends
 * notifications/tools/list_changed or restarts; HTTP and 2026-07-28 servers
 * (no listen stream) for the ttlMs they give, else 30 s.
 *
 * Asking the person (dexa_tool_output_ask): a server's elicitation, or a
 * sampling request under "sampling": "ask", during a tools/call becomes a
 * question; the call stays open on the server, parked (mcp_calls.c), and
 * the answer's run of the Step takes it back and answers it, so the server
 * call goes on and nothing runs twice. When the parked call is gone (the
 * answer ran on another worker, the worker restarted, the question waited
 * longer than questionTimeoutMs), a READ or IDEMPOTENT_WRITE call runs
 * again from the start and every request it meets again is answered at once
 * from the recorded answers (matched by content, in order); a WRITE does
 * not run again (the server may have acted before it asked): its result
 * says so, as an unknown outcome does.
 *
 * Sign-in: a server that refuses for want of OAuth authorization, where a
 * person must sign in, makes the call ask a question whose url is the
 * sign-in page (mcp_oauth.c); the server did nothing with a refused
 * request, so the call runs again once the person signed in, writes too.
 * When even the tool list is refused, the source offers one tool,
 * "<server>__sign_in", whose call asks that question; the server's tools
 * are listed at the next model call after the sign-in. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dexagents/errors.h"
#include "util/json_num.h"
#include "dexagents/tools.h"
#include "tools/mcp_ask.h"
#include "tools/mcp_internal.h"
#include "tools/mcp_oauth.h"
#include "iface/tool_source.h"

#define LIST_TTL_MS 30000
#define MAX_PAGES 100
#define IDEMPOTENCY_META "org.dexagents/idempotency-key"
#define TOOL_LIST_RP "list_resources_and_prompts"
#define TOOL_READ_RESOURCE "read_resource"
#define TOOL_GET_PROMPT "get_prompt"
#define TOOL_SIGN_IN "sign_in"

typedef struct mcp_tool {
  char *original;
  char name[65];
  char name_1_0[65]; /* the name 1.0 offered, when it differs: still resolved */
  char *description;
  char *schema;
  int effect;
  int approval;
} mcp_tool;

typedef struct mcp_source {
  dexa__mcp_client client;
  pthread_mutex_t tools_mu; /* guards the cache; one refresh at a time */
  mcp_tool *tools;
  size_t count;
  uint64_t listed_generation;
  int64_t expires_ms; /* 0: until list_changed or restart */
  int listed;
  dexa__mcp_parking parking; /* calls that wait for the person's answer */
} mcp_source;

/* ---- names ---- */

/* FNV-1a 64: offset basis and prime. 1.0 had a digit missing from the
 * basis; names hashed with it (and names with '.', offered as is then)
 * still resolve, so calls recorded before an upgrade still run. */
#define FNV_BASIS 14695981039346656037ULL
#define FNV_BASIS_1_0 1469598103934665603ULL
#define FNV_PRIME 1099511628211ULL

/* What OpenAI and Anthropic accept in a tool name: [a-zA-Z0-9_-]. */
static int name_char(char ch, int allow_dot) {
  return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
         ch == '_' || ch == '-' || (allow_dot && ch == '.');
}

static void tool_name_with(const char *server, const char *tool, int allow_dot, uint64_t basis,
                           char *out) {
  size_t sl = strlen(server), tl = strlen(tool);
  int plain = tl > 0 && sl + 2 + tl <= 64;
  for (size_t i = 0; plain && i < tl; i++) plain = name_char(tool[i], allow_dot);
  if (plain) {
    memcpy(out, server, sl);
    memcpy(out + sl, "__", 2);
    memcpy(out + sl + 2, tool, tl + 1);
    return;
  }
  uint64_t h = basis;
  for (size_t i = 0; i < tl; i++) h = (h ^ (unsigned char)tool[i]) * FNV_PRIME;
  size_t room = 64 - sl - 2 - 13; /* "_" + 12 hex digits */
  size_t k = snprintf(out, 65, "%s__", server);
  for (size_t i = 0; i < tl && i < room; i++) out[k++] = name_char(tool[i], allow_dot) ? tool[i] : '_';
  snprintf(out + k, 65 - k, "_%012llx", (unsigned long long)(h & 0xffffffffffffULL));
}

void dexa__mcp_tool_name(const char *server, const char *tool, char *out) {
  tool_name_with(server, tool, 0, FNV_BASIS, out);
}

void dexa__mcp_tool_name_1_0(const char *server, const char *tool, char *out) {
  tool_name_with(server, tool, 1, FNV_BASIS_1_0, out);
}

/* ---- the cache ---- */

static void free_tools(mcp_source *s) {
  for (size_t i = 0; i < s->count; i++) {
    free(s->tools[i].original);
    free(s->tools[i].description);
    free(s->tools[i].schema);
  }
  free(s->tools);
  s->tools = NULL;
  s->count = 0;
  s->listed = 0;
}

static int hint(const cJSON *ann, const char *key) {
  return cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(ann, key));
}

static int add_tool(mcp_source *s, const cJSON *t, size_t *cap) {
  const char *name = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(t, "name"));
  if (!name || !*name) return DEXA_OK; /* not a tool: skipped */
  if (s->count == *cap) {
    size_t nc = *cap ? *cap * 2 : 16;
    mcp_tool *p = realloc(s->tools, nc * sizeof *p);
    if (!p) return DEXA_E_NOMEM;
    s->tools = p;
    *cap = nc;
  }
  mcp_tool *m = &s->tools[s->count];
  memset(m, 0, sizeof *m);
  dexa__mcp_tool_name(s->client.cfg.name, name, m->name);
  for (size_t i = 0; i < s->count; i++)
    if (strcmp(s->tools[i].name, m->name) == 0) return DEXA_OK; /* a clash: first one wins */
  dexa__mcp_tool_name_1_0(s->client.cfg.name, name, m->name_1_0);
  if (strcmp(m->name_1_0, m->name) == 0) m->name_1_0[0] = '\0';
  const char *desc = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(t, "description"));
  const char *title = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(t, "title"));
  const cJSON *schema = cJSON_GetObjectItemCaseSensitive(t, "inputSchema");
  const cJSON *ann = cJSON_GetObjectItemCaseSensitive(t, "annotations");
  m->original = strdup(name);
  m->description = strdup(desc ? desc : title ? title : "");
  m->schema = cJSON_IsObject(schema) ? cJSON_PrintUnformatted(schema) : strdup("{\"type\":\"object\"}");
  if (!m->original || !m->description || !m->schema) {
    free(m->original);
    free(m->description);
    free(m->schema);
    return DEXA_E_NOMEM;
  }
  int trusted = s->client.cfg.trust_annotations;
  if (trusted && hint(ann, "readOnlyHint")) {
    m->effect = DEXA_TOOL_READ;
    m->approval = DEXA_APPROVAL_NONE;
  } else {
    m->effect = trusted && hint(ann, "idempotentHint") ? DEXA_TOOL_IDEMPOTENT_WRITE : DEXA_TOOL_WRITE;
    m->approval = DEXA_APPROVAL_REQUIRED;
  }
  s->count++;
  return DEXA_OK;
}

static int has_capability(mcp_source *s, const char *name) {
  return cJSON_GetObjectItemCaseSensitive(s->client.capabilities, name) != NULL;
}

/* Every page of a list method, with its items under key, into *items (a
 * new array). */
static int list_all(mcp_source *s, const char *method, const char *key, cJSON **items,
                    int64_t *ttl_ms, char *err, size_t err_size) {
  *items = cJSON_CreateArray();
  char *cursor = NULL;
  int rc = *items ? DEXA_OK : DEXA_E_NOMEM;
  for (int page = 0; rc == DEXA_OK; page++) {
    if (page == MAX_PAGES) {
      snprintf(err, err_size, "%s: more than %d pages", method, MAX_PAGES);
      rc = DEXA_E_PERMANENT;
      break;
    }
    cJSON *params = cJSON_CreateObject();
    if (cursor) cJSON_AddStringToObject(params, "cursor", cursor);
    cJSON *res = NULL;
    int64_t timeout = s->client.cfg.timeout_ms < DEXA__MCP_CONNECT_TIMEOUT_MS
                          ? s->client.cfg.timeout_ms
                          : DEXA__MCP_CONNECT_TIMEOUT_MS;
    rc = dexa__mcp_request(&s->client, method, params, timeout, &res, NULL, err, err_size);
    if (rc != DEXA_OK) break;
    cJSON *arr = cJSON_GetObjectItemCaseSensitive(res, key);
    cJSON *it;
    while (cJSON_IsArray(arr) && (it = cJSON_DetachItemFromArray(arr, 0)) != NULL)
      cJSON_AddItemToArray(*items, it);
    const cJSON *ttl = cJSON_GetObjectItemCaseSensitive(res, "ttlMs");
    if (ttl_ms) (void)dexa__json_exact_int(ttl, ttl_ms);
    const char *next = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(res, "nextCursor"));
    int repeat = next && cursor && strcmp(next, cursor) == 0;
    free(cursor);
    cursor = next && *next && !repeat ? strdup(next) : NULL;
    cJSON_Delete(res);
    if (!cursor) break;
  }
  free(cursor);
  if (rc != DEXA_OK) {
    cJSON_Delete(*items);
    *items = NULL;
  }
  return rc;
}

/* Lists the tools again when the cache is stale (tools_mu held). */
static int refresh(mcp_source *s, int force, char *err, size_t err_size) {
  int rc = dexa__mcp_client_ensure(&s->client, err, err_size);
  if (rc != DEXA_OK) return rc;
  dexa__mcp_client *c = &s->client;
  pthread_mutex_lock(&c->mu);
  int stale = force || !s->listed || c->tools_dirty || s->listed_generation != c->generation ||
              (s->expires_ms && dexa__mcp_now_ms() >= s->expires_ms);
  uint64_t gen = c->generation;
  c->tools_dirty = 0;
  pthread_mutex_unlock(&c->mu);
  if (!stale) return DEXA_OK;
  cJSON *items = NULL;
  int64_t ttl = -1;
  if (has_capability(s, "tools")) {
    rc = list_all(s, "tools/list", "tools", &items, &ttl, err, err_size);
    if (rc != DEXA_OK) {
      pthread_mutex_lock(&c->mu);
      c->tools_dirty = 1;
      pthread_mutex_unlock(&c->mu);
      return rc;
    }
  }
  free_tools(s);
  size_t cap = 0;
  const cJSON *t;
  cJSON_ArrayForEach(t, items) {
    if ((rc = add_tool(s, t, &cap)) != DEXA_OK) break;
  }
  cJSON_Delete(items);
  if (rc != DEXA_OK) {
    free_tools(s);
    return rc;
  }
  s->listed = 1;
  s->listed_generation = gen;
  int no_push = c->cfg.transport == DEXA__MCP_HTTP || c->era == DEXA__MCP_ERA_MODERN;
  s->expires_ms = ttl >= 0 ? dexa__mcp_now_ms() + (ttl ? ttl : 1)
                  : no_push ? dexa__mcp_now_ms() + LIST_TTL_MS
                            : 0;
  return DEXA_OK;
}

/* ---- resource and prompt tools ---- */

static const char rp_list_schema[] = "{\"type\":\"object\",\"properties\":{}}";
static const char rp_read_schema[] =
    "{\"type\":\"object\",\"properties\":{\"uri\":{\"type\":\"string\",\"description\":"
    "\"The resource URI\"}},\"required\":[\"uri\"]}";
static const char rp_prompt_schema[] =
    "{\"type\":\"object\",\"properties\":{\"name\":{\"type\":\"string\"},\"arguments\":{"
    "\"type\":\"object\",\"additionalProperties\":{\"type\":\"string\"}}},\"required\":[\"name\"]}";

static int rp_enabled(mcp_source *s) {
  return s->client.cfg.resource_and_prompt_tools &&
         (has_capability(s, "resources") || has_capability(s, "prompts"));
}

static int add_rp_tools(mcp_source *s, dexa_tool_list *list) {
  static const struct {
    const char *suffix, *desc, *schema;
  } rp[3] = {
      {TOOL_LIST_RP, "Lists the resources, resource templates and prompts of the MCP server.",
       rp_list_schema},
      {TOOL_READ_RESOURCE, "Reads one resource of the MCP server by its URI.", rp_read_schema},
      {TOOL_GET_PROMPT, "Gets one prompt of the MCP server, filled with its arguments.",
       rp_prompt_schema},
  };
  for (int i = 0; i < 3; i++) {
    char name[65];
    snprintf(name, sizeof name, "%s__%s", s->client.cfg.name, rp[i].suffix);
    int rc = dexa_tool_list_add(list, name, rp[i].desc, rp[i].schema, strlen(rp[i].schema),
                                DEXA_TOOL_READ, DEXA_APPROVAL_NONE);
    if (rc != DEXA_OK && rc != DEXA_E_ALREADY_EXISTS) return rc; /* a server tool wins */
  }
  return DEXA_OK;
}

static const char sign_in_schema[] = "{\"type\":\"object\",\"properties\":{}}";

/* The one tool of a server that refuses to list its tools until a person
 * signs in: calling it asks for the sign-in. */
static int add_sign_in_tool(mcp_source *s, dexa_tool_list *list) {
  char name[65], desc[200];
  snprintf(name, sizeof name, "%s__%s", s->client.cfg.name, TOOL_SIGN_IN);
  snprintf(desc, sizeof desc,
           "The MCP server %s needs the user to sign in before its tools can be used. Call this "
           "to ask the user to sign in.",
           s->client.cfg.name);
  return dexa_tool_list_add(list, name, desc, sign_in_schema, strlen(sign_in_schema),
                            DEXA_TOOL_READ, DEXA_APPROVAL_NONE);
}

static int list_tools(void *user_data, dexa_tool_list *list) {
  mcp_source *s = user_data;
  char err[600] = "";
  pthread_mutex_lock(&s->tools_mu);
  int rc = refresh(s, 0, err, sizeof err);
  if (rc == DEXA_E_AUTH && dexa__mcp_oauth_can_sign_in(&s->client)) {
    pthread_mutex_unlock(&s->tools_mu);
    return add_sign_in_tool(s, list);
  }
  for (size_t i = 0; rc == DEXA_OK && i < s->count; i++) {
    const mcp_tool *t = &s->tools[i];
    rc = dexa_tool_list_add(list, t->name, t->description, t->schema, strlen(t->schema), t->effect,
                            t->approval);
    if (rc == DEXA_E_INVALID_JSON || rc == DEXA_E_ALREADY_EXISTS) rc = DEXA_OK; /* skip that tool */
  }
  if (rc == DEXA_OK && rp_enabled(s)) rc = add_rp_tools(s, list);
  pthread_mutex_unlock(&s->tools_mu);
  return rc;
}

/* ---- results ---- */

static void text_of_block(dexa__buf *b, const cJSON *blk) {
  const char *type = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(blk, "type"));
  const char *text = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(blk, "text"));
  const char *mime = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(blk, "mimeType"));
  const char *uri = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(blk, "uri"));
  const char *name = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(blk, "name"));
  if (b->len) dexa__buf_putc(b, '\n');
  if (!type) type = "unknown";
  if (strcmp(type, "text") == 0) {
    dexa__buf_puts(b, text ? text : "");
  } else if (strcmp(type, "image") == 0 || strcmp(type, "audio") == 0) {
    const char *data = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(blk, "data"));
    dexa__buf_printf(b, "[%s %s, %zu bytes of base64]", type, mime ? mime : "", data ? strlen(data) : 0);
  } else if (strcmp(type, "resource_link") == 0) {
    dexa__buf_printf(b, "[resource link: %s %s]", name ? name : "", uri ? uri : "");
  } else if (strcmp(type, "resource") == 0) {
    const cJSON *r = cJSON_GetObjectItemCaseSensitive(blk, "resource");
    const char *ru = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(r, "uri"));
    const char *rt = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(r, "text"));
    if (rt) dexa__buf_printf(b, "[resource %s]\n%s", ru ? ru : "", rt);
    else dexa__buf_printf(b, "[resource %s: binary]", ru ? ru : "");
  } else {
    dexa__buf_printf(b, "[%s block]", type);
  }
}

/* The full result as content; a text view for the model. */
static int set_result(dexa_tool_output *out, const cJSON *res) {
  dexa__buf b;
  dexa__buf_init(&b);
  const cJSON *blk;
  int texts = 0;
  cJSON_ArrayForEach(blk, cJSON_GetObjectItemCaseSensitive(res, "content")) {
    text_of_block(&b, blk);
    texts++;
  }
  const cJSON *sc = cJSON_GetObjectItemCaseSensitive(res, "structuredContent");
  if (sc && !texts) { /* servers usually repeat it as text; else show it */
    char *j = cJSON_PrintUnformatted(sc);
    dexa__buf_puts(&b, j ? j : "");
    cJSON_free(j);
  }
  int is_error = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(res, "isError"));
  const char *rt = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(res, "resultType"));
  if (rt && strcmp(rt, "complete") != 0) {
    dexa__buf_reset(&b);
    dexa__buf_printf(&b, "the server asked for input (resultType %s), which this client cannot give", rt);
    is_error = 1;
  }
  char *full = cJSON_PrintUnformatted(res);
  int rc = b.oom || !full ? DEXA_E_NOMEM : dexa_tool_output_set_content(out, full, strlen(full));
  if (rc == DEXA_OK) rc = dexa_tool_output_set_text(out, b.data ? b.data : "", b.len, is_error);
  cJSON_free(full);
  dexa__buf_free(&b);
  return rc;
}

static int set_error(dexa_tool_output *out, int rc, const char *fmt, const char *why) {
  char text[800];
  snprintf(text, sizeof text, fmt, why);
  dexa_tool_output_set_text(out, text, strlen(text), 1);
  return rc;
}

/* Maps a failed request: transport failures are transient (READ tools are
 * retried; a WRITE's outcome is unknown when it timed out), a JSON-RPC
 * error or an oversized answer is this call's error for the model. */
static int request_failed(dexa_tool_output *out, int rc, const char *err) {
  if (rc == DEXA_E_TOOL) return set_error(out, DEXA_OK, "%s", err);
  if (rc == DEXA_E_AUTH) return set_error(out, DEXA_OK, "MCP server authorization: %s", err);
  if (rc == DEXA__MCP_E_STOPPED) /* recorded as the call's result, never retried */
    return set_error(out, DEXA_OK,
                     "MCP call cancelled (%s); it may or may not have taken effect", err);
  if (rc == DEXA_E_TOO_LARGE) return set_error(out, DEXA_OK, "the MCP server's answer was refused: %s", err);
  if (rc == DEXA_E_TIMEOUT)
    return set_error(out, rc, "MCP call timed out and was cancelled (%s); it may or may not have taken effect", err);
  if (rc == DEXA_E_NOMEM) return rc;
  return set_error(out, dexa_error_class(rc) == DEXA_CLASS_TRANSIENT ? rc : DEXA_E_IO,
                   "MCP server unavailable: %s", err);
}

/* The invocation's "the turn was stopped", for the MCP client to poll. */
static int invocation_stopped(void *user) { return dexa_tool_invocation_cancelled(user); }

static int run_request(mcp_source *s, const dexa_tool_invocation *inv, const char *method,
                       cJSON *params, cJSON **res, dexa_tool_output *out, char *err,
                       size_t err_size) {
  int rc = dexa__mcp_client_ensure(&s->client, err, err_size);
  if (rc != DEXA_OK) {
    cJSON_Delete(params);
    return request_failed(out, rc, err);
  }
  dexa__mcp_cancel cancel = {invocation_stopped, (void *)inv};
  rc = dexa__mcp_request_cancellable(&s->client, method, params, 0, &cancel, res, NULL, err,
                                     err_size);
  return rc == DEXA_OK ? DEXA_OK : request_failed(out, rc, err);
}

static cJSON *parse_args(const dexa_tool_invocation *inv) {
  const char *a;
  size_t n;
  dexa_tool_invocation_arguments(inv, &a, &n);
  cJSON *args = a && n ? cJSON_ParseWithLength(a, n) : NULL;
  if (!cJSON_IsObject(args)) {
    cJSON_Delete(args);
    args = cJSON_CreateObject();
  }
  return args;
}

static int call_rp_tool(mcp_source *s, const char *which, const dexa_tool_invocation *inv,
                        dexa_tool_output *out) {
  char err[600] = "";
  cJSON *args = parse_args(inv);
  cJSON *res = NULL;
  int rc = DEXA_OK;
  if (strcmp(which, TOOL_LIST_RP) == 0) {
    res = cJSON_CreateObject();
    static const char *const lists[3][3] = {{"resources", "resources/list", "resources"},
                                            {"resources", "resources/templates/list", "resourceTemplates"},
                                            {"prompts", "prompts/list", "prompts"}};
    rc = dexa__mcp_client_ensure(&s->client, err, sizeof err);
    if (rc != DEXA_OK) rc = request_failed(out, rc, err);
    for (int i = 0; rc == DEXA_OK && i < 3; i++) {
      if (!has_capability(s, lists[i][0])) continue;
      cJSON *items = NULL;
      rc = list_all(s, lists[i][1], lists[i][2], &items, NULL, err, sizeof err);
      if (rc == DEXA_E_TOOL && i == 1) rc = DEXA_OK; /* templates are optional */
      else if (rc != DEXA_OK) rc = request_failed(out, rc, err);
      else cJSON_AddItemToObject(res, lists[i][2], items);
    }
    if (rc == DEXA_OK && !out->has_text) {
      char *j = cJSON_PrintUnformatted(res);
      rc = j ? dexa_tool_output_set_content(out, j, strlen(j)) : DEXA_E_NOMEM;
      if (rc == DEXA_OK) rc = dexa_tool_output_set_text(out, j, strlen(j), 0);
      cJSON_free(j);
    }
  } else if (strcmp(which, TOOL_READ_RESOURCE) == 0) {
    const char *uri = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(args, "uri"));
    if (!uri) rc = set_error(out, DEXA_OK, "%s", "read_resource needs a string uri");
    else {
      cJSON *p = cJSON_CreateObject();
      cJSON_AddStringToObject(p, "uri", uri);
      rc = run_request(s, inv, "resources/read", p, &res, out, err, sizeof err);
      if (rc == DEXA_OK && res && !out->has_text) {
        cJSON *content = cJSON_CreateObject(), *blocks = cJSON_AddArrayToObject(content, "content");
        const cJSON *ct;
        cJSON_ArrayForEach(ct, cJSON_GetObjectItemCaseSensitive(res, "contents")) {
          cJSON *blk = cJSON_CreateObject();
          cJSON_AddStringToObject(blk, "type", "resource");
          cJSON_AddItemToObject(blk, "resource", cJSON_Duplicate(ct, 1));
          cJSON_AddItemToArray(blocks, blk);
        }
        rc = set_result(out, content);
        cJSON_Delete(content);
      }
    }
  } else {
    const char *name = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(args, "name"));
    if (!name) rc = set_error(out, DEXA_OK, "%s", "get_prompt needs a string name");
    else {
      cJSON *p = cJSON_CreateObject();
      cJSON_AddStringToObject(p, "name", name);
      cJSON *pa = cJSON_GetObjectItemCaseSensitive(args, "arguments");
      if (cJSON_IsObject(pa)) cJSON_AddItemToObject(p, "arguments", cJSON_Duplicate(pa, 1));
      rc = run_request(s, inv, "prompts/get", p, &res, out, err, sizeof err);
      if (rc == DEXA_OK && res && !out->has_text) {
        cJSON *content = cJSON_CreateObject(), *blocks = cJSON_AddArrayToObject(content, "content");
        const cJSON *m;
        cJSON_ArrayForEach(m, cJSON_GetObjectItemCaseSensitive(res, "messages")) {
          const char *role = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(m, "role"));
          cJSON *blk = cJSON_Duplicate(cJSON_GetObjectItemCaseSensitive(m, "content"), 1);
          if (!cJSON_IsObject(blk)) {
            cJSON_Delete(blk);
            continue;
          }
          const char *txt = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(blk, "text"));
          if (txt) { /* "role: text" for the model */
            char *labelled = malloc(strlen(txt) + 16);
            if (labelled) {
              sprintf(labelled, "%s: %s", role ? role : "?", txt);
              cJSON_ReplaceItemInObjectCaseSensitive(blk, "text", cJSON_CreateString(labelled));
              free(labelled);
            }
          }
          cJSON_AddItemToArray(blocks, blk);
        }
        rc = set_result(out, content);
        char *full = cJSON_PrintUnformatted(res);
        if (rc == DEXA_OK && full) rc = dexa_tool_output_set_content(out, full, strlen(full));
        cJSON_free(full);
        cJSON_Delete(content);
      }
    }
  }
  cJSON_Delete(res);
  cJSON_Delete(args);
  return rc;
}

/* Finds the tool of exposed name, listing again when it is not cached (a
 * restarted worker, or a list that changed). */
static int find_tool(mcp_source *s, const char *name, char **original, char *err, size_t err_size) {
  *original = NULL;
  pthread_mutex_lock(&s->tools_mu);
  int rc = DEXA_OK;
  for (int pass = 0; pass < 2 && !*original && rc == DEXA_OK; pass++) {
    rc = refresh(s, pass == 1, err, err_size);
    const mcp_tool *hit = NULL;
    for (size_t i = 0; rc == DEXA_OK && i < s->count && !hit; i++)
      if (strcmp(s->tools[i].name, name) == 0) hit = &s->tools[i];
    for (size_t i = 0; rc == DEXA_OK && i < s->count && !hit; i++) /* a 1.0 name */
      if (s->tools[i].name_1_0[0] && strcmp(s->tools[i].name_1_0, name) == 0) hit = &s->tools[i];
    if (hit && !(*original = strdup(hit->original))) rc = DEXA_E_NOMEM;
  }
  pthread_mutex_unlock(&s->tools_mu);
  return rc;
}

/* ---- asking the person ---- */

/* The answers of the invocation (a new array, never NULL unless out of
 * memory). */
static cJSON *answers_of(const dexa_tool_invocation *inv) {
  const char *a;
  size_t n;
  dexa_tool_invocation_answers(inv, &a, &n);
  cJSON *arr = cJSON_ParseWithLength(a, n);
  if (!cJSON_IsArray(arr)) {
    cJSON_Delete(arr);
    arr = cJSON_CreateArray();
  }
  return arr;
}

static const char *last_key(const cJSON *answers) {
  const cJSON *last = cJSON_GetArrayItem(answers, cJSON_GetArraySize(answers) - 1);
  return cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(last, "key"));
}

static int ask(dexa_tool_output *out, char *question) {
  int rc = question ? dexa_tool_output_ask(out, question, strlen(question)) : DEXA_E_NOMEM;
  free(question);
  return rc;
}

/* A sign-in question for the call: the server refused for want of
 * authorization and a person must sign in. */
static int ask_sign_in(mcp_source *s, const dexa_tool_invocation *inv, const cJSON *answers,
                       dexa_tool_output *out) {
  char err[600] = "", *url = NULL;
  int rc = dexa__mcp_oauth_begin(&s->client, dexa_tool_invocation_session_id(inv),
                                 dexa_tool_invocation_call_id(inv), &url, err, sizeof err);
  if (rc != DEXA_OK) return request_failed(out, rc, err);
  int n = 0;
  const cJSON *a;
  cJSON_ArrayForEach(a, answers) {
    const char *k = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(a, "key"));
    n += k && !strncmp(k, "auth:", 5);
  }
  char prompt[200], key[32];
  snprintf(prompt, sizeof prompt, "Sign in to %s so the agent can use it.", s->client.cfg.name);
  snprintf(key, sizeof key, "auth:%d", n + 1);
  dexa__buf q;
  dexa__buf_init(&q);
  dexa__buf_puts(&q, "{\"prompt\":");
  dexa__buf_json_cstr(&q, prompt);
  dexa__buf_puts(&q, ",\"url\":");
  dexa__buf_json_cstr(&q, url);
  dexa__buf_puts(&q, ",\"purpose\":\"sign_in\",\"key\":");
  dexa__buf_json_cstr(&q, key);
  dexa__buf_putc(&q, '}');
  free(url);
  dexa__buf_cstr(&q);
  return ask(out, q.oom ? (dexa__buf_free(&q), NULL) : dexa__buf_steal(&q, NULL));
}

/* 1 when the last answer refused a sign-in (declined, cancelled). */
static int sign_in_refused(const cJSON *answers) {
  const char *k = last_key(answers);
  const cJSON *last = cJSON_GetArrayItem(answers, cJSON_GetArraySize(answers) - 1);
  const char *action = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(last, "action"));
  return k && !strncmp(k, "auth:", 5) && action && strcmp(action, "accept") != 0;
}

/* Answers one server request of the call: from the recorded answers, from
 * the model (sampling), or by asking the person (returns 1: the call is
 * parked and out holds the question). */
static int handle_request(mcp_source *s, dexa__mcp_call *call, dexa__mcp_server_request *req,
                          const dexa_tool_invocation *inv, const cJSON *answers,
                          dexa_tool_output *out) {
  dexa__mcp_client *c = &s->client;
  const char *method = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(req->msg, "method"));
  const cJSON *params = cJSON_GetObjectItemCaseSensitive(req->msg, "params");
  char key[32];
  dexa__mcp_request_key(req->msg, key, sizeof key);
  int sampling = method && !strcmp(method, "sampling/createMessage");
  const cJSON *answer = NULL;
  if (!sampling || c->cfg.sampling == DEXA__MCP_SAMPLING_ASK) {
    pthread_mutex_lock(&c->mu);
    unsigned used = call->used;
    pthread_mutex_unlock(&c->mu);
    answer = dexa__mcp_find_answer(answers, key, &used);
    pthread_mutex_lock(&c->mu);
    call->used = used;
    pthread_mutex_unlock(&c->mu);
    if (!answer) { /* a new question: park the call with the request open */
      const char *why = NULL;
      char *q = sampling ? dexa__mcp_sampling_question(c->cfg.name, params, key)
                         : dexa__mcp_elicitation_question(params, key, &why);
      int rc = q || why ? DEXA_OK : DEXA_E_NOMEM;
      if (q) rc = ask(out, q);
      if (q && rc == DEXA_OK) {
        dexa__mcp_park(&s->parking, call, req, c->cfg.question_timeout_ms);
        return 1;
      }
      /* Not a question the session can show (or no memory): the server hears so. */
      dexa__mcp_respond(c, req->generation, req->msg, NULL, why ? -32602 : -32603,
                        why ? why : "out of memory");
      dexa__mcp_server_request_free(req);
      dexa__mcp_call_hold(call, 0);
      return rc;
    }
  }
  cJSON *result = NULL;
  int64_t code = 0;
  const char *message = NULL;
  char why[300];
  if (!sampling) {
    result = dexa__mcp_elicitation_result(params, answer);
  } else {
    const char *allow = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(answer, "answer"));
    char *request = dexa__mcp_sampling_request(params), *reply = NULL;
    size_t n = 0;
    int rc = DEXA_OK;
    if (answer && (!allow || strcmp(allow, "Allow"))) code = -1, message = "User rejected sampling request";
    else if (!request) code = -32602, message = "the sampling request has no messages";
    else if ((rc = dexa_tool_invocation_sample(inv, request, strlen(request), &reply, &n)) != DEXA_OK) {
      snprintf(why, sizeof why, "the model call failed: %s", dexa_strerror(rc));
      code = -32603, message = why;
    } else {
      result = dexa__mcp_sampling_result(reply);
    }
    free(request);
    dexa_free(reply);
  }
  if (!result && !message) code = -32603, message = "out of memory";
  dexa__mcp_respond(c, req->generation, req->msg, result, code, message);
  dexa__mcp_server_request_free(req);
  dexa__mcp_call_hold(call, 0);
  return 0;
}

/* Waits for the call, answering what the server asks meanwhile. Returns 1
 * when the call was parked with a question (out holds it), 0 when it ended
 * (call->done), or an error. */
static int await_call(mcp_source *s, dexa__mcp_call *call, dexa__mcp_server_request *open,
                      const dexa_tool_invocation *inv, const cJSON *answers,
                      dexa_tool_output *out) {
  int rc = open ? handle_request(s, call, open, inv, answers, out) : 0;
  dexa__mcp_server_request *req = NULL;
  while (rc == 0 && dexa__mcp_call_next(call, &req, invocation_stopped, (void *)inv))
    rc = handle_request(s, call, req, inv, answers, out);
  return rc;
}

/* ---- calling a tool ---- */

/* "<server>__sign_in": signs in, then says the tools are there. */
static int call_sign_in(mcp_source *s, const dexa_tool_invocation *inv, const cJSON *answers,
                        dexa_tool_output *out) {
  char err[600] = "";
  if (sign_in_refused(answers))
    return set_error(out, DEXA_OK, "The user did not sign in to %s.", s->client.cfg.name);
  pthread_mutex_lock(&s->tools_mu);
  int rc = refresh(s, 1, err, sizeof err);
  pthread_mutex_unlock(&s->tools_mu);
  if (rc == DEXA_E_AUTH && dexa__mcp_oauth_can_sign_in(&s->client)) return ask_sign_in(s, inv, answers, out);
  if (rc != DEXA_OK) return request_failed(out, rc, err);
  char text[300];
  snprintf(text, sizeof text, "Signed in to %s: its tools are offered from the next step on.",
           s->client.cfg.name);
  return dexa_tool_output_set_text(out, text, strlen(text), 0);
}

/* The result of an ended call. */
static int call_result(mcp_source *s, dexa__mcp_call *call, const dexa_tool_invocation *inv,
                       const cJSON *answers, dexa_tool_output *out) {
  dexa__mcp_client *c = &s->client;
  pthread_mutex_lock(&c->mu);
  int rc = call->rc;
  cJSON *res = call->result;
  call->result = NULL;
  char err[600];
  memcpy(err, call->err, sizeof err);
  pthread_mutex_unlock(&c->mu);
  if (rc == DEXA_E_AUTH && dexa__mcp_oauth_can_sign_in(c)) rc = ask_sign_in(s, inv, answers, out);
  else if (rc != DEXA_OK) rc = request_failed(out, rc, err);
  else if (res) rc = set_result(out, res);
  cJSON_Delete(res);
  return rc;
}

/* A call that ran before, asked, and whose server call this worker no
 * longer holds: runs again from the start unless it is a WRITE that may
 * have acted before it asked (0: go on). */
static int lost_write(mcp_source *s, const dexa_tool_invocation *inv, const cJSON *answers,
                      dexa_tool_output *out) {
  const char *k = last_key(answers);
  if (!k || !strncmp(k, "auth:", 5) || dexa_tool_invocation_effect(inv) != DEXA_TOOL_WRITE) return 0;
  set_error(out, DEXA_OK,
            "The outcome of this call is unknown: the MCP server %s asked the user for input "
            "during it, and the call was lost while it waited (a worker restart or the question's "
            "time ran out). It was not run again because it is a write; check its effect before "
            "trying again.",
            s->client.cfg.name);
  return 1;
}

static int call_tool(void *user_data, const dexa_tool_invocation *inv, dexa_tool_output *out) {
  mcp_source *s = user_data;
  const char *name = dexa_tool_invocation_name(inv);
  size_t pl = strlen(s->client.cfg.name);
  if (!name || strncmp(name, s->client.cfg.name, pl) != 0 || strncmp(name + pl, "__", 2) != 0)
    return set_error(out, DEXA_OK, "unknown tool %s", name ? name : "");
  cJSON *answers = answers_of(inv);
  if (!answers) return DEXA_E_NOMEM;
  const char *key = dexa_tool_invocation_idempotency_key(inv);
  char err[600] = "";
  int rc = DEXA_OK;
  dexa__mcp_server_request *open = NULL;
  dexa__mcp_call *call = key ? dexa__mcp_unpark(&s->parking, key, &open) : NULL;
  if (!call && sign_in_refused(answers)) {
    rc = set_error(out, DEXA_OK, "The user did not sign in to %s; the call did not run.", s->client.cfg.name);
    goto done;
  }
  if (!call && lost_write(s, inv, answers, out)) goto done;
  if (!call) {
    char *original = NULL;
    rc = find_tool(s, name, &original, err, sizeof err);
    const char *rest = name + pl + 2;
    if ((rc == DEXA_E_AUTH || (rc == DEXA_OK && !original)) && !strcmp(rest, TOOL_SIGN_IN)) {
      rc = call_sign_in(s, inv, answers, out);
      goto done;
    }
    if (rc == DEXA_E_AUTH && dexa__mcp_oauth_can_sign_in(&s->client)) {
      rc = ask_sign_in(s, inv, answers, out);
      goto done;
    }
    if (rc != DEXA_OK) {
      rc = request_failed(out, rc, err);
      goto done;
    }
    if (!original) {
      if (s->client.cfg.resource_and_prompt_tools &&
          (!strcmp(rest, TOOL_LIST_RP) || !strcmp(rest, TOOL_READ_RESOURCE) || !strcmp(rest, TOOL_GET_PROMPT)))
        rc = call_rp_tool(s, rest, inv, out);
      else
        rc = set_error(out, DEXA_OK, "the MCP server no longer offers the tool %s", name);
      goto done;
    }
    cJSON *params = cJSON_CreateObject();
    cJSON_AddStringToObject(params, "name", original);
    cJSON_AddItemToObject(params, "arguments", parse_args(inv));
    cJSON *meta = cJSON_AddObjectToObject(params, "_meta");
    if (key) cJSON_AddStringToObject(meta, IDEMPOTENCY_META, key);
    free(original);
    rc = dexa__mcp_client_ensure(&s->client, err, sizeof err);
    if (rc == DEXA_OK) rc = dexa__mcp_call_start(&s->client, key, params, 0, &call);
    else cJSON_Delete(params);
    if (rc == DEXA_E_AUTH && dexa__mcp_oauth_can_sign_in(&s->client)) {
      rc = ask_sign_in(s, inv, answers, out);
      goto done;
    }
    if (rc != DEXA_OK) {
      rc = request_failed(out, rc, err);
      goto done;
    }
  }
  rc = await_call(s, call, open, inv, answers, out);
  if (rc == 1) { /* parked with a question: the parking holds the call now */
    call = NULL;
    rc = DEXA_OK;
  } else if (rc == DEXA_OK) {
    rc = call_result(s, call, inv, answers, out);
  }
done:
  if (call) dexa__mcp_call_unref(call);
  cJSON_Delete(answers);
  return rc;
}

static void destroy(void *user_data) {
  mcp_source *s = user_data;
  dexa__mcp_parking_free(&s->parking);
  dexa__mcp_client_close(&s->client);
  free_tools(s);
  pthread_mutex_destroy(&s->tools_mu);
  free(s);
}

static int source_new(dexa_tool_source **out, const dexa__mcp_server_cfg *cfg, dexa__mcp_host *host) {
  mcp_source *s = calloc(1, sizeof *s);
  if (!s) return DEXA_E_NOMEM;
  int rc = dexa__mcp_client_init(&s->client, cfg, host);
  if (rc != DEXA_OK) {
    free(s);
    return rc;
  }
  pthread_mutex_init(&s->tools_mu, NULL);
  dexa__mcp_parking_init(&s->parking);
  dexa_tool_source_vtable vt;
  dexa_tool_source_vtable_init(&vt, sizeof vt);
  vt.list_tools = list_tools;
  vt.call_tool = call_tool;
  vt.destroy = destroy;
  char name[64];
  snprintf(name, sizeof name, "mcp:%s", cfg->name);
  rc = dexa_tool_source_new(out, name, &vt, s);
  if (rc != DEXA_OK) destroy(s);
  return rc;
}

DEXA_EXTERN int dexa_mcp_tool_sources_new(dexa_tool_source ***out, size_t *count,
                                          const dexa_mcp_config *config) {
  if (!out || !count) return DEXA_E_INVALID_ARG;
  *out = NULL;
  *count = 0;
  if (!config) return DEXA_E_INVALID_ARG;
  dexa_tool_source **v = calloc(config->count ? config->count : 1, sizeof *v);
  if (!v) return DEXA_E_NOMEM;
  for (size_t i = 0; i < config->count; i++) {
    int rc = source_new(&v[i], &config->servers[i], config->host);
    if (rc != DEXA_OK) {
      dexa_mcp_tool_sources_free(v, i);
      return rc;
    }
  }
  *out = v;
  *count = config->count;
  return DEXA_OK;
}

DEXA_EXTERN void dexa_mcp_tool_sources_free(dexa_tool_source **sources, size_t count) {
  if (!sources) return;
  for (size_t i = 0; i < count; i++) dexa_tool_source_free(sources[i]);
  free(sources);
}

dexa__mcp_client *dexa__mcp_source_client(dexa_tool_source *s) {
  return s && s->vt.call_tool == call_tool ? &((mcp_source *)s->user_data)->client : NULL;
}
