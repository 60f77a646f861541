/* The session operations: send, approve, reject, answer, steer, delete,
 * stop, end, execute-plan. Each is one RPC, applied atomically by the runtime;
 * a worker (dexagents worker, serve, chat) runs the Steps it makes ready,
 * or this process with --wait until the session is idle. */
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"

typedef struct op {
  cli_globals g;
  const char *sid;
  int wait;
  long timeout_s;
  cli_app app;
  int open;
} op;

/* Opens the app (with the tool sources when this process runs Steps). */
static int op_open(op *o) {
  int rc = cli_app_open(&o->app, &o->g, o->wait);
  o->open = 1;
  return rc;
}

static int op_close(op *o, int rc) {
  if (o->open) cli_app_close(&o->app);
  return rc;
}

/* The oldest pending call of kind (field "call_id"), or the newest queued
 * message (kind "queue", field "id"). Returns a DEXA code. */
static int find_pending(op *o, const char *kind, char *out, size_t n) {
  cJSON *snap = NULL;
  char *err = NULL;
  int rc = cli_call(o->app.rt, o->sid, "snapshot", "{}", &snap, &err);
  if (rc != DEXA_OK) {
    cli_fail(&o->g, "snapshot", rc, err);
    dexa_free(err);
    return rc;
  }
  const cJSON *p;
  out[0] = '\0';
  if (!strcmp(kind, "queue")) {
    cJSON_ArrayForEach(p, cJSON_GetObjectItemCaseSensitive(snap, "queue")) snprintf(out, n, "%s", cli_str(p, "id"));
  } else {
    cJSON_ArrayForEach(p, cJSON_GetObjectItemCaseSensitive(snap, "pending")) {
      if (!out[0] && !strcmp(cli_str(p, "kind"), kind)) snprintf(out, n, "%s", cli_str(p, "call_id"));
    }
  }
  cJSON_Delete(snap);
  if (out[0]) return DEXA_OK;
  char msg[96];
  snprintf(msg, sizeof msg, "nothing %s", !strcmp(kind, "queue") ? "is queued"
                                          : !strcmp(kind, "approval") ? "waits for an approval"
                                                                      : "waits for an answer");
  cli_fail(&o->g, o->sid, DEXA_E_NOT_PENDING, msg);
  return DEXA_E_NOT_PENDING;
}

/* After a change: with --wait, runs the session's Steps here until it is
 * idle, then says (in text) what it waits for. */
static int settle(op *o) {
  if (!o->wait) return CLI_OK;
  int rc = cli_app_start(&o->app, o->app.cfg.threads);
  if (rc != CLI_OK) return rc;
  int w = dexa_runtime_wait_idle(o->app.rt, o->sid, (int64_t)o->timeout_s * 1000);
  if (w != DEXA_OK) {
    if (!o->g.json) fprintf(stderr, "dexagents: the session is not idle after %ld s\n", o->timeout_s);
    return cli_exit_code(w);
  }
  if (o->g.json) return CLI_OK;
  cJSON *snap = NULL;
  if (cli_call(o->app.rt, o->sid, "snapshot", "{}", &snap, NULL) == DEXA_OK) {
    const cJSON *msgs = cJSON_GetObjectItemCaseSensitive(snap, "messages");
    const cJSON *last = cJSON_GetArrayItem(msgs, cJSON_GetArraySize(msgs) - 1);
    if (!strcmp(cli_str(last, "role"), "model") && *cli_str(last, "text"))
      printf("dex> %s\n", cli_str(last, "text"));
    cli_show_pending(snap);
  }
  cJSON_Delete(snap);
  return CLI_OK;
}

/* Runs rpc with input; prints the response (--json) or what was done
 * (text), with the message the response names. */
static int run(op *o, const char *rpc, cJSON *input, const char *done) {
  char *json = cJSON_PrintUnformatted(input);
  cJSON_Delete(input);
  cJSON *resp = NULL;
  char *err = NULL;
  int rc = json ? cli_call(o->app.rt, o->sid, rpc, json, &resp, &err) : DEXA_E_NOMEM;
  cJSON_free(json);
  if (rc != DEXA_OK) {
    int code = cli_fail(&o->g, rpc, rc, err);
    dexa_free(err);
    return code;
  }
  if (o->g.json) {
    cli_print_tree(resp);
  } else {
    const char *mid = cli_str(resp, "message_id");
    int queued = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(resp, "queued"));
    printf("%s%s%s%s\n", done, *mid ? " (message " : "", mid,
           !*mid ? "" : queued ? ", queued behind the running turn)" : ")");
    cJSON_Delete(resp);
  }
  fflush(stdout);
  return settle(o);
}

