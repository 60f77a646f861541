/* Every RPC, Step, attribute, channel and event name that README.md and the
 * man pages mention exists, and the lists of dexagents-flow(7) and
 * dexagents-events(7) name exactly what the flow has. The truth comes from
 * the library: dexa_flow_describe for Steps, RPCs, attributes and
 * channels, a tour of every Step and RPC for the event types.
 *
 * Rules for the prose (EXAMPLE sections and README code blocks left out):
 *   - a CamelCase word is a Step, attribute, channel, stream or flow type,
 *     a name of the sources (a binding's class), or one of the few other
 *     words listed in OTHER_CAMEL;
 *   - a snake_case word is an RPC, an event type, or a name the sources use
 *     (an identifier or string of include/, src/, examples/, test/, or a
 *     file name of the tree), or one of EXTERNAL (other libraries' names). */
#include <cjson/cJSON.h>
#include <dexagents/dexagents.h>
#include <glob.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "support/memhost.h"
#include "support/tour.h"
#include "testing.h"

/* CamelCase words of the docs that are not flow names. */
static const char *const OTHER_CAMEL[] = {"WaitFor", "PostgreSQL", "JavaScript", "LangGraph",
                                          "OpenAI", "AddressSanitizer", "ThreadSanitizer", "KiB",
                                          "MiB", "DefaultChatTransport", "SigV4", "CommonJS", "ConverseStream",
                                          "RunState", "AgentTool", "OpenID", "IdP", "OpenTelemetry", "GenAI", NULL};
/* Other libraries' names the docs use. */
static const char *const EXTERNAL[] = {"con_cls",          "curl_version_info",
                                       "napi_threadsafe_function",
                                       "pg_stat_activity", "pg_stat_database", "pg_stat_statements",
                                       "deadlock_timeout",
                                       NULL};

/* ---- a set of strings ---- */

typedef struct set {
  char **items;
  size_t n, cap;
} set;

static int set_has(const set *s, const char *w, size_t n) {
  for (size_t i = 0; i < s->n; i++)
    if (strlen(s->items[i]) == n && memcmp(s->items[i], w, n) == 0) return 1;
  return 0;
}

static void set_add(set *s, const char *w, size_t n) {
  if (set_has(s, w, n)) return;
  if (s->n == s->cap) {
    s->cap = s->cap ? s->cap * 2 : 64;
    s->items = realloc(s->items, s->cap * sizeof *s->items);
  }
  s->items[s->n++] = strndup(w, n);
}

static void set_free(set *s) {
  for (size_t i = 0; i < s->n; i++) free(s->items[i]);
  free(s->items);
  memset(s, 0, sizeof *s);
}

static int listed(const char *const *list, const char *w, size_t n) {
  for (size_t i = 0; list[i]; i++)
    if (strlen(list[i]) == n && memcmp(list[i], w, n) == 0) return 1;
  return 0;
}

/* ---- the truth ---- */

typedef struct truth {
  set steps, rpcs, attrs, channels, events, flow; /* flow: every flow name, '/' stripped */
  set source;                                     /* every word the sources use */
} truth;

static void add_names(set *s, set *flow, const cJSON *arr, const char *member) {
  const cJSON *e;
  cJSON_ArrayForEach(e, arr) {
    const char *name = member ? cJSON_GetStringValue(cJSON_GetObjectItem(e, member)) : e->valuestring;
    size_t n = strlen(name);
    set_add(s, name, n);
    if (flow) set_add(flow, name, n && name[n - 1] == '/' ? n - 1 : n);
  }
}

static void add_event_types(set *events, const char *json) {
  cJSON *arr = cJSON_Parse(json);
  const cJSON *e;
  cJSON_ArrayForEach(e, arr) {
    const char *t = cJSON_GetStringValue(cJSON_GetObjectItem(e, "type"));
    if (t) set_add(events, t, strlen(t));
  }
  cJSON_Delete(arr);
}

static char *slurp(const char *path) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  char *s = malloc((size_t)n + 1);
  size_t got = fread(s, 1, (size_t)n, f);
  s[got] = '\0';
  fclose(f);
  return s;
}

static int word_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}

