/* dexagents chat: a terminal chat with one session, with every session
 * feature: messages (queued while a turn runs), tool approvals, questions,
 * timers, plans, Steer and Stop, the session graph.
 *
 * One loop reads the session's events (a short long-poll), prints them as
 * they stream, and takes input:
 *   - on a terminal, whenever a line is typed, also while a turn runs or a
 *     timer is waited for, so :stop and :steer act at once;
 *   - from a pipe, a line once the session has settled (the turn ended, or
 *     it waits for an approval, an answer or a timer), so a script's
 *     ":approve" comes after the approval it means. At the end of the input
 *     the chat follows the session until it settles and no timer is left.
 * Steps run on this process's worker threads (and on any other worker of
 * the store). */
#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"

#define RESUME_SHOW_MESSAGES 8

/* Lines from fd 0 without stdio, so poll() tells the truth about what is
 * left to read. */
typedef struct line_reader {
  char buf[65536];
  size_t len;
  int eof;
} line_reader;

typedef struct chat {
  cli_app app;
  cli_style st;
  chat_render r;
  line_reader in;
  char sid[160];
  char *token;
  int interactive, prompted, quit, timer_waits;
  cJSON *shown; /* call ids whose prompt was printed */
} chat;

/* ---- input ---------------------------------------------------------------------------- */

static int has_line(const line_reader *l) { return memchr(l->buf, '\n', l->len) != NULL; }

/* 1 when a line (or the end) can be read without waiting. */
static int input_ready(const line_reader *l) {
  if (has_line(l) || l->eof) return 1;
  struct pollfd p = {0, POLLIN, 0};
  return poll(&p, 1, 0) > 0;
}

/* The next line without its newline (malloc'd); NULL at the end. Blocks. */
static char *next_line(line_reader *l) {
  for (;;) {
    char *nl = memchr(l->buf, '\n', l->len);
    if (nl || (l->eof && l->len)) {
      size_t n = nl ? (size_t)(nl - l->buf) : l->len;
      char *line = strndup(l->buf, n);
      size_t used = nl ? n + 1 : n;
      memmove(l->buf, l->buf + used, l->len - used);
      l->len -= used;
      if (line && n && line[n - 1] == '\r') line[n - 1] = '\0';
      return line;
    }
    if (l->eof) return NULL;
    if (l->len == sizeof l->buf) { /* a line longer than the buffer: cut it */
      l->buf[l->len - 1] = '\n';
      continue;
    }
    ssize_t got = read(0, l->buf + l->len, sizeof l->buf - l->len);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) l->eof = 1;
    else l->len += (size_t)got;
  }
}

/* A message: a line, or several joined where a line ends in '\'. */
static char *next_message(line_reader *l) {
  char *msg = NULL;
  size_t len = 0;
  for (;;) {
    char *line = next_line(l);
    if (!line) return msg;
    size_t n = strlen(line);
    int more = n && line[n - 1] == '\\';
    if (more) line[--n] = '\0';
    char *grown = realloc(msg, len + n + 2);
    if (!grown) {
      free(line);
      return msg;
    }
    msg = grown;
    memcpy(msg + len, line, n);
    len += n;
    if (more) msg[len++] = '\n';
    msg[len] = '\0';
    free(line);
    if (!more) return msg;
  }
}

/* ---- events ------------------------------------------------------------------------------ */

/* Reads and prints the events after c->token, waiting up to timeout_ms
 * for the first. Returns how many came, or -1 on error. */
static int read_batch(chat *c, int64_t timeout_ms) {
  char *out = NULL;
  size_t len = 0;
  int rc = dexa_runtime_read_events(c->app.rt, c->sid, c->token, 200, timeout_ms, &out, &len);
  if (rc != DEXA_OK) {
    cli_fail(&c->app.g, "events", rc, out);
    dexa_free(out);
    return -1;
  }
  cJSON *doc = cJSON_ParseWithLength(out, len);
  dexa_free(out);
  const cJSON *item;
  int n = 0;
  cJSON_ArrayForEach(item, cJSON_GetObjectItemCaseSensitive(doc, "events")) {
    if (!n++ && c->prompted) { /* output while the prompt is shown */
      fputc('\n', stdout);
      c->prompted = 0;
    }
    chat_render_event(&c->r, cJSON_GetObjectItemCaseSensitive(item, "event"));
  }
  const char *token = cli_str(doc, "token");
  if (*token) {
    free(c->token);
    c->token = strdup(token);
  }
  cJSON_Delete(doc);
  return n;
}