/* Parses "dexagents CMD ID ..." with the options every op has (--wait,
 * --timeout) and its own; pos[0] is the session id. */
static int parse(op *o, int argc, char **argv, const cli_opt *own, const char **pos, int max_pos,
                 int *npos, int min_pos) {
  memset(o, 0, sizeof *o);
  o->g.color = -1;
  o->timeout_s = 120;
  const char *timeout = NULL;
  cli_opt opts[12];
  size_t n = 0;
  for (const cli_opt *x = own; x && x->name && n < 9; x++) opts[n++] = *x;
  opts[n++] = (cli_opt){"--wait", 0, NULL, &o->wait};
  opts[n++] = (cli_opt){"--timeout", 1, &timeout, NULL};
  opts[n] = (cli_opt){NULL, 0, NULL, NULL};
  int rc = cli_parse(argc, argv, 2, &o->g, opts, pos, max_pos, npos, argv[1]);
  if (rc != CLI_OK) return rc;
  if (timeout && cli_int("--timeout", timeout, 86400, &o->timeout_s) != CLI_OK) return CLI_USAGE;
  if (*npos < min_pos) {
    fprintf(stderr, "dexagents %s: missing arguments\n", argv[1]);
    cli_print_usage(argv[1], stderr);
    return CLI_USAGE;
  }
  o->sid = pos[0];
  return CLI_OK;
}

/* The words of a message: "send ID hello world" sends "hello world". */
static char *join(const char **words, int n) {
  size_t len = 1;
  for (int i = 0; i < n; i++) len += strlen(words[i]) + 1;
  char *s = calloc(1, len);
  for (int i = 0; s && i < n; i++) {
    if (i) strcat(s, " ");
    strcat(s, words[i]);
  }
  return s;
}

int cmd_send(int argc, char **argv) {
  op o;
  int plan = 0, npos;
  const char *pos[64];
  const cli_opt own[] = {{"--plan", 0, NULL, &plan}, {NULL, 0, NULL, NULL}};
  int rc = parse(&o, argc, argv, own, pos, 64, &npos, 2);
  if (rc != CLI_OK) return rc;
  char *text = join(pos + 1, npos - 1);
  if ((rc = op_open(&o)) == CLI_OK) {
    cJSON *in = cJSON_CreateObject();
    cJSON_AddStringToObject(in, "text", text ? text : "");
    if (plan) cJSON_AddBoolToObject(in, "plan_mode", 1);
    rc = run(&o, "send_message", in, "sent");
  }
  free(text);
  return op_close(&o, rc);
}

int cmd_decide(int argc, char **argv) {
  op o;
  int npos;
  const char *pos[1], *call = NULL, *note = NULL;
  const cli_opt own[] = {{"--call", 1, &call, NULL}, {"--note", 1, &note, NULL}, {NULL, 0, NULL, NULL}};
  int rc = parse(&o, argc, argv, own, pos, 1, &npos, 1);
  if (rc != CLI_OK) return rc;
  int approve = !strcmp(argv[1], "approve");
  char id[256], line[320];
  if ((rc = op_open(&o)) == CLI_OK) {
    int drc = call ? DEXA_OK : find_pending(&o, "approval", id, sizeof id);
    if (drc != DEXA_OK) return op_close(&o, cli_exit_code(drc));
    if (call) snprintf(id, sizeof id, "%s", call);
    cJSON *in = cJSON_CreateObject();
    cJSON_AddStringToObject(in, "call_id", id);
    cJSON_AddStringToObject(in, "decision", approve ? "approve" : "reject");
    if (note) cJSON_AddStringToObject(in, "note", note);
    snprintf(line, sizeof line, "%s call %s", approve ? "approved" : "rejected", id);
    rc = run(&o, "resolve_approval", in, line);
  }
  return op_close(&o, rc);
}