/* Adds every word of text to s; C comments are skipped when c_like. */
static void add_words(set *s, const char *text, int c_like) {
  const char *p = text;
  while (*p) {
    if (c_like && p[0] == '/' && p[1] == '*') {
      const char *e = strstr(p + 2, "*/");
      p = e ? e + 2 : p + strlen(p);
      continue;
    }
    if (!word_char(*p)) {
      p++;
      continue;
    }
    const char *w = p;
    while (word_char(*p)) p++;
    set_add(s, w, (size_t)(p - w));
  }
}

static void add_files(set *s, const char *pattern, int c_like, int names_only) {
  glob_t g;
  if (glob(pattern, 0, NULL, &g) != 0) return;
  for (size_t i = 0; i < g.gl_pathc; i++) {
    if (strcmp(g.gl_pathv[i], __FILE__) == 0) continue; /* it names wrong names on purpose */
    const char *base = strrchr(g.gl_pathv[i], '/');
    base = base ? base + 1 : g.gl_pathv[i];
    const char *dot = strchr(base, '.');
    set_add(s, base, dot ? (size_t)(dot - base) : strlen(base));
    if (names_only) continue;
    char *t = slurp(g.gl_pathv[i]);
    if (t) add_words(s, t, c_like);
    free(t);
  }
  globfree(&g);
}

static int load_truth(truth *t) {
  memset(t, 0, sizeof *t);
  dexa_agent *a = tour_agent(NULL, NULL);
  if (!a) return -1;
  char *d = NULL;
  dexa_flow_describe(&d, NULL, a);
  cJSON *desc = cJSON_Parse(d);
  dexa_free(d);
  add_names(&t->steps, &t->flow, cJSON_GetObjectItem(desc, "steps"), "name");
  add_names(&t->rpcs, NULL, cJSON_GetObjectItem(desc, "rpcs"), "name");
  add_names(&t->attrs, &t->flow, cJSON_GetObjectItem(desc, "attributes"), NULL);
  add_names(&t->channels, &t->flow, cJSON_GetObjectItem(desc, "channels"), NULL);
  add_names(&t->channels, &t->flow, cJSON_GetObjectItem(desc, "streams"), NULL);
  const char *ft = cJSON_GetStringValue(cJSON_GetObjectItem(desc, "flow_type"));
  set_add(&t->flow, ft, strlen(ft));
  cJSON_Delete(desc);
  memhost *h = memhost_new(a, "s-docs");
  int failures = tour_run(h);
  add_event_types(&t->events, memhost_events(h));
  add_event_types(&t->events, memhost_live(h));
  memhost_free(h);
  dexa_agent_free(a);
  static const char *const c_files[] = {"include/dexagents/*.h", "src/*/*.[ch]", "examples/*/*.c",
                                        "test/*/*.c", "test/*/*.h", NULL};
  static const char *const other_files[] = {
      "test/*/*.sh",       "test/*/*.py",      "test/*/*.js",        "test/*/*.mjs",
      "bindings/*/*.js",   "bindings/*/*.mjs", "bindings/*/lib/*.js", "bindings/*/*/*.py",
      "bindings/*/src/*.c", "examples/*/ui/*.js", NULL};
  for (size_t i = 0; c_files[i]; i++) add_files(&t->source, c_files[i], 1, 0);
  for (size_t i = 0; other_files[i]; i++) add_files(&t->source, other_files[i], 0, 0);
  add_files(&t->source, "*/*", 0, 1);
  add_files(&t->source, "*/*/*", 0, 1);
  return failures;
}

static void truth_free(truth *t) {
  set_free(&t->steps), set_free(&t->rpcs), set_free(&t->attrs), set_free(&t->channels);
  set_free(&t->events), set_free(&t->flow), set_free(&t->source);
}

/* ---- the docs ---- */

/* The prose of a page: roff font escapes and EXAMPLE sections (man) or
 * code blocks (markdown) removed. */
