#include <dexagents/dexagents.h>
#include <stdio.h>
#include <string.h>

int main(void) {
  dexa_model *demo = NULL;
  dexa_agent *agent = NULL;
  dexa_runtime *rt = NULL;
  char *out = NULL, err[256] = "";
  size_t len = 0;

  /* An agent with one model: the demo model needs no key and no network. */
  int rc = dexa_model_demo_new(&demo, "mock/dex");
  dexa_agent_def def;
  dexa_agent_def_init(&def, sizeof def);
  def.instructions = "You are a helpful assistant.";
  def.models = &demo;
  def.model_count = 1;
  if (rc == DEXA_OK) rc = dexa_agent_new(&agent, &def, err, sizeof err);
  dexa_model_free(demo); /* the agent keeps its own reference */

  /* The embedded runtime on a SQLite store (":memory:" here; a path persists). */
  dexa_runtime_options opts;
  dexa_runtime_options_init(&opts, sizeof opts);
  opts.store = ":memory:";
  if (rc == DEXA_OK) rc = dexa_runtime_new(&rt, agent, &opts, err, sizeof err);

  /* A session with a fixed id, one message, and the Steps it makes ready. */
  const char *sid = "s-readme";
  if (rc == DEXA_OK) rc = dexa_runtime_start_session(rt, sid, NULL, 0, &out, &len);
  dexa_free(out);
  out = NULL;
  const char *msg = "{\"text\":\"hello\"}";
  if (rc == DEXA_OK) rc = dexa_runtime_call(rt, sid, "send_message", msg, strlen(msg), &out, &len);
  dexa_free(out);
  out = NULL;
  if (rc == DEXA_OK) rc = dexa_runtime_run_ready(rt, NULL);

  /* Every event of the session so far, from the start of the stream. */
  if (rc == DEXA_OK) rc = dexa_runtime_read_events(rt, sid, "", 100, 0, &out, &len);
  if (rc == DEXA_OK) printf("%s\n", out);
  else fprintf(stderr, "%s: %s %s\n", dexa_error_name(rc), err, rt ? dexa_runtime_errmsg(rt) : "");
  dexa_free(out);
  dexa_runtime_free(rt);
  dexa_agent_free(agent);
  return rc == DEXA_OK ? 0 : 1;
}