/* Prints, once each, what waits for the person and the timers that run.
 * Sets c->timer_waits. */
static void show_waits(chat *c) {
  cJSON *snap = NULL;
  c->timer_waits = 0;
  if (cli_call(c->app.rt, c->sid, "snapshot", "{}", &snap, NULL) != DEXA_OK) return;
  const cJSON *p;
  cJSON_ArrayForEach(p, cJSON_GetObjectItemCaseSensitive(snap, "pending")) {
    const char *kind = cli_str(p, "kind"), *id = cli_str(p, "call_id");
    c->timer_waits += !strcmp(kind, "timer");
    if (cJSON_GetObjectItemCaseSensitive(c->shown, id)) continue;
    cJSON_AddTrueToObject(c->shown, id);
    chat_render_end_line(&c->r);
    char *args = cJSON_PrintUnformatted(cJSON_GetObjectItemCaseSensitive(p, "arguments"));
    if (!strcmp(kind, "approval")) {
      printf("%s  ? approve %s %s%s  (:approve [note] or :reject [note])\n", c->st.warn,
             cli_str(p, "name"), args ? args : "{}", c->st.reset);
    } else if (!strcmp(kind, "question")) {
      printf("%s  ? %s", c->st.warn, cli_str(p, "prompt"));
      const cJSON *ch;
      int i = 0;
      cJSON_ArrayForEach(ch, cJSON_GetObjectItemCaseSensitive(p, "choices")) {
        printf("%s%s", i++ ? " | " : "  [", cJSON_GetStringValue(ch));
      }
      printf("%s%s  (:answer TEXT)\n", i ? "]" : "", c->st.reset);
    } else if (!strcmp(kind, "timer")) {
      printf("%s  (waiting %lld s: %s; :stop ends the turn, :steer starts a queued message)%s\n",
             c->st.dim, (long long)cli_num(p, "seconds"), cli_str(p, "reason"), c->st.reset);
    }
    cJSON_free(args);
  }
  cJSON_Delete(snap);
  fflush(stdout);
}

/* ---- commands -------------------------------------------------------------------------------- */

static int say_error(chat *c, const char *rpc, int rc, char *err) {
  chat_render_end_line(&c->r);
  cJSON *d = err ? cJSON_Parse(err) : NULL;
  const char *msg = cli_str(cJSON_GetObjectItemCaseSensitive(d, "error"), "message");
  printf("%s%s: %s (%s)%s\n", c->st.err, rpc, *msg ? msg : dexa_strerror(rc), dexa_error_name(rc),
         c->st.reset);
  cJSON_Delete(d);
  dexa_free(err);
  return 0;
}

static int rpc(chat *c, const char *name, cJSON *in, cJSON **resp) {
  char *json = cJSON_PrintUnformatted(in), *err = NULL;
  cJSON_Delete(in);
  int rc = json ? cli_call(c->app.rt, c->sid, name, json, resp, &err) : DEXA_E_NOMEM;
  cJSON_free(json);
  if (rc != DEXA_OK) return say_error(c, name, rc, err);
  return 1;
}

/* The oldest pending call of kind, or the newest queued message ("queue"). */
static int pick(chat *c, const char *kind, char *out, size_t n) {
  cJSON *snap = NULL;
  out[0] = '\0';
  if (cli_call(c->app.rt, c->sid, "snapshot", "{}", &snap, NULL) != DEXA_OK) return 0;
  const cJSON *p;
  if (!strcmp(kind, "queue")) {
    cJSON_ArrayForEach(p, cJSON_GetObjectItemCaseSensitive(snap, "queue")) snprintf(out, n, "%s", cli_str(p, "id"));
  } else {
    cJSON_ArrayForEach(p, cJSON_GetObjectItemCaseSensitive(snap, "pending")) {
      if (!out[0] && !strcmp(cli_str(p, "kind"), kind)) snprintf(out, n, "%s", cli_str(p, "call_id"));
    }
  }
  cJSON_Delete(snap);
  if (!out[0])
    printf("nothing %s\n", !strcmp(kind, "queue") ? "is queued"
                           : !strcmp(kind, "approval") ? "waits for an approval"
                                                       : "waits for an answer");
  return out[0] != 0;
}

