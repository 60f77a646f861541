/* The terminal chat's ":" commands and its prompts for the calls that wait
 * for the person: tool approvals (":approve [note]", ":reject [note]"),
 * questions (":answer TEXT"), Stop (":stop"), plans (":plan TEXT" drafts
 * one, ":execute" runs the reviewed revision). Each acts on the oldest
 * pending call of its kind, read from the snapshot. */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "chat.h"

static cJSON *snapshot(dexa_runtime *rt, const char *sid) {
  char *out = NULL;
  size_t len = 0;
  int rc = dexa_runtime_call(rt, sid, "snapshot", "{}", 2, &out, &len);
  cJSON *doc = rc == DEXA_OK ? cJSON_ParseWithLength(out, len) : NULL;
  dexa_free(out);
  return doc;
}

static const char *str(const cJSON *o, const char *k) {
  const char *s = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(o, k));
  return s ? s : "";
}

static void print_pending(const cJSON *p) {
  const char *kind = str(p, "kind");
  char *args = cJSON_PrintUnformatted(cJSON_GetObjectItemCaseSensitive(p, "arguments"));
  if (!strcmp(kind, "approval")) {
    printf("  ? approve %s %s  (:approve [note] or :reject [note])\n", str(p, "name"),
           args ? args : "{}");
  } else if (!strcmp(kind, "question")) {
    printf("  ? %s", str(p, "prompt"));
    const cJSON *ch;
    int i = 0;
    cJSON_ArrayForEach(ch, cJSON_GetObjectItemCaseSensitive(p, "choices")) {
      printf("%s%s", i++ ? " | " : "  [", cJSON_GetStringValue(ch));
    }
    printf("%s  (:answer TEXT)\n", i ? "]" : "");
  }
  cJSON_free(args);
}

int chat_show_pending(dexa_runtime *rt, const char *session_id, int *timer_said) {
  cJSON *doc = snapshot(rt, session_id);
  const cJSON *p;
  int person = 0, timers = 0;
  cJSON_ArrayForEach(p, cJSON_GetObjectItemCaseSensitive(doc, "pending")) {
    if (!strcmp(str(p, "kind"), "timer")) {
      const cJSON *s = cJSON_GetObjectItemCaseSensitive(p, "seconds");
      if (!*timer_said)
        printf("  (waiting %d s: %s; :stop ends the turn)\n", cJSON_IsNumber(s) ? s->valueint : 0,
               str(p, "reason"));
      timers++;
    } else {
      print_pending(p);
      person++;
    }
  }
  if (timers) *timer_said = 1;
  fflush(stdout);
  cJSON_Delete(doc);
  return person ? 1 : timers ? 0 : -1;
}

/* The call id of the oldest pending call of kind (copied to id), 0 if none. */
static int oldest_pending(dexa_runtime *rt, const char *sid, const char *kind, char *id,
                          size_t n) {
  cJSON *doc = snapshot(rt, sid);
  const cJSON *p;
  int found = 0;
  cJSON_ArrayForEach(p, cJSON_GetObjectItemCaseSensitive(doc, "pending")) {
    if (!found && !strcmp(str(p, "kind"), kind)) {
      snprintf(id, n, "%s", str(p, "call_id"));
      found = 1;
    }
  }
  cJSON_Delete(doc);
  if (!found) printf("nothing waits for %s\n", !strcmp(kind, "approval") ? "an approval" : "an answer");
  return found;
}

static int call(dexa_runtime *rt, const char *sid, const char *rpc, cJSON *input) {
  char *json = cJSON_PrintUnformatted(input);
  cJSON_Delete(input);
  char *out = NULL;
  size_t len = 0;
  int rc = json ? dexa_runtime_call(rt, sid, rpc, json, strlen(json), &out, &len) : DEXA_E_NOMEM;
  if (rc != DEXA_OK) printf("%s: %s %s\n", rpc, dexa_error_name(rc), out ? out : "");
  cJSON_free(json);
  dexa_free(out);
  return rc == DEXA_OK;
}

static int decide(dexa_runtime *rt, const char *sid, const char *decision, const char *note) {
  char id[300];
  if (!oldest_pending(rt, sid, "approval", id, sizeof id)) return 0;
  cJSON *in = cJSON_CreateObject();
  cJSON_AddStringToObject(in, "call_id", id);
  cJSON_AddStringToObject(in, "decision", decision);
  if (*note) cJSON_AddStringToObject(in, "note", note);
  return call(rt, sid, "resolve_approval", in);
}

static int answer(dexa_runtime *rt, const char *sid, const char *text) {
  char id[300];
  if (!oldest_pending(rt, sid, "question", id, sizeof id)) return 0;
  cJSON *in = cJSON_CreateObject();
  cJSON_AddStringToObject(in, "call_id", id);
  cJSON_AddStringToObject(in, "answer", text);
  return call(rt, sid, "answer_question", in);
}

static int execute_plan(dexa_runtime *rt, const char *sid) {
  cJSON *doc = snapshot(rt, sid);
  const cJSON *rev = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(doc, "plan"), "revision");
  int have = cJSON_IsNumber(rev);
  cJSON *in = cJSON_CreateObject();
  cJSON_AddNumberToObject(in, "revision", have ? rev->valuedouble : 0);
  cJSON_Delete(doc);
  if (!have) {
    cJSON_Delete(in);
    printf("no plan yet: draft one with :plan TEXT\n");
    return 0;
  }
  return call(rt, sid, "execute_plan", in);
}

static int plan(dexa_runtime *rt, const char *sid, const char *text) {
  cJSON *in = cJSON_CreateObject();
  cJSON_AddStringToObject(in, "text", text);
  cJSON_AddBoolToObject(in, "plan_mode", 1);
  return call(rt, sid, "send_message", in);
}

static void help(void) {
  printf(":approve [note]  :reject [note]  approve or reject the oldest call waiting\n"
         ":answer TEXT                     answer the oldest question\n"
         ":stop                            stop the running turn\n"
         ":plan TEXT                       draft a plan (plan mode)\n"
         ":execute                         run the reviewed plan\n");
}

/* The rest of line after a command word, without leading blanks. */
static const char *rest(const char *line, size_t word) {
  const char *r = line + word;
  while (*r == ' ' || *r == '\t') r++;
  return r;
}

int chat_command(dexa_runtime *rt, const char *sid, const char *line) {
  if (!strncmp(line, ":approve", 8)) return decide(rt, sid, "approve", rest(line, 8));
  if (!strncmp(line, ":reject", 7)) return decide(rt, sid, "reject", rest(line, 7));
  if (!strncmp(line, ":answer", 7)) return answer(rt, sid, rest(line, 7));
  if (!strncmp(line, ":stop", 5)) return call(rt, sid, "cancel_turn", cJSON_CreateObject());
  if (!strncmp(line, ":plan", 5)) return plan(rt, sid, rest(line, 5));
  if (!strncmp(line, ":execute", 8)) return execute_plan(rt, sid);
  help();
  return 0;
}