static char *prose(const char *path) {
  char *t = slurp(path);
  if (!t) return NULL;
  int md = strstr(path, ".md") != NULL;
  char *out = malloc(strlen(t) + 1), *o = out;
  int skip = 0;
  for (char *line = t; line && *line;) {
    char *nl = strchr(line, '\n');
    size_t n = nl ? (size_t)(nl - line) : strlen(line);
    if (md && n >= 3 && memcmp(line, "```", 3) == 0) {
      skip = !skip;
    } else if (!md && n >= 4 && memcmp(line, ".SH ", 4) == 0) {
      skip = n >= 11 && memcmp(line, ".SH EXAMPLE", 11) == 0;
      memcpy(o, line, n);
      o += n;
      *o++ = '\n';
    } else if (!skip) {
      for (size_t i = 0; i < n; i++) {
        if (line[i] == '\\' && i + 2 < n && line[i + 1] == 'f') {
          i += 2; /* \fB \fI \fP \fR */
          continue;
        }
        *o++ = line[i];
      }
      *o++ = '\n';
    }
    line = nl ? nl + 1 : NULL;
  }
  *o = '\0';
  free(t);
  return out;
}

static int is_camel(const char *w, size_t n) {
  if (n < 3 || w[0] < 'A' || w[0] > 'Z') return 0;
  int humps = 0;
  for (size_t i = 1; i < n; i++) {
    if (w[i] == '_') return 0;
    if (w[i] >= 'A' && w[i] <= 'Z' && w[i - 1] >= 'a' && w[i - 1] <= 'z') humps++;
  }
  return humps > 0 && w[1] >= 'a' && w[1] <= 'z';
}

static int is_snake(const char *w, size_t n) {
  if (n < 3 || w[0] < 'a' || w[0] > 'z' || w[n - 1] == '_') return 0;
  int under = 0;
  for (size_t i = 0; i < n; i++) {
    if (w[i] == '_') under++;
    else if (!((w[i] >= 'a' && w[i] <= 'z') || (w[i] >= '0' && w[i] <= '9'))) return 0;
  }
  return under > 0;
}

static int known_snake(const truth *t, const char *w, size_t n) {
  if (set_has(&t->rpcs, w, n) || set_has(&t->events, w, n) || set_has(&t->source, w, n) ||
      listed(EXTERNAL, w, n))
    return 1;
  /* A node of the session graph in Mermaid: "r_<rpc>" (dexagents-graph(7)). */
  if (n > 2 && w[0] == 'r' && w[1] == '_' && set_has(&t->rpcs, w + 2, n - 2)) return 1;
  /* An MCP tool as offered to models, "<server>__<tool>": a server's name. */
  for (size_t i = 1; i + 2 < n; i++)
    if (w[i] == '_' && w[i + 1] == '_') return 1;
  return 0;
}

/* Checks the words of one page; returns how many are unknown. */
static int check_words(const truth *t, const char *path, const char *text) {
  int bad = 0;
  set seen = {0};
  for (const char *p = text; *p;) {
    if (!word_char(*p)) {
      p++;
      continue;
    }
    const char *w = p;
    while (word_char(*p)) p++;
    size_t n = (size_t)(p - w);
    if (set_has(&seen, w, n)) continue;
    set_add(&seen, w, n);
    int unknown = 0;
    if (is_camel(w, n)) /* a class or type of a binding or example counts too */
      unknown = !set_has(&t->flow, w, n) && !listed(OTHER_CAMEL, w, n) &&
                !set_has(&t->source, w, n);
    else if (is_snake(w, n))
      unknown = !known_snake(t, w, n);
    if (unknown) {
      fprintf(stderr, "    %s: \"%.*s\" is no RPC, Step, attribute, channel, event or name of the sources\n",
              path, (int)n, w);
      bad++;
    }
  }
  set_free(&seen);
  return bad;
}

/* The tags (".TP" items) of a section of a man7 page: their first word,
 * with a map's "/" kept ("AgentMessages/<seq>" gives "AgentMessages/"). */
static void section_tags(const char *text, const char *section, set *out) {
  char head[64];
  snprintf(head, sizeof head, "\n.SH %s\n", section);
  const char *s = strstr(text, head);
  if (!s) return;
  s += strlen(head);
  const char *end = strstr(s, "\n.SH ");
  for (const char *p = strstr(s, ".TP\n"); p && (!end || p < end); p = strstr(p + 1, ".TP\n")) {
    const char *l = p + 4;
    if (!strncmp(l, ".BR ", 4)) l += 4;
    else if (!strncmp(l, ".B ", 3)) l += 3;
    const char *w = l;
    while (word_char(*l)) l++;
    size_t n = (size_t)(l - w) + (*l == '/');
    if (n) set_add(out, w, n);
  }
}