static void send_text(chat *c, const char *text, int plan_mode) {
  cJSON *in = cJSON_CreateObject(), *resp = NULL;
  cJSON_AddStringToObject(in, "text", text);
  if (plan_mode) cJSON_AddBoolToObject(in, "plan_mode", 1);
  if (rpc(c, "send_message", in, &resp) &&
      cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(resp, "queued"))) {
    chat_render_end_line(&c->r);
    printf("%s  (queued as %s: :steer to start it now, :delete to drop it)%s\n", c->st.dim,
           cli_str(resp, "message_id"), c->st.reset);
  }
  cJSON_Delete(resp);
}

static void decide(chat *c, const char *decision, const char *note) {
  char id[256];
  if (!pick(c, "approval", id, sizeof id)) return;
  cJSON *in = cJSON_CreateObject();
  cJSON_AddStringToObject(in, "call_id", id);
  cJSON_AddStringToObject(in, "decision", decision);
  if (*note) cJSON_AddStringToObject(in, "note", note);
  rpc(c, "resolve_approval", in, NULL);
}

static void answer(chat *c, const char *text) {
  char id[256];
  if (!pick(c, "question", id, sizeof id)) return;
  cJSON *in = cJSON_CreateObject();
  cJSON_AddStringToObject(in, "call_id", id);
  cJSON_AddStringToObject(in, "answer", text);
  rpc(c, "answer_question", in, NULL);
}

static void queue_op(chat *c, const char *rpc_name, const char *id_arg) {
  char id[128];
  if (*id_arg) snprintf(id, sizeof id, "%s", id_arg);
  else if (!pick(c, "queue", id, sizeof id)) return;
  cJSON *in = cJSON_CreateObject();
  cJSON_AddStringToObject(in, "message_id", id);
  if (rpc(c, rpc_name, in, NULL) && !strcmp(rpc_name, "delete_message"))
    printf("%s  (deleted %s)%s\n", c->st.dim, id, c->st.reset);
}

static void show_queue(chat *c) {
  cJSON *snap = NULL;
  if (cli_call(c->app.rt, c->sid, "snapshot", "{}", &snap, NULL) != DEXA_OK) return;
  const cJSON *q;
  int n = 0;
  cJSON_ArrayForEach(q, cJSON_GetObjectItemCaseSensitive(snap, "queue")) {
    printf("  %s%s: %s\n", cli_str(q, "id"),
           cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(q, "steered")) ? " (steered)" : "",
           cli_str(q, "text"));
    n++;
  }
  if (!n) printf("  (the queue is empty)\n");
  cJSON_Delete(snap);
}

static void execute_plan(chat *c) {
  cJSON *snap = NULL;
  if (cli_call(c->app.rt, c->sid, "snapshot", "{}", &snap, NULL) != DEXA_OK) return;
  const cJSON *rev = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(snap, "plan"), "revision");
  int have = cJSON_IsNumber(rev);
  cJSON *in = cJSON_CreateObject();
  cJSON_AddNumberToObject(in, "revision", have ? rev->valuedouble : 0);
  cJSON_Delete(snap);
  if (!have) {
    cJSON_Delete(in);
    printf("no plan yet: draft one with :plan TEXT\n");
    return;
  }
  rpc(c, "execute_plan", in, NULL);
}