int cmd_answer(int argc, char **argv) {
  op o;
  int npos;
  const char *pos[64], *call = NULL;
  const cli_opt own[] = {{"--call", 1, &call, NULL}, {NULL, 0, NULL, NULL}};
  int rc = parse(&o, argc, argv, own, pos, 64, &npos, 2);
  if (rc != CLI_OK) return rc;
  char id[256], line[320], *text = join(pos + 1, npos - 1);
  if ((rc = op_open(&o)) == CLI_OK) {
    int drc = call ? DEXA_OK : find_pending(&o, "question", id, sizeof id);
    if (drc == DEXA_OK) {
      if (call) snprintf(id, sizeof id, "%s", call);
      cJSON *in = cJSON_CreateObject();
      cJSON_AddStringToObject(in, "call_id", id);
      cJSON_AddStringToObject(in, "answer", text ? text : "");
      snprintf(line, sizeof line, "answered call %s", id);
      rc = run(&o, "answer_question", in, line);
    } else {
      rc = cli_exit_code(drc);
    }
  }
  free(text);
  return op_close(&o, rc);
}

int cmd_queue_op(int argc, char **argv) {
  op o;
  int npos;
  const char *pos[2];
  int steer = !strcmp(argv[1], "steer");
  int rc = parse(&o, argc, argv, NULL, pos, 2, &npos, steer ? 1 : 2);
  if (rc != CLI_OK) return rc;
  char id[128], line[200];
  if ((rc = op_open(&o)) == CLI_OK) {
    int drc = npos > 1 ? DEXA_OK : find_pending(&o, "queue", id, sizeof id);
    if (drc != DEXA_OK) return op_close(&o, cli_exit_code(drc));
    if (npos > 1) snprintf(id, sizeof id, "%s", pos[1]);
    cJSON *in = cJSON_CreateObject();
    cJSON_AddStringToObject(in, "message_id", id);
    snprintf(line, sizeof line, "%s message %s", steer ? "steered with" : "deleted", id);
    rc = run(&o, steer ? "steer" : "delete_message", in, line);
  }
  return op_close(&o, rc);
}

int cmd_stop(int argc, char **argv) {
  op o;
  int npos;
  const char *pos[1];
  int rc = parse(&o, argc, argv, NULL, pos, 1, &npos, 1);
  if (rc != CLI_OK) return rc;
  if ((rc = op_open(&o)) == CLI_OK) rc = run(&o, "cancel_turn", cJSON_CreateObject(), "stopped the turn");
  return op_close(&o, rc);
}

int cmd_end(int argc, char **argv) {
  op o;
  int npos;
  const char *pos[1], *reason = NULL;
  const cli_opt own[] = {{"--reason", 1, &reason, NULL}, {NULL, 0, NULL, NULL}};
  int rc = parse(&o, argc, argv, own, pos, 1, &npos, 1);
  if (rc != CLI_OK) return rc;
  cJSON *in = cJSON_CreateObject();
  if (reason) cJSON_AddStringToObject(in, "reason", reason);
  if ((rc = op_open(&o)) == CLI_OK) rc = run(&o, "end_session", in, "ended the session");
  else cJSON_Delete(in);
  return op_close(&o, rc);
}

int cmd_execute_plan(int argc, char **argv) {
  op o;
  int npos;
  const char *pos[1], *rev_s = NULL;
  const cli_opt own[] = {{"--revision", 1, &rev_s, NULL}, {NULL, 0, NULL, NULL}};
  int rc = parse(&o, argc, argv, own, pos, 1, &npos, 1);
  if (rc != CLI_OK) return rc;
  long rev = 0;
  if (rev_s && cli_int("--revision", rev_s, 1L << 30, &rev) != CLI_OK) return CLI_USAGE;
  if ((rc = op_open(&o)) != CLI_OK) return op_close(&o, rc);
  if (!rev_s) { /* the reviewed revision is the current one */
    cJSON *snap = NULL;
    char *err = NULL;
    int drc = cli_call(o.app.rt, o.sid, "snapshot", "{}", &snap, &err);
    if (drc != DEXA_OK) {
      rc = cli_fail(&o.g, "snapshot", drc, err);
      dexa_free(err);
      return op_close(&o, rc);
    }
    rev = (long)cli_num(cJSON_GetObjectItemCaseSensitive(snap, "plan"), "revision");
    cJSON_Delete(snap);
  }
  cJSON *in = cJSON_CreateObject();
  cJSON_AddNumberToObject(in, "revision", (double)rev);
  char line[128];
  snprintf(line, sizeof line, "executing plan revision %ld", rev);
  rc = run(&o, "execute_plan", in, line);
  return op_close(&o, rc);
}