/* Both ways: every tag is a real name (in real, or in also when not NULL)
 * and every name of real is a tag. */
static int same_names(const char *what, const set *tags, const set *real, const set *also) {
  int bad = 0;
  for (size_t i = 0; i < tags->n; i++)
    if (!set_has(real, tags->items[i], strlen(tags->items[i])) &&
        !(also && set_has(also, tags->items[i], strlen(tags->items[i])))) {
      fprintf(stderr, "    %s lists \"%s\", which does not exist\n", what, tags->items[i]);
      bad++;
    }
  for (size_t i = 0; i < real->n; i++)
    if (!set_has(tags, real->items[i], strlen(real->items[i]))) {
      fprintf(stderr, "    %s does not list \"%s\"\n", what, real->items[i]);
      bad++;
    }
  return bad;
}

/* ---- tests ---- */

static truth T;
static int tour_failures;

static void test_the_truth_is_complete(void) {
  CHECK_EQ_INT(tour_failures, 0);
  CHECK(T.steps.n >= 13);
  CHECK(T.rpcs.n >= 9);
  CHECK(T.events.n >= 20);
  CHECK(set_has(&T.events, "tool_call_started", 17)); /* a live event */
  CHECK(set_has(&T.source, "dexa_dispatch", 13));
  CHECK(!set_has(&T.source, "delete_queued_message", 21));
}

static void test_every_name_in_readme_and_man_pages_exists(void) {
  int bad = 0, pages = 0;
  glob_t g;
  CHECK(glob("man/man[37]/*.[37]", 0, NULL, &g) == 0);
  for (size_t i = 0; i <= g.gl_pathc; i++) {
    const char *path = i < g.gl_pathc ? g.gl_pathv[i] : "README.md";
    struct stat st;
    if (lstat(path, &st) == 0 && S_ISLNK(st.st_mode)) continue; /* a shared page */
    char *text = prose(path);
    if (!text) continue;
    bad += check_words(&T, path, text);
    pages++;
    free(text);
  }
  globfree(&g);
  CHECK(pages > 50);
  CHECK_EQ_INT(bad, 0);
}

static void test_flow_and_event_pages_list_exactly_the_flows_names(void) {
  char *flow = prose("man/man7/dexagents-flow.7");
  char *events = prose("man/man7/dexagents-events.7");
  CHECK(flow && events);
  set steps = {0}, attrs = {0}, channels = {0}, rpcs = {0}, types = {0};
  section_tags(flow, "STEPS", &steps);
  section_tags(flow, "ATTRIBUTES", &attrs);
  section_tags(flow, "CHANNELS AND STREAM", &channels);
  section_tags(flow, "RPCS", &rpcs);
  section_tags(events, "EVENTS", &types);
  /* Events the tour cannot make (reasoning deltas: the demo model does not
   * reason) must at least be names of the sources. */
  int bad = same_names("dexagents-flow(7) STEPS", &steps, &T.steps, NULL) +
            same_names("dexagents-flow(7) ATTRIBUTES", &attrs, &T.attrs, NULL) +
            same_names("dexagents-flow(7) CHANNELS AND STREAM", &channels, &T.channels, NULL) +
            same_names("dexagents-flow(7) RPCS", &rpcs, &T.rpcs, NULL) +
            same_names("dexagents-events(7) EVENTS", &types, &T.events, &T.source);
  set_free(&steps), set_free(&attrs), set_free(&channels), set_free(&rpcs), set_free(&types);
  free(flow);
  free(events);
  CHECK_EQ_INT(bad, 0);
}

int main(void) {
  tour_failures = load_truth(&T);
  RUN(test_the_truth_is_complete);
  RUN(test_every_name_in_readme_and_man_pages_exists);
  RUN(test_flow_and_event_pages_list_exactly_the_flows_names);
  truth_free(&T);
  TEST_MAIN_END();
}