/* :graph: where the session is now and the Steps it ran. */
static void show_graph(chat *c) {
  char *out = NULL;
  int rc = dexa_runtime_session_graph(c->app.rt, c->sid, DEXA_GRAPH_JSON, &out, NULL);
  if (rc != DEXA_OK) {
    say_error(c, "graph", rc, NULL);
    return;
  }
  cJSON *g = cJSON_Parse(out);
  dexa_free(out);
  const cJSON *sess = cJSON_GetObjectItemCaseSensitive(g, "session"), *x;
  printf("  now:");
  cJSON_ArrayForEach(x, cJSON_GetObjectItemCaseSensitive(sess, "now")) {
    printf(" %s (%s%s%s)", cli_str(x, "step"), cli_str(x, "state"), *cli_str(x, "tool") ? ", " : "",
           cli_str(x, "tool"));
  }
  printf("\n  ran:");
  cJSON_ArrayForEach(x, cJSON_GetObjectItemCaseSensitive(sess, "visits")) {
    printf(" %s x%d", x->string, x->valueint);
  }
  printf("\n  (dexagents graph --session %s --format dot | dot -Tsvg > graph.svg)\n", c->sid);
  cJSON_Delete(g);
}

static void help(void) {
  printf(":approve [note]  :reject [note]  approve or reject the oldest call waiting\n"
         ":answer TEXT                     answer the oldest question\n"
         ":stop                            stop the running turn\n"
         ":steer [ID]                      steer with a queued message (the newest)\n"
         ":delete [ID]                     delete a queued message (the newest)\n"
         ":queue                           list the queued messages\n"
         ":plan TEXT                       draft a plan (plan mode)\n"
         ":execute                         run the reviewed plan\n"
         ":graph                           where the session is, what it ran\n"
         ":quit                            leave (the session stays in the store)\n");
}

/* The rest of line after a command word, without leading blanks. */
static const char *rest(const char *line, size_t word) {
  const char *r = line + word;
  while (*r == ' ' || *r == '\t') r++;
  return r;
}

static int is_cmd(const char *line, const char *word) {
  size_t n = strlen(word);
  return strncmp(line, word, n) == 0 && (line[n] == '\0' || line[n] == ' ' || line[n] == '\t');
}

static void command(chat *c, const char *line) {
  chat_render_end_line(&c->r);
  if (is_cmd(line, ":approve")) decide(c, "approve", rest(line, 8));
  else if (is_cmd(line, ":reject")) decide(c, "reject", rest(line, 7));
  else if (is_cmd(line, ":answer")) answer(c, rest(line, 7));
  else if (is_cmd(line, ":stop")) rpc(c, "cancel_turn", cJSON_CreateObject(), NULL);
  else if (is_cmd(line, ":steer")) queue_op(c, "steer", rest(line, 6));
  else if (is_cmd(line, ":delete")) queue_op(c, "delete_message", rest(line, 7));
  else if (is_cmd(line, ":queue")) show_queue(c);
  else if (is_cmd(line, ":plan")) send_text(c, rest(line, 5), 1);
  else if (is_cmd(line, ":execute")) execute_plan(c);
  else if (is_cmd(line, ":graph")) show_graph(c);
  else if (is_cmd(line, ":quit") || is_cmd(line, ":exit")) c->quit = 1;
  else help();
  fflush(stdout);
}

static void handle(chat *c, const char *text) {
  if (text[strspn(text, " \t\n")] == '\0') return;
  if (!c->interactive) printf("%syou>%s %s\n", c->st.user, c->st.reset, text); /* a transcript */
  if (text[0] == ':') command(c, text);
  else send_text(c, text, 0);
}

/* ---- sessions ---------------------------------------------------------------------------------- */

static int new_session(chat *c, const char *model) {
  cJSON *settings = cJSON_CreateObject();
  if (model) cJSON_AddStringToObject(settings, "model", model);
  char *json = cJSON_PrintUnformatted(settings), *out = NULL;
  cJSON_Delete(settings);
  size_t len = 0;
  int rc = dexa_runtime_start_session(c->app.rt, NULL, json, strlen(json), &out, &len);
  cJSON_free(json);
  if (rc != DEXA_OK) {
    int code = cli_fail(&c->app.g, "start session", rc, out);
    dexa_free(out);
    return code;
  }
  cJSON *doc = cJSON_ParseWithLength(out, len);
  dexa_free(out);
  snprintf(c->sid, sizeof c->sid, "%s", cli_str(doc, "session_id"));
  cJSON_Delete(doc);
  c->token = strdup(""); /* a new session: its stream from the start */
  return CLI_OK;
}

/* Prints the newest messages and reads on after the snapshot's events. */
static int resume(chat *c, const char *id) {
  snprintf(c->sid, sizeof c->sid, "%s", id);
  char *err = NULL;
  cJSON *snap = NULL;
  int rc = cli_call(c->app.rt, c->sid, "snapshot", "{}", &snap, &err);
  if (rc != DEXA_OK) {
    int code = cli_fail(&c->app.g, id, rc, err);
    dexa_free(err);
    return code;
  }
  const cJSON *msgs = cJSON_GetObjectItemCaseSensitive(snap, "messages");
  int n = cJSON_GetArraySize(msgs);
  printf("resumed %s (model %s, %d message%s; the last %d:)\n", c->sid,
         cli_str(cJSON_GetObjectItemCaseSensitive(snap, "session"), "model"), n, n == 1 ? "" : "s",
         n < RESUME_SHOW_MESSAGES ? n : RESUME_SHOW_MESSAGES);
  for (int i = n > RESUME_SHOW_MESSAGES ? n - RESUME_SHOW_MESSAGES : 0; i < n; i++)
    chat_render_message(&c->r, cJSON_GetArrayItem(msgs, i));
  c->token = strdup(cli_str(snap, "resume_token"));
  cJSON_Delete(snap);
  return CLI_OK;
}

/* ---- the loop ---------------------------------------------------------------------------------- */

static void prompt(chat *c) {
  if (!c->interactive || c->prompted) return;
  chat_render_end_line(&c->r);
  printf("%syou>%s ", c->st.user, c->st.reset);
  fflush(stdout);
  c->prompted = 1;
}

static int loop(chat *c) {
  for (;;) {
    int n = read_batch(c, c->interactive ? 100 : 200);
    if (n < 0) return CLI_FAIL;
    if (c->quit) break;
    int settled = n == 0 && dexa_runtime_wait_idle(c->app.rt, c->sid, 0) == DEXA_OK;
    if (settled) show_waits(c);
    if (c->in.eof) {
      /* Piped input is over: follow the session until it settles and no
       * timer is left (a person's approval cannot come any more). */
      if (c->interactive || (settled && !c->timer_waits)) break;
      continue;
    }
    if (settled) prompt(c);
    if (c->interactive ? !input_ready(&c->in) : !settled) continue;
    char *text = next_message(&c->in);
    c->prompted = 0;
    if (text) handle(c, text);
    free(text);
  }
  chat_render_end_line(&c->r);
  return CLI_OK;
}

int cmd_chat(int argc, char **argv) {
  cli_globals g = {NULL, NULL, 0, -1, NULL, NULL, NULL};
  const char *model = NULL, *mcp = NULL, *resume_id = NULL, *threads_s = NULL, *pos[1];
  int npos;
  const cli_opt opts[] = {{"--model", 1, &model, NULL},       {"--mcp-config", 1, &mcp, NULL},
                          {"--resume", 1, &resume_id, NULL},  {"--threads", 1, &threads_s, NULL},
                          {NULL, 0, NULL, NULL}};
  int rc = cli_parse(argc, argv, 2, &g, opts, pos, 0, &npos, "chat");
  if (rc != CLI_OK) return rc;
  long threads = 0;
  if (threads_s && cli_int("--threads", threads_s, 256, &threads) != CLI_OK) return CLI_USAGE;
  g.model = model;
  g.mcp_config = mcp;
  chat c;
  memset(&c, 0, sizeof c);
  c.interactive = isatty(0);
  cli_style_init(&c.st, g.color, stdout);
  c.r.st = &c.st;
  c.shown = cJSON_CreateObject();
  rc = cli_app_open(&c.app, &g, 1);
  if (rc == CLI_OK) rc = cli_app_start(&c.app, threads ? (int)threads : 2);
  if (rc == CLI_OK) rc = resume_id ? resume(&c, resume_id) : new_session(&c, model);
  if (rc == CLI_OK) {
    printf("session %s (store %s; --resume %s to continue it; :help for commands)\n", c.sid,
           cli_store_name(c.app.cfg.store), c.sid);
    fflush(stdout);
    rc = loop(&c);
  }
  cli_app_close(&c.app);
  cJSON_Delete(c.shown);
  free(c.token);
  return rc;
}
