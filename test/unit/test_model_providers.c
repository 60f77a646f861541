/* The second round of model clients, without a network: every option's
 * checks and where it goes on the wire (URL, headers, body) for each
 * provider; the OpenAI Responses fixes (reasoning_summary alone, the
 * encrypted-reasoning include only for models that reason); prompt
 * caching; structured output and strict tools; attachments and tool
 * images in each provider's format; the Gemini and Bedrock stream decoders
 * (finish reasons, full usage, signatures kept verbatim), the AWS event
 * stream framing, SigV4 against the AWS test suite's vectors, Azure's
 * URLs, bearer tokens from a command, and the cost of a call.
 * test-needs: providers */
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "dexagents/dexagents.h"
#include "iface/model.h"
#include "model/eventstream.h"
#include "model/provider.h"
#include "model/sigv4.h"
#include "model/stream.h"
#include "model/token_command.h"
#include "testing.h"

/* ---- helpers ---- */

static char *slurp(const char *path, size_t *n) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  fseek(f, 0, SEEK_END);
  long len = ftell(f);
  fseek(f, 0, SEEK_SET);
  char *b = malloc((size_t)len + 1);
  if (b && fread(b, 1, (size_t)len, f) != (size_t)len) len = 0;
  if (b) b[len] = '\0';
  fclose(f);
  *n = (size_t)len;
  return b;
}

/* A request of the given messages (JSON texts), two tools (one strict-ready)
 * and optional head members (e.g. ,"output_schema":{...}). */
static void make_request(dexa_model_request *r, const char *head, const char *const *msgs, size_t n) {
  dexa__model_request_init(r);
  dexa__buf_puts(&r->json, "{\"model\":\"x\",\"session_id\":\"sess-42\",\"turn\":3,\"round\":2,"
                           "\"instructions\":\"Be brief.\"");
  dexa__buf_puts(&r->json, head ? head : "");
  dexa__buf_puts(&r->json, ",\"messages\":[");
  for (size_t i = 0; i < n; i++) {
    if (i) dexa__buf_putc(&r->json, ',');
    size_t off = r->json.len;
    dexa__buf_puts(&r->json, msgs[i]);
    dexa__model_request_add_message(r, off);
  }
  dexa__buf_puts(&r->json,
                 "],\"tools\":[{\"name\":\"get_time\",\"description\":\"Time\",\"parameters\":{\"type\":"
                 "\"object\",\"properties\":{}},\"effect\":\"read\"},{\"name\":\"lookup\",\"description\":"
                 "\"Look up\",\"parameters\":{\"type\":\"object\",\"properties\":{\"q\":{\"type\":\"string\"}},"
                 "\"required\":[\"q\"],\"additionalProperties\":false},\"effect\":\"read\"}]}");
}

#define USER "{\"seq\":1,\"turn\":1,\"role\":\"user\",\"id\":\"m1\",\"text\":\"What is this?\"}"
#define USER_IMG                                                                                   \
  "{\"seq\":1,\"turn\":1,\"role\":\"user\",\"id\":\"m1\",\"text\":\"What is this?\",\"attachments\":" \
  "[{\"type\":\"image\",\"media_type\":\"image/png\",\"data\":\"iVBORw0=\"},{\"type\":\"file\","      \
  "\"media_type\":\"application/pdf\",\"data\":\"JVBERi0=\",\"name\":\"a.pdf\"}]}"
#define USER_URL                                                                                   \
  "{\"seq\":1,\"turn\":1,\"role\":\"user\",\"id\":\"m1\",\"text\":\"See\",\"attachments\":"          \
  "[{\"type\":\"image\",\"url\":\"https://example.com/cat.png\"}]}"
#define TOOL_IMG                                                                                   \
  "{\"seq\":4,\"turn\":1,\"round\":1,\"role\":\"tool\",\"call_id\":\"call_1\",\"name\":\"get_time\"," \
  "\"status\":\"ok\",\"output\":\"chart\",\"content\":{\"content\":[{\"type\":\"text\",\"text\":"    \
  "\"chart\"},{\"type\":\"image\",\"mimeType\":\"image/png\",\"data\":\"iVBORw0=\"}]}}"
#define SCHEMA                                                                                     \
  ",\"output_schema\":{\"name\":\"answer\",\"schema\":{\"type\":\"object\",\"properties\":{\"city\":" \
  "{\"type\":\"string\"}},\"required\":[\"city\"],\"additionalProperties\":false},\"strict\":true}"

/* A client made from its name and options, and one call of it prepared
 * (URL, headers, body) at a fixed time. */
typedef struct prepared {
  dexa_model *m;
  dexa__call call;
  dexa_model_request req;
  int rc;
  char headers[4096];
} prepared;

static int prepare(prepared *p, const char *name, const char *options, const char *head,
                   const char *const *msgs, size_t n) {
  memset(p, 0, sizeof *p);
  char err[256] = "";
  int rc = dexa_model_client_new(&p->m, name, options, options ? strlen(options) : 0, err, sizeof err);
  if (rc != DEXA_OK) {
    fprintf(stderr, "    client %s: %s\n", name, err);
    return rc;
  }
  make_request(&p->req, head, msgs, n);
  dexa__call_init(&p->call, p->m->user_data, &p->req, 1440938160);
  p->rc = dexa__call_prepare(&p->call);
  for (size_t i = 0; i < p->call.header_count; i++) {
    strncat(p->headers, p->call.headers[i], sizeof p->headers - strlen(p->headers) - 2);
    strcat(p->headers, "\n");
  }
  return p->rc; /* a failure's reason is in p->call.err */
}

static const char *body(prepared *p) { return dexa__buf_cstr(&p->call.body); }
static const char *url(prepared *p) { return dexa__buf_cstr(&p->call.url); }

static void release(prepared *p) {
  dexa__call_free(&p->call);
  dexa__model_request_free(&p->req);
  dexa_model_free(p->m);
}

static int client_rc(const char *name, const char *options, char *err, size_t n) {
  dexa_model *m = NULL;
  int rc = dexa_model_client_new(&m, name, options, strlen(options), err, n);
  dexa_model_free(m);
  return rc;
}

/* ---- options ---- */

static void options_are_checked_with_clear_errors(void) {
  static const struct {
    const char *name, *options;
    int rc;
    const char *says;
  } cases[] = {
      {"openai/g", "{\"temperature\":2.5}", DEXA_E_INVALID_ARG, "a number from 0 to 2"},
      {"openai/g", "{\"top_p\":-0.1}", DEXA_E_INVALID_ARG, "\"top_p\""},
      {"openai/g", "{\"seed\":1}", DEXA_E_UNKNOWN_KEY, "\"seed\""},
      {"openai/g", "{\"stop\":[\"x\"]}", DEXA_E_UNKNOWN_KEY, "\"stop\""},
      {"openai-chat/m", "{\"seed\":1.5}", DEXA_E_INVALID_ARG, "32-bit integer"},
      {"openai-chat/m", "{\"stop\":[\"a\",\"b\",\"c\",\"d\",\"e\"]}", DEXA_E_INVALID_ARG, "1 to 4"},
      {"openai-chat/m", "{\"stop\":[\"\"]}", DEXA_E_INVALID_ARG, "\"stop\""},
      {"gemini/g", "{\"stop\":[\"a\",\"b\",\"c\",\"d\",\"e\",\"f\"]}", DEXA_E_INVALID_ARG, "1 to 5"},
      {"anthropic/c", "{\"seed\":3}", DEXA_E_UNKNOWN_KEY, "\"seed\""},
      {"anthropic/c", "{\"cache_ttl\":\"2h\"}", DEXA_E_INVALID_ARG, "\"5m\" or \"1h\""},
      {"anthropic/c", "{\"thinking_budget_tokens\":2048,\"temperature\":0.2}", DEXA_E_INVALID_ARG,
       "temperature 1"},
      {"openai/g", "{\"cache_ttl\":\"1h\"}", DEXA_E_UNKNOWN_KEY, "\"cache_ttl\""},
      {"openai/g", "{\"headers\":{\"Content-Type\":\"text/plain\"}}", DEXA_E_INVALID_ARG, "header names"},
      {"openai/g", "{\"headers\":{\"X-A\":\"line\\nbreak\"}}", DEXA_E_INVALID_ARG, "header names"},
      {"openai/g", "{\"headers\":{\"authorization\":\"Bearer x\"}}", DEXA_E_INVALID_ARG, "api_key"},
      {"bedrock/m", "{\"headers\":{\"X-Amz-Date\":\"x\"}}", DEXA_E_INVALID_ARG, "x-amz-*"},
      {"openai/g", "{\"query\":{\"a b\":\"c\"}}", DEXA_E_INVALID_ARG, "parameter names"},
      {"openai/g", "{\"price\":{\"input\":1}}", DEXA_E_INVALID_ARG, "USD per million"},
      /* keys given twice (the last holds; nothing leaks), then a bad value */
      {"openai-chat/m", "{\"headers\":{\"X-A\":\"1\"},\"headers\":{\"X-B\":\"1\"},\"stop\":[\"a\"],"
                        "\"stop\":[\"b\"],\"fallbacks\":[\"x/1\"],\"fallbacks\":[\"y/1\"],\"temperature\":9}",
       DEXA_E_INVALID_ARG, "\"temperature\""},
      {"openai/g", "{\"price\":{\"input\":1,\"output\":2,\"bulk\":1}}", DEXA_E_INVALID_ARG, "\"price\""},
      {"openai/g", "{\"fallbacks\":\"anthropic/c\"}", DEXA_E_INVALID_ARG, "model names"},
      {"openai/g", "{\"fallbacks\":[\"openai/g\"]}", DEXA_E_INVALID_ARG, "fallbacks"},
      {"openai/g", "{\"project\":\"p\"}", DEXA_E_UNKNOWN_KEY, "\"project\""},
      {"vertex/g", "{\"api_key\":\"k\"}", DEXA_E_UNKNOWN_KEY, "\"api_key\""},
      {"vertex/g", "{\"location\":\"us central\"}", DEXA_E_INVALID_ARG, "letters, digits"},
      {"gemini/g", "{\"region\":\"us-east-1\"}", DEXA_E_UNKNOWN_KEY, "\"region\""},
      {"bedrock/m", "{\"tool_choice\":\"none\"}", DEXA_E_INVALID_ARG, "tool_choice"},
      {"bedrock/m", "{\"strict_tools\":true}", DEXA_E_UNKNOWN_KEY, "strict_tools"},
      {"azure/d", "{\"api\":\"responses\",\"seed\":1}", DEXA_E_UNKNOWN_KEY, "Responses API"},
      {"azure/d", "{\"reasoning_summary\":\"auto\"}", DEXA_E_UNKNOWN_KEY, "api \"responses\""},
      {"azure/d", "{\"api\":\"assistants\"}", DEXA_E_INVALID_ARG, "\"chat\" or \"responses\""},
      {"openai-chat/m", "{\"reasoning_summary\":\"auto\"}", DEXA_E_UNKNOWN_KEY, "reasoning_summary"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    char err[256] = "";
    int rc = client_rc(cases[i].name, cases[i].options, err, sizeof err);
    if (rc != cases[i].rc || !strstr(err, cases[i].says))
      fprintf(stderr, "    %s %s: %s \"%s\"\n", cases[i].name, cases[i].options, dexa_error_name(rc), err);
    CHECK_EQ_INT(rc, cases[i].rc);
    CHECK_CONTAINS(err, cases[i].says);
  }
  char err[256];
  const char *good[][2] = {
      {"openai/g", "{\"temperature\":0.2,\"top_p\":0.9,\"strict_tools\":true,\"prompt_caching\":false,"
                   "\"headers\":{\"X-Trace\":\"1\"},\"query\":{\"v\":\"a b\"},\"price\":{\"input\":1,"
                   "\"output\":4},\"fallbacks\":[\"anthropic/c\"],\"encrypted_reasoning\":false}"},
      {"openai-chat/m", "{\"seed\":-5,\"stop\":[\"END\"],\"prompt_caching\":true}"},
      {"anthropic/c", "{\"stop\":[\"##\"],\"cache_ttl\":\"1h\",\"strict_tools\":true}"},
      {"gemini/g", "{\"thinking_budget_tokens\":0,\"seed\":1,\"stop\":[\"x\"]}"},
      {"vertex/g", "{\"project\":\"p-1\",\"location\":\"global\",\"token_command\":\"true\"}"},
      {"bedrock/m", "{\"region\":\"eu-west-1\",\"prompt_caching\":true,\"thinking_budget_tokens\":1024}"},
      {"azure/d", "{\"api_version\":\"2024-10-21\",\"seed\":1,\"stop\":[\"x\"]}"},
  };
  for (size_t i = 0; i < sizeof good / sizeof *good; i++) {
    int rc = client_rc(good[i][0], good[i][1], err, sizeof err);
    if (rc != DEXA_OK && strcmp(good[i][0], "gemini/g") != 0)
      fprintf(stderr, "    %s: %s\n", good[i][0], err);
    /* thinking_budget_tokens 0 is below the minimum of 1 */
    CHECK_EQ_INT(rc, strcmp(good[i][0], "gemini/g") == 0 ? DEXA_E_INVALID_ARG : DEXA_OK);
  }
  dexa_model *m = NULL;
  const char *o = "{\"fallbacks\":[\"anthropic/c\",\"gemini/g\"]}";
  CHECK_EQ_INT(dexa_model_client_new(&m, "openai/g", o, strlen(o), err, sizeof err), DEXA_OK);
  CHECK_EQ_INT(m->fallback_count, 2);
  CHECK_STR(m->fallbacks[1], "gemini/g");
  dexa_model_free(m);
}

/* ---- OpenAI Responses ---- */

static void responses_reasoning_options_reach_the_body(void) {
  const char *msgs[] = {USER};
  prepared p;
  /* A model that does not reason: no include (it would answer 400). */
  CHECK_EQ_INT(prepare(&p, "openai/gpt-4.1", "{\"api_key\":\"k\"}", NULL, msgs, 1), DEXA_OK);
  CHECK(!strstr(body(&p), "include"));
  CHECK(!strstr(body(&p), "\"reasoning\""));
  release(&p);
  /* reasoning_summary alone is sent, and asks for the encrypted content. */
  CHECK_EQ_INT(prepare(&p, "openai/gpt-4.1", "{\"api_key\":\"k\",\"reasoning_summary\":\"concise\"}", NULL,
                       msgs, 1),
               DEXA_OK);
  CHECK_CONTAINS(body(&p), "\"include\":[\"reasoning.encrypted_content\"],\"stream\":true,"
                           "\"reasoning\":{\"summary\":\"concise\"}");
  release(&p);
  CHECK_EQ_INT(prepare(&p, "openai/gpt-5-mini", "{\"api_key\":\"k\"}", NULL, msgs, 1), DEXA_OK);
  CHECK_CONTAINS(body(&p), "\"include\":[\"reasoning.encrypted_content\"]");
  release(&p);
  CHECK_EQ_INT(prepare(&p, "openai/o3", "{\"api_key\":\"k\",\"encrypted_reasoning\":false}", NULL, msgs, 1),
               DEXA_OK);
  CHECK(!strstr(body(&p), "include"));
  release(&p);
  CHECK_EQ_INT(prepare(&p, "openai/gpt-5", "{\"api_key\":\"k\",\"reasoning_effort\":\"high\"}", NULL, msgs, 1),
               DEXA_OK);
  CHECK_CONTAINS(body(&p), "\"reasoning\":{\"effort\":\"high\",\"summary\":\"auto\"}");
  release(&p);
}

static void responses_reasoning_without_encrypted_content_is_not_replayed(void) {
  const char *msgs[] = {
      USER,
      "{\"seq\":2,\"turn\":1,\"round\":1,\"role\":\"model\",\"model\":\"openai/gpt-4.1\",\"item\":"
      "{\"type\":\"reasoning\",\"id\":\"rs_1\",\"summary\":[]}}",
      "{\"seq\":3,\"turn\":1,\"round\":1,\"role\":\"model\",\"model\":\"openai/gpt-4.1\",\"text\":\"Hi\","
      "\"item\":{\"type\":\"message\",\"role\":\"assistant\",\"content\":[{\"type\":\"output_text\","
      "\"text\":\"Hi\"}]}}"};
  prepared p;
  CHECK_EQ_INT(prepare(&p, "openai/gpt-4.1", "{\"api_key\":\"k\"}", NULL, msgs, 3), DEXA_OK);
  CHECK(!strstr(body(&p), "rs_1"));
  CHECK_CONTAINS(body(&p), "{\"type\":\"output_text\",\"text\":\"Hi\"}");
  release(&p);
}

static void responses_options_caching_schema_and_strict_tools(void) {
  const char *msgs[] = {USER_IMG, TOOL_IMG};
  prepared p;
  CHECK_EQ_INT(prepare(&p, "openai/gpt-4.1",
                       "{\"api_key\":\"sk-1\",\"temperature\":0.25,\"top_p\":0.5,\"strict_tools\":true,"
                       "\"max_output_tokens\":300,\"headers\":{\"OpenAI-Organization\":\"org-1\"},"
                       "\"query\":{\"x\":\"a b/c\"}}",
                       SCHEMA, msgs, 2),
               DEXA_OK);
  const char *b = body(&p);
  CHECK_STR(url(&p), "https://api.openai.com/v1/responses?x=a%20b%2Fc");
  CHECK_CONTAINS(p.headers, "Authorization: Bearer sk-1\n");
  CHECK_CONTAINS(p.headers, "OpenAI-Organization: org-1\n");
  CHECK_CONTAINS(b, "\"temperature\":0.25,\"top_p\":0.5,\"prompt_cache_key\":\"sess-42\"");
  CHECK_CONTAINS(b, "\"max_output_tokens\":300");
  CHECK_CONTAINS(b, "\"text\":{\"format\":{\"type\":\"json_schema\",\"name\":\"answer\",\"schema\":"
                    "{\"type\":\"object\"");
  /* the first tool's schema is not strict-ready: sent strict:false */
  CHECK_CONTAINS(b, "\"name\":\"get_time\",\"description\":\"Time\",\"parameters\":{\"type\":\"object\","
                    "\"properties\":{}},\"strict\":false}");
  CHECK_CONTAINS(b, "\"additionalProperties\":false},\"strict\":true}");
  CHECK_CONTAINS(b, "{\"type\":\"input_image\",\"image_url\":\"data:image/png;base64,iVBORw0=\"},"
                    "{\"type\":\"input_file\",\"filename\":\"a.pdf\",\"file_data\":"
                    "\"data:application/pdf;base64,JVBERi0=\"}");
  CHECK_CONTAINS(b, "{\"type\":\"function_call_output\",\"call_id\":\"call_1\",\"output\":["
                    "{\"type\":\"input_text\",\"text\":\"chart\"},{\"type\":\"input_image\",\"image_url\":"
                    "\"data:image/png;base64,iVBORw0=\"}]}");
  release(&p);
  CHECK_EQ_INT(prepare(&p, "openai/gpt-4.1", "{\"api_key\":\"k\",\"prompt_caching\":false}", NULL, msgs, 1),
               DEXA_OK);
  CHECK(!strstr(body(&p), "prompt_cache_key"));
  CHECK(!strstr(body(&p), "\"strict\":true"));
  release(&p);
}

/* ---- Chat Completions ---- */

static void chat_options_schema_images_and_refusals(void) {
  const char *msgs[] = {USER_IMG,
                        "{\"seq\":2,\"turn\":1,\"round\":1,\"role\":\"model\",\"model\":\"anthropic/c\","
                        "\"tool_calls\":[{\"call_id\":\"call_1\",\"name\":\"get_time\",\"arguments\":{}}],"
                        "\"item\":{}}",
                        TOOL_IMG};
  prepared p;
  CHECK_EQ_INT(prepare(&p, "openai-chat/m",
                       "{\"seed\":9,\"stop\":[\"END\",\"##\"],\"temperature\":0,\"strict_tools\":true,"
                       "\"prompt_caching\":true}",
                       SCHEMA, msgs, 3),
               DEXA_OK);
  const char *b = body(&p);
  CHECK(!strstr(p.headers, "Authorization")); /* no key: none sent (local servers) */
  CHECK_CONTAINS(b, "\"temperature\":0,\"seed\":9,\"stop\":[\"END\",\"##\"],\"prompt_cache_key\":\"sess-42\"");
  CHECK_CONTAINS(b, "\"response_format\":{\"type\":\"json_schema\",\"json_schema\":{\"name\":\"answer\"");
  CHECK_CONTAINS(b, "\"additionalProperties\":false},\"strict\":true}}");
  CHECK_CONTAINS(b, "{\"type\":\"image_url\",\"image_url\":{\"url\":\"data:image/png;base64,iVBORw0=\"}},"
                    "{\"type\":\"file\",\"file\":{\"filename\":\"a.pdf\",\"file_data\":"
                    "\"data:application/pdf;base64,JVBERi0=\"}}");
  /* tool results stay text; their images follow in a user message */
  CHECK_CONTAINS(b, "{\"role\":\"tool\",\"tool_call_id\":\"call_1\",\"content\":\"chart\"},{\"role\":"
                    "\"user\",\"content\":[{\"type\":\"text\",\"text\":\"Images returned by the tool calls "
                    "above:\"},{\"type\":\"image_url\",\"image_url\":{\"url\":\"data:image/png;base64,"
                    "iVBORw0=\"}}]}");
  release(&p);
  const char *file_url[] = {"{\"seq\":1,\"turn\":1,\"role\":\"user\",\"id\":\"m1\",\"text\":\"x\","
                            "\"attachments\":[{\"type\":\"file\",\"url\":\"https://x/a.pdf\"}]}"};
  prepare(&p, "openai-chat/m", "{}", NULL, file_url, 1);
  CHECK_EQ_INT(p.rc, DEXA_E_MODEL);
  CHECK_CONTAINS(p.call.err, "not by URL");
  release(&p);
}

/* ---- Anthropic ---- */

static void anthropic_caching_breakpoints_and_options(void) {
  const char *msgs[] = {USER_IMG,
                        "{\"seq\":2,\"turn\":1,\"round\":1,\"role\":\"model\",\"model\":\"anthropic/c\","
                        "\"item\":{\"type\":\"tool_use\",\"id\":\"call_1\",\"name\":\"get_time\",\"input\":{}}}",
                        TOOL_IMG};
  prepared p;
  CHECK_EQ_INT(prepare(&p, "anthropic/c",
                       "{\"api_key\":\"sk-a\",\"stop\":[\"##\"],\"top_p\":0.9,\"strict_tools\":true}",
                       SCHEMA, msgs, 3),
               DEXA_OK);
  const char *b = body(&p);
  CHECK_CONTAINS(p.headers, "anthropic-version: 2023-06-01\nx-api-key: sk-a\n");
  CHECK_CONTAINS(b, "\"system\":[{\"type\":\"text\",\"text\":\"Be brief.\",\"cache_control\":{\"type\":"
                    "\"ephemeral\"}}]");
  /* the last tool and the last block of the newest message are breakpoints */
  CHECK_CONTAINS(b, "\"additionalProperties\":false},\"strict\":true,\"cache_control\":{\"type\":"
                    "\"ephemeral\"}}]");
  CHECK_CONTAINS(b, "{\"type\":\"tool_result\",\"tool_use_id\":\"call_1\",\"content\":[{\"type\":\"text\","
                    "\"text\":\"chart\"},{\"type\":\"image\",\"source\":{\"type\":\"base64\",\"media_type\":"
                    "\"image/png\",\"data\":\"iVBORw0=\"}}],\"cache_control\":{\"type\":\"ephemeral\"}}]}]");
  CHECK_CONTAINS(b, "{\"type\":\"image\",\"source\":{\"type\":\"base64\",\"media_type\":\"image/png\","
                    "\"data\":\"iVBORw0=\"}},{\"type\":\"document\",\"source\":{\"type\":\"base64\","
                    "\"media_type\":\"application/pdf\",\"data\":\"JVBERi0=\"},\"title\":\"a.pdf\"},"
                    "{\"type\":\"text\",\"text\":\"What is this?\"}");
  CHECK_CONTAINS(b, "\"top_p\":0.9,\"stop_sequences\":[\"##\"],\"output_config\":{\"format\":{\"type\":"
                    "\"json_schema\",\"schema\":{\"type\":\"object\"");
  /* a verbatim item never gets a breakpoint */
  CHECK_CONTAINS(b, "{\"type\":\"tool_use\",\"id\":\"call_1\",\"name\":\"get_time\",\"input\":{}}]}");
  release(&p);
  CHECK_EQ_INT(prepare(&p, "anthropic/c", "{\"api_key\":\"k\",\"cache_ttl\":\"1h\"}", NULL, msgs, 1), DEXA_OK);
  CHECK_CONTAINS(body(&p), "{\"type\":\"text\",\"text\":\"What is this?\",\"cache_control\":{\"type\":"
                           "\"ephemeral\",\"ttl\":\"1h\"}}");
  release(&p);
  CHECK_EQ_INT(prepare(&p, "anthropic/c", "{\"api_key\":\"k\",\"prompt_caching\":false}", NULL, msgs, 3), DEXA_OK);
  CHECK(!strstr(body(&p), "cache_control"));
  CHECK_CONTAINS(body(&p), "\"system\":\"Be brief.\"");
  release(&p);
  const char *text_file[] = {"{\"seq\":1,\"turn\":1,\"role\":\"user\",\"id\":\"m1\",\"text\":\"x\","
                             "\"attachments\":[{\"type\":\"file\",\"media_type\":\"text/plain\","
                             "\"data\":\"aGVsbG8gd29ybGQ=\"}]}"};
  CHECK_EQ_INT(prepare(&p, "anthropic/c", "{\"api_key\":\"k\"}", NULL, text_file, 1), DEXA_OK);
  CHECK_CONTAINS(body(&p), "{\"type\":\"document\",\"source\":{\"type\":\"text\",\"media_type\":"
                           "\"text/plain\",\"data\":\"hello world\"}}");
  release(&p);
  const char *docx[] = {"{\"seq\":1,\"turn\":1,\"role\":\"user\",\"id\":\"m1\",\"text\":\"x\","
                        "\"attachments\":[{\"type\":\"file\",\"media_type\":\"application/zip\","
                        "\"data\":\"UEsDBA==\"}]}"};
  prepare(&p, "anthropic/c", "{\"api_key\":\"k\"}", NULL, docx, 1);
  CHECK_EQ_INT(p.rc, DEXA_E_MODEL);
  CHECK_CONTAINS(p.call.err, "images, PDF files and text files");
  release(&p);
}

/* ---- Gemini and Vertex ---- */

#define GEMINI_CALL                                                                                \
  "{\"seq\":2,\"turn\":1,\"round\":1,\"role\":\"model\",\"model\":\"gemini/g-1\",\"tool_calls\":["    \
  "{\"call_id\":\"call-t1r1-0\",\"name\":\"get_time\",\"arguments\":{}}],\"item\":{\"functionCall\":"  \
  "{\"name\":\"get_time\",\"args\":{ }},\"thoughtSignature\":\"U2lnMQ==\"}}"
#define GEMINI_RESULT                                                                              \
  "{\"seq\":3,\"turn\":1,\"round\":1,\"role\":\"tool\",\"call_id\":\"call-t1r1-0\",\"name\":\"get_time\"," \
  "\"status\":\"ok\",\"output\":\"12:00\"}"

static void gemini_request_replays_parts_verbatim(void) {
  const char *msgs[] = {USER_IMG, GEMINI_CALL, GEMINI_RESULT, TOOL_IMG};
  prepared p;
  CHECK_EQ_INT(prepare(&p, "gemini/g-1",
                       "{\"api_key\":\"gk\",\"temperature\":0.3,\"top_p\":0.8,\"seed\":4,\"stop\":[\"x\"],"
                       "\"thinking_budget_tokens\":512,\"max_output_tokens\":900,\"tool_choice\":\"required\"}",
                       SCHEMA, msgs, 4),
               DEXA_OK);
  const char *b = body(&p);
  CHECK_STR(url(&p), "https://generativelanguage.googleapis.com/v1beta/models/g-1:streamGenerateContent?alt=sse");
  CHECK_CONTAINS(p.headers, "x-goog-api-key: gk\n");
  CHECK_CONTAINS(b, "{\"role\":\"user\",\"parts\":[{\"inlineData\":{\"mimeType\":\"image/png\",\"data\":"
                    "\"iVBORw0=\"}},{\"inlineData\":{\"mimeType\":\"application/pdf\",\"data\":\"JVBERi0=\"}},"
                    "{\"text\":\"What is this?\"}]}");
  CHECK_CONTAINS(b, "{\"role\":\"model\",\"parts\":[{\"functionCall\":{\"name\":\"get_time\",\"args\":{ }},"
                    "\"thoughtSignature\":\"U2lnMQ==\"}]}");
  /* a made-up id is not sent back; the result's image is a part of its content */
  CHECK_CONTAINS(b, "{\"functionResponse\":{\"name\":\"get_time\",\"response\":{\"output\":\"12:00\"}}}");
  CHECK_CONTAINS(b, "{\"functionResponse\":{\"name\":\"get_time\",\"id\":\"call_1\",\"response\":{\"output\":"
                    "\"chart\"}}},{\"inlineData\":{\"mimeType\":\"image/png\",\"data\":\"iVBORw0=\"}}");
  CHECK_CONTAINS(b, "\"systemInstruction\":{\"parts\":[{\"text\":\"Be brief.\"}]}");
  CHECK_CONTAINS(b, "\"parametersJsonSchema\":{\"type\":\"object\",\"properties\":{}}");
  CHECK_CONTAINS(b, "\"toolConfig\":{\"functionCallingConfig\":{\"mode\":\"ANY\"}}");
  CHECK_CONTAINS(b, "\"generationConfig\":{\"candidateCount\":1,\"maxOutputTokens\":900,\"temperature\":0.3,"
                    "\"topP\":0.8,\"seed\":4,\"stopSequences\":[\"x\"],\"thinkingConfig\":{\"thinkingBudget\":"
                    "512,\"includeThoughts\":true},\"responseMimeType\":\"application/json\","
                    "\"responseJsonSchema\":{\"type\":\"object\"");
  release(&p);
  /* Another Gemini model: the part is translated, with the placeholder signature. */
  CHECK_EQ_INT(prepare(&p, "gemini/g-2", "{\"api_key\":\"gk\"}", NULL, msgs, 3), DEXA_OK);
  CHECK(!strstr(body(&p), "U2lnMQ=="));
  CHECK_CONTAINS(body(&p), "{\"functionCall\":{\"name\":\"get_time\",\"args\":{}},\"thoughtSignature\":"
                           "\"skip_thought_signature_validator\"}");
  release(&p);
}

static void vertex_urls_tokens_and_no_ids(void) {
  const char *msgs[] = {USER, GEMINI_CALL, TOOL_IMG};
  prepared p;
  setenv("DEXA_TEST_VERTEX_TOKEN", "ya29.token", 1);
  CHECK_EQ_INT(prepare(&p, "vertex/g-1",
                       "{\"project\":\"my-proj\",\"location\":\"global\",\"access_token_env\":"
                       "\"DEXA_TEST_VERTEX_TOKEN\"}",
                       NULL, msgs, 3),
               DEXA_OK);
  CHECK_STR(url(&p), "https://aiplatform.googleapis.com/v1/projects/my-proj/locations/global/publishers/"
                     "google/models/g-1:streamGenerateContent?alt=sse");
  CHECK_CONTAINS(p.headers, "Authorization: Bearer ya29.token\n");
  CHECK(!strstr(body(&p), "\"id\""));
  release(&p);
  CHECK_EQ_INT(prepare(&p, "vertex/g-1", "{\"project\":\"p\",\"location\":\"us-east5\",\"token_command\":"
                                         "\"printf 'tok-from-command\\\\n'\"}",
                       NULL, msgs, 1),
               DEXA_OK);
  CHECK_CONTAINS(url(&p), "https://us-east5-aiplatform.googleapis.com/v1/projects/p/locations/us-east5/");
  CHECK_CONTAINS(p.headers, "Authorization: Bearer tok-from-command\n");
  release(&p);
  unsetenv("GOOGLE_CLOUD_PROJECT");
  unsetenv("GOOGLE_CLOUD_ACCESS_TOKEN");
  prepare(&p, "vertex/g-1", "{\"project\":\"p\"}", NULL, msgs, 1);
  CHECK_EQ_INT(p.rc, DEXA_E_AUTH);
  CHECK_CONTAINS(p.call.err, "GOOGLE_CLOUD_ACCESS_TOKEN");
  release(&p);
  prepare(&p, "vertex/g-1", "{}", NULL, msgs, 1);
  CHECK_EQ_INT(p.rc, DEXA_E_AUTH);
  CHECK_CONTAINS(p.call.err, "GOOGLE_CLOUD_PROJECT");
  release(&p);
}

static int run_stream(const dexa__stream_ops *ops, const char *data, size_t n, size_t chunk,
                      dexa_model_reply *reply, dexa__decoder *d) {
  dexa__model_reply_init(reply);
  dexa__decoder_init(d, "test", NULL, reply);
  return dexa__stream_run(ops, d, data, n, chunk);
}

static void gemini_stream_joins_text_and_keeps_signatures(void) {
  size_t n;
  char *sse = slurp("test/fixtures/model/gemini_thinking_tools.sse", &n);
  CHECK(sse);
  for (size_t chunk = 0; chunk <= 7; chunk += 7) {
    dexa_model_reply r;
    dexa__decoder d;
    int rc = run_stream(&dexa__gemini_stream, sse, n, chunk, &r, &d);
    if (rc != DEXA_OK) fprintf(stderr, "    %s\n", d.err);
    CHECK_EQ_INT(rc, DEXA_OK);
    CHECK_EQ_INT(r.item_count, 4);
    CHECK_STR(r.items[0].json, "{\"text\":\"Thinking about the weather.\",\"thought\":true}");
    CHECK_STR(r.items[1].json, "{\"text\":\"Let me check.\",\"thoughtSignature\":\"Q2lRQjR5\\/eC8+sig==\"}");
    CHECK_STR(r.items[2].json, "{\"functionCall\":{\"name\":\"get_weather\",\"args\":{\"location\":\"Paris\"}},"
                               "\"thoughtSignature\":\"RnVuY1NpZzE=\"}");
    CHECK_STR(r.items[3].json, "{\"functionCall\":{\"name\":\"get_time\",\"args\":{\"tz\": \"CET\"}}}");
    CHECK_STR(dexa__buf_cstr(&r.items[0].reasoning), "Thinking about the weather.");
    CHECK_STR(dexa__buf_cstr(&r.items[1].text), "Let me check.");
    CHECK_CONTAINS(dexa__buf_cstr(&r.items[2].tool_calls), "\"call_id\":\"call-t0r0-0\",\"name\":\"get_weather\"");
    CHECK_CONTAINS(dexa__buf_cstr(&r.items[3].tool_calls), "\"call_id\":\"call-t0r0-1\"");
    CHECK_STR(r.finish_reason, "tool_calls");
    CHECK_STR(r.provider_finish_reason, "STOP");
    CHECK_EQ_INT(r.input_tokens, 100);
    CHECK_EQ_INT(r.output_tokens, 25);
    CHECK_EQ_INT(r.reasoning_tokens, 5);
    CHECK_EQ_INT(r.cached_input_tokens, 40);
    dexa__model_reply_free(&r);
  }
  free(sse);
}

static void gemini_stream_finishes_and_failures(void) {
  static const struct {
    const char *sse;
    int rc;
    const char *finish;
  } cases[] = {
      {"data: {\"candidates\":[{\"content\":{\"parts\":[{\"text\":\"cut\"}]},\"finishReason\":\"MAX_TOKENS\"}]}\n\n",
       DEXA_OK, "length"},
      {"data: {\"candidates\":[{\"content\":{\"parts\":[{\"text\":\"no\"}]},\"finishReason\":\"SAFETY\"}]}\n\n",
       DEXA_OK, "content_filter"},
      {"data: {\"candidates\":[{\"content\":{\"parts\":[{\"text\":\"ok\"}]},\"finishReason\":\"STOP\"}]}\n\n",
       DEXA_OK, "stop"},
      {"data: {\"candidates\":[{\"content\":{\"parts\":[{\"text\":\"half\"}]}}]}\n\n", DEXA_E_TRANSIENT, NULL},
      {"data: {\"promptFeedback\":{\"blockReason\":\"PROHIBITED_CONTENT\"}}\n\n", DEXA_E_MODEL, NULL},
      {"data: {\"error\":{\"code\":429,\"message\":\"quota\",\"status\":\"RESOURCE_EXHAUSTED\"}}\n\n",
       DEXA_E_RATE_LIMITED, NULL},
      {"data: {\"error\":{\"code\":503,\"message\":\"busy\",\"status\":\"UNAVAILABLE\"}}\n\n", DEXA_E_TRANSIENT,
       NULL},
      {"data: {\"candidates\":[{\"finishReason\":\"MALFORMED_FUNCTION_CALL\"}]}\n\n", DEXA_E_TRANSIENT, NULL},
      {"data: {\"candidates\":[{\"content\":{\"parts\":[{\"functionCall\":{\"name\":\"f\",\"args\":[1]}}]},"
       "\"finishReason\":\"STOP\"}]}\n\n",
       DEXA_E_TRANSIENT, NULL},
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    dexa_model_reply r;
    dexa__decoder d;
    int rc = run_stream(&dexa__gemini_stream, cases[i].sse, strlen(cases[i].sse), 0, &r, &d);
    if (rc != cases[i].rc) fprintf(stderr, "    case %zu: %s %s\n", i, dexa_error_name(rc), d.err);
    CHECK_EQ_INT(rc, cases[i].rc);
    if (cases[i].finish) CHECK_STR(r.finish_reason, cases[i].finish);
    dexa__model_reply_free(&r);
  }
}

/* ---- AWS event stream and Bedrock ---- */

/* One event-stream message with string headers. */
static void frame(dexa__buf *out, const char *message_type, const char *type_header, const char *type,
                  const char *payload) {
  unsigned char h[512];
  size_t hl = 0;
  const char *names[] = {":message-type", type_header, ":content-type"};
  const char *values[] = {message_type, type, "application/json"};
  for (int i = 0; i < 3; i++) {
    size_t nl = strlen(names[i]), vl = strlen(values[i]);
    h[hl++] = (unsigned char)nl;
    memcpy(h + hl, names[i], nl);
    hl += nl;
    h[hl++] = 7;
    h[hl++] = (unsigned char)(vl >> 8);
    h[hl++] = (unsigned char)vl;
    memcpy(h + hl, values[i], vl);
    hl += vl;
  }
  size_t pl = strlen(payload), total = 12 + hl + pl + 4;
  unsigned char pre[12] = {(unsigned char)(total >> 24), (unsigned char)(total >> 16),
                           (unsigned char)(total >> 8), (unsigned char)total,
                           (unsigned char)(hl >> 24), (unsigned char)(hl >> 16),
                           (unsigned char)(hl >> 8), (unsigned char)hl};
  uint32_t pc = dexa__crc32(0, pre, 8);
  pre[8] = (unsigned char)(pc >> 24), pre[9] = (unsigned char)(pc >> 16), pre[10] = (unsigned char)(pc >> 8),
  pre[11] = (unsigned char)pc;
  size_t start = out->len;
  dexa__buf_append(out, (const char *)pre, 12);
  dexa__buf_append(out, (const char *)h, hl);
  dexa__buf_append(out, payload, pl);
  uint32_t mc = dexa__crc32(0, (const unsigned char *)out->data + start, out->len - start);
  unsigned char tail[4] = {(unsigned char)(mc >> 24), (unsigned char)(mc >> 16), (unsigned char)(mc >> 8),
                           (unsigned char)mc};
  dexa__buf_append(out, (const char *)tail, 4);
}

static void event(dexa__buf *out, const char *type, const char *payload) {
  frame(out, "event", ":event-type", type, payload);
}

static void bedrock_transcript(dexa__buf *b) {
  event(b, "messageStart", "{\"role\":\"assistant\"}");
  event(b, "contentBlockDelta", "{\"contentBlockIndex\":0,\"delta\":{\"reasoningContent\":{\"text\":\"Need \"}}}");
  event(b, "contentBlockDelta", "{\"contentBlockIndex\":0,\"delta\":{\"reasoningContent\":{\"text\":\"tools.\"}}}");
  event(b, "contentBlockDelta",
        "{\"contentBlockIndex\":0,\"delta\":{\"reasoningContent\":{\"signature\":\"RXZTaWc=\"}},\"p\":\"abc\"}");
  event(b, "contentBlockStop", "{\"contentBlockIndex\":0}");
  event(b, "contentBlockDelta", "{\"contentBlockIndex\":1,\"delta\":{\"text\":\"Checking.\"}}");
  event(b, "contentBlockStop", "{\"contentBlockIndex\":1}");
  event(b, "contentBlockStart",
        "{\"contentBlockIndex\":2,\"start\":{\"toolUse\":{\"toolUseId\":\"tooluse_1\",\"name\":\"get_time\"}}}");
  event(b, "contentBlockDelta", "{\"contentBlockIndex\":2,\"delta\":{\"toolUse\":{\"input\":\"{\\\"tz\\\":\"}}}");
  event(b, "contentBlockDelta", "{\"contentBlockIndex\":2,\"delta\":{\"toolUse\":{\"input\":\"\\\"CET\\\"}\"}}}");
  event(b, "contentBlockStop", "{\"contentBlockIndex\":2}");
  event(b, "messageStop", "{\"stopReason\":\"tool_use\"}");
  event(b, "metadata", "{\"usage\":{\"inputTokens\":30,\"outputTokens\":12,\"cacheReadInputTokens\":50,"
                       "\"cacheWriteInputTokens\":20,\"totalTokens\":112},\"metrics\":{\"latencyMs\":9}}");
}

static void crc32_is_ieee(void) {
  CHECK_EQ_INT(dexa__crc32(0, (const unsigned char *)"123456789", 9), 0xCBF43926u);
}

static void bedrock_stream_keeps_reasoning_and_tools(void) {
  dexa__buf b;
  dexa__buf_init(&b);
  bedrock_transcript(&b);
  for (size_t chunk = 0; chunk <= 1; chunk++) { /* whole, and byte by byte */
    dexa_model_reply r;
    dexa__decoder d;
    int rc = run_stream(&dexa__bedrock_stream, b.data, b.len, chunk, &r, &d);
    if (rc != DEXA_OK) fprintf(stderr, "    %s\n", d.err);
    CHECK_EQ_INT(rc, DEXA_OK);
    CHECK_EQ_INT(r.item_count, 3);
    CHECK_STR(r.items[0].json, "{\"reasoningContent\":{\"reasoningText\":{\"text\":\"Need tools.\","
                               "\"signature\":\"RXZTaWc=\"}}}");
    CHECK_STR(r.items[1].json, "{\"text\":\"Checking.\"}");
    CHECK_STR(r.items[2].json, "{\"toolUse\":{\"toolUseId\":\"tooluse_1\",\"name\":\"get_time\",\"input\":"
                               "{\"tz\":\"CET\"}}}");
    CHECK_STR(dexa__buf_cstr(&r.items[0].reasoning), "Need tools.");
    CHECK_STR(r.finish_reason, "tool_calls");
    CHECK_EQ_INT(r.input_tokens, 100);
    CHECK_EQ_INT(r.cached_input_tokens, 50);
    CHECK_EQ_INT(r.cache_write_tokens, 20);
    CHECK_EQ_INT(r.output_tokens, 12);
    dexa__model_reply_free(&r);
  }
  dexa__buf_free(&b);
}

static void bedrock_stream_failures(void) {
  dexa__buf b;
  dexa_model_reply r;
  dexa__decoder d;
  /* a flipped payload byte: the message CRC catches it */
  dexa__buf_init(&b);
  bedrock_transcript(&b);
  b.data[60] ^= 1;
  CHECK_EQ_INT(run_stream(&dexa__bedrock_stream, b.data, b.len, 0, &r, &d), DEXA_E_TRANSIENT);
  CHECK_CONTAINS(d.err, "CRC");
  dexa__model_reply_free(&r);
  /* a prelude that claims 1 GiB */
  b.data[0] = 0x40;
  CHECK(run_stream(&dexa__bedrock_stream, b.data, b.len, 0, &r, &d) != DEXA_OK);
  dexa__model_reply_free(&r);
  dexa__buf_reset(&b);
  /* cut before messageStop, and inside a message */
  event(&b, "contentBlockDelta", "{\"contentBlockIndex\":0,\"delta\":{\"text\":\"Half\"}}");
  CHECK_EQ_INT(run_stream(&dexa__bedrock_stream, b.data, b.len, 0, &r, &d), DEXA_E_TRANSIENT);
  CHECK_CONTAINS(d.err, "messageStop");
  dexa__model_reply_free(&r);
  CHECK_EQ_INT(run_stream(&dexa__bedrock_stream, b.data, b.len - 3, 0, &r, &d), DEXA_E_TRANSIENT);
  CHECK_CONTAINS(d.err, "inside an event");
  dexa__model_reply_free(&r);
  /* exceptions in the stream */
  static const struct {
    const char *type;
    int rc;
  } ex[] = {{"throttlingException", DEXA_E_RATE_LIMITED},
            {"modelStreamErrorException", DEXA_E_TRANSIENT},
            {"internalServerException", DEXA_E_TRANSIENT},
            {"validationException", DEXA_E_MODEL}};
  for (size_t i = 0; i < sizeof ex / sizeof *ex; i++) {
    dexa__buf_reset(&b);
    event(&b, "messageStart", "{\"role\":\"assistant\"}");
    frame(&b, "exception", ":exception-type", ex[i].type, "{\"message\":\"Too many tokens\"}");
    CHECK_EQ_INT(run_stream(&dexa__bedrock_stream, b.data, b.len, 0, &r, &d), ex[i].rc);
    CHECK_CONTAINS(d.err, "Too many tokens");
    dexa__model_reply_free(&r);
  }
  /* a truncated answer */
  dexa__buf_reset(&b);
  event(&b, "contentBlockDelta", "{\"contentBlockIndex\":0,\"delta\":{\"text\":\"Once upon\"}}");
  event(&b, "messageStop", "{\"stopReason\":\"max_tokens\"}");
  CHECK_EQ_INT(run_stream(&dexa__bedrock_stream, b.data, b.len, 0, &r, &d), DEXA_OK);
  CHECK_STR(r.finish_reason, "length");
  CHECK_STR(r.provider_finish_reason, "max_tokens");
  dexa__model_reply_free(&r);
  dexa__buf_free(&b);
}

static void bedrock_request_signing_and_shapes(void) {
  setenv("AWS_ACCESS_KEY_ID", "AKIDEXAMPLE", 1);
  setenv("AWS_SECRET_ACCESS_KEY", "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY", 1);
  setenv("AWS_SESSION_TOKEN", "tok/en", 1);
  unsetenv("AWS_BEARER_TOKEN_BEDROCK");
  unsetenv("AWS_ENDPOINT_URL");
  unsetenv("AWS_ENDPOINT_URL_BEDROCK_RUNTIME");
  const char *msgs[] = {USER_IMG,
                        "{\"seq\":2,\"turn\":1,\"round\":1,\"role\":\"model\",\"model\":\"bedrock/m:1\",\"item\":"
                        "{\"reasoningContent\":{\"reasoningText\":{\"text\":\"t\",\"signature\":\"c2ln\"}}}}",
                        "{\"seq\":3,\"turn\":1,\"round\":1,\"role\":\"model\",\"model\":\"bedrock/m:1\",\"item\":"
                        "{\"toolUse\":{\"toolUseId\":\"call_1\",\"name\":\"get_time\",\"input\":{}}}}",
                        TOOL_IMG};
  prepared p;
  CHECK_EQ_INT(prepare(&p, "bedrock/m:1",
                       "{\"region\":\"us-west-2\",\"prompt_caching\":true,\"temperature\":1,"
                       "\"thinking_budget_tokens\":1024,\"stop\":[\"##\"]}",
                       NULL, msgs, 4),
               DEXA_OK);
  const char *b = body(&p);
  CHECK_STR(url(&p), "https://bedrock-runtime.us-west-2.amazonaws.com/model/m%3A1/converse-stream");
  CHECK_CONTAINS(p.headers, "X-Amz-Date: 20150830T123600Z\nX-Amz-Security-Token: tok/en\n"
                            "Authorization: AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-west-2/"
                            "bedrock/aws4_request, SignedHeaders=host;x-amz-date;x-amz-security-token, "
                            "Signature=");
  CHECK_CONTAINS(b, "{\"role\":\"user\",\"content\":[{\"image\":{\"format\":\"png\",\"source\":{\"bytes\":"
                    "\"iVBORw0=\"}}},{\"document\":{\"format\":\"pdf\",\"name\":\"document 1\",\"source\":"
                    "{\"bytes\":\"JVBERi0=\"}}},{\"text\":\"What is this?\"}]}");
  CHECK_CONTAINS(b, "{\"role\":\"assistant\",\"content\":[{\"reasoningContent\":{\"reasoningText\":{\"text\":"
                    "\"t\",\"signature\":\"c2ln\"}}},{\"toolUse\":{\"toolUseId\":\"call_1\"");
  CHECK_CONTAINS(b, "{\"toolResult\":{\"toolUseId\":\"call_1\",\"content\":[{\"text\":\"chart\"},{\"image\":"
                    "{\"format\":\"png\",\"source\":{\"bytes\":\"iVBORw0=\"}}}]}},{\"cachePoint\":{\"type\":"
                    "\"default\"}}]}]");
  CHECK_CONTAINS(b, "\"system\":[{\"text\":\"Be brief.\"},{\"cachePoint\":{\"type\":\"default\"}}]");
  CHECK_CONTAINS(b, "\"inputSchema\":{\"json\":{\"type\":\"object\",\"properties\":{}}}}}");
  CHECK_CONTAINS(b, "{\"cachePoint\":{\"type\":\"default\"}}],\"toolChoice\":{\"auto\":{}}}");
  CHECK_CONTAINS(b, "\"inferenceConfig\":{\"maxTokens\":5120,\"temperature\":1,\"stopSequences\":[\"##\"]},"
                    "\"additionalModelRequestFields\":{\"thinking\":{\"type\":\"enabled\",\"budget_tokens\":1024}}");
  release(&p);
  /* another Bedrock model: the reasoning is dropped */
  CHECK_EQ_INT(prepare(&p, "bedrock/m:2", "{\"region\":\"us-west-2\"}", NULL, msgs, 4), DEXA_OK);
  CHECK(!strstr(body(&p), "c2ln"));
  CHECK(!strstr(body(&p), "cachePoint"));
  release(&p);
  /* an API key instead of SigV4 */
  setenv("AWS_BEARER_TOKEN_BEDROCK", "bedrock-api-key", 1);
  CHECK_EQ_INT(prepare(&p, "bedrock/m:1", "{\"region\":\"us-west-2\"}", NULL, msgs, 1), DEXA_OK);
  CHECK_CONTAINS(p.headers, "Authorization: Bearer bedrock-api-key\n");
  CHECK(!strstr(p.headers, "X-Amz-Date"));
  release(&p);
  unsetenv("AWS_BEARER_TOKEN_BEDROCK");
  unsetenv("AWS_ACCESS_KEY_ID");
  prepare(&p, "bedrock/m:1", "{\"region\":\"us-west-2\"}", NULL, msgs, 1);
  CHECK_EQ_INT(p.rc, DEXA_E_AUTH);
  CHECK_CONTAINS(p.call.err, "AWS_ACCESS_KEY_ID");
  release(&p);
  setenv("AWS_ACCESS_KEY_ID", "AKIDEXAMPLE", 1);
  unsetenv("AWS_REGION");
  unsetenv("AWS_DEFAULT_REGION");
  prepare(&p, "bedrock/m:1", "{}", NULL, msgs, 1);
  CHECK_EQ_INT(p.rc, DEXA_E_AUTH);
  CHECK_CONTAINS(p.call.err, "AWS_REGION");
  release(&p);
  const char *by_url[] = {USER_URL};
  prepare(&p, "bedrock/m:1", "{\"region\":\"us-west-2\"}", NULL, by_url, 1);
  CHECK_EQ_INT(p.rc, DEXA_E_MODEL);
  CHECK_CONTAINS(p.call.err, "not by URL");
  release(&p);
  prepare(&p, "bedrock/m:1", "{\"region\":\"us-west-2\"}", SCHEMA, msgs, 1);
  CHECK_EQ_INT(p.rc, DEXA_E_MODEL);
  CHECK_CONTAINS(p.call.err, "no structured output");
  release(&p);
  unsetenv("AWS_SESSION_TOKEN");
}

/* The AWS SigV4 test suite: get-vanilla and post-vanilla; then a Bedrock
 * URL (encoded path, query, session token) checked against an independent
 * implementation (Node's crypto). */
static void sigv4_matches_the_aws_test_vectors(void) {
  char auth[512], date[17];
  dexa__sigv4 s = {"GET", "https://example.amazonaws.com/", "", 0, "us-east-1", "service", "AKIDEXAMPLE",
                   "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY", NULL, 1440938160};
  CHECK_EQ_INT(dexa__sigv4_sign(&s, auth, sizeof auth, date), 0);
  CHECK_STR(date, "20150830T123600Z");
  CHECK_STR(auth, "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/service/aws4_request, "
                  "SignedHeaders=host;x-amz-date, "
                  "Signature=5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b8aae1d763fbf31");
  s.method = "POST";
  CHECK_EQ_INT(dexa__sigv4_sign(&s, auth, sizeof auth, date), 0);
  CHECK_CONTAINS(auth, "Signature=5da7c1a2acd57cee7505fc6676e4e544621c30862966e37dddb68e92efbe5d6b");
  dexa__sigv4 b = {"POST", "https://bedrock-runtime.us-east-1.amazonaws.com/model/anthropic.claude-v2%3A1/"
                           "converse-stream?trace=on&a=1",
                   "{\"messages\":[]}", 15, "us-east-1", "bedrock", "AKIDEXAMPLE",
                   "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY", "tok/en", 1440938160};
  CHECK_EQ_INT(dexa__sigv4_sign(&b, auth, sizeof auth, date), 0);
  CHECK_CONTAINS(auth, "SignedHeaders=host;x-amz-date;x-amz-security-token, "
                       "Signature=c4409aeb44b5880fcc81514339035c8f387eb5053cdaddac87393eee3c298d9f");
  b.url = "no-scheme";
  CHECK_EQ_INT(dexa__sigv4_sign(&b, auth, sizeof auth, date), -1);
}

/* ---- Azure ---- */

static void azure_urls_and_key(void) {
  const char *msgs[] = {USER};
  static const struct {
    const char *options, *url;
  } cases[] = {
      {"{\"base_url\":\"https://r.openai.azure.com\",\"prompt_caching\":true}",
       "https://r.openai.azure.com/openai/v1/chat/completions"},
      {"{\"base_url\":\"https://r.openai.azure.com/openai/v1/\",\"api\":\"responses\"}",
       "https://r.openai.azure.com/openai/v1/responses"},
      {"{\"base_url\":\"https://r.openai.azure.com\",\"api_version\":\"2024-10-21\"}",
       "https://r.openai.azure.com/openai/deployments/dep%201/chat/completions?api-version=2024-10-21"},
      {"{\"base_url\":\"https://r.openai.azure.com/openai\",\"api_version\":\"2025-04-01-preview\","
       "\"api\":\"responses\"}",
       "https://r.openai.azure.com/openai/responses?api-version=2025-04-01-preview"},
  };
  setenv("AZURE_OPENAI_API_KEY", "az-secret", 1);
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    prepared p;
    CHECK_EQ_INT(prepare(&p, "azure/dep 1", cases[i].options, NULL, msgs, 1), DEXA_OK);
    CHECK_STR(url(&p), cases[i].url);
    CHECK_CONTAINS(p.headers, "api-key: az-secret\n");
    CHECK_CONTAINS(body(&p), "{\"model\":\"dep 1\"");
    if (i == 0) CHECK_CONTAINS(body(&p), "\"prompt_cache_key\":\"sess-42\"");
    else CHECK(!strstr(body(&p), "prompt_cache_key")); /* opt-in on Azure */
    release(&p);
  }
  setenv("AZURE_OPENAI_API_KEY", "az-secret\r\nX-Injected: 1", 1);
  prepared p;
  prepare(&p, "azure/d", "{\"base_url\":\"https://r.openai.azure.com\"}", NULL, msgs, 1);
  CHECK_EQ_INT(p.rc, DEXA_E_AUTH); /* never a header injected from the environment */
  CHECK_CONTAINS(p.call.err, "line break");
  release(&p);
  unsetenv("AZURE_OPENAI_API_KEY");
  unsetenv("AZURE_OPENAI_ENDPOINT");
  prepare(&p, "azure/d", "{\"base_url\":\"https://r.openai.azure.com\"}", NULL, msgs, 1);
  CHECK_EQ_INT(p.rc, DEXA_E_AUTH);
  CHECK_CONTAINS(p.call.err, "AZURE_OPENAI_API_KEY");
  release(&p);
  prepare(&p, "azure/d", "{\"api_key\":\"k\"}", NULL, msgs, 1);
  CHECK_EQ_INT(p.rc, DEXA_E_AUTH);
  CHECK_CONTAINS(p.call.err, "AZURE_OPENAI_ENDPOINT");
  release(&p);
}

/* ---- finish reasons and full usage of the first three decoders ---- */

static void first_round_decoders_report_finish_and_usage(void) {
  static const struct {
    const dexa__stream_ops *ops;
    const char *sse;
    const char *finish;
    int64_t in, cached, written, out, reasoning;
  } cases[] = {
      {&dexa__openai_responses_stream,
       "data: {\"type\":\"response.output_item.done\",\"output_index\":0,\"item\":{\"type\":\"message\","
       "\"content\":[{\"type\":\"output_text\",\"text\":\"Once\"}]}}\n\n"
       "data: {\"type\":\"response.incomplete\",\"response\":{\"status\":\"incomplete\",\"incomplete_details\":"
       "{\"reason\":\"max_output_tokens\"},\"usage\":{\"input_tokens\":90,\"input_tokens_details\":"
       "{\"cached_tokens\":64},\"output_tokens\":16,\"output_tokens_details\":{\"reasoning_tokens\":10}}}}\n\n",
       "length", 90, 64, 0, 16, 10},
      {&dexa__openai_chat_stream,
       "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Once\"},\"finish_reason\":\"length\"}]}\n\n"
       "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":80,\"prompt_tokens_details\":{\"cached_tokens\":32},"
       "\"completion_tokens\":8,\"completion_tokens_details\":{\"reasoning_tokens\":3}}}\n\ndata: [DONE]\n\n",
       "length", 80, 32, 0, 8, 3},
      {&dexa__anthropic_stream,
       "data: {\"type\":\"message_start\",\"message\":{\"usage\":{\"input_tokens\":10,"
       "\"cache_creation_input_tokens\":200,\"cache_read_input_tokens\":1000,\"output_tokens\":1}}}\n\n"
       "data: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n"
       "data: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"Once\"}}\n\n"
       "data: {\"type\":\"content_block_stop\",\"index\":0}\n\n"
       "data: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"max_tokens\"},\"usage\":{\"output_tokens\":"
       "50}}\n\ndata: {\"type\":\"message_stop\"}\n\n",
       "length", 1210, 1000, 200, 50, 0},
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    dexa_model_reply r;
    dexa__decoder d;
    int rc = run_stream(cases[i].ops, cases[i].sse, strlen(cases[i].sse), 0, &r, &d);
    if (rc != DEXA_OK) fprintf(stderr, "    case %zu: %s\n", i, d.err);
    CHECK_EQ_INT(rc, DEXA_OK);
    CHECK_STR(r.finish_reason, cases[i].finish);
    CHECK_EQ_INT(r.input_tokens, cases[i].in);
    CHECK_EQ_INT(r.cached_input_tokens, cases[i].cached);
    CHECK_EQ_INT(r.cache_write_tokens, cases[i].written);
    CHECK_EQ_INT(r.output_tokens, cases[i].out);
    CHECK_EQ_INT(r.reasoning_tokens, cases[i].reasoning);
    dexa__model_reply_free(&r);
  }
}

/* ---- cost and tokens from a command ---- */

static void price_gives_cost(void) {
  dexa_model *m = NULL;
  const char *o = "{\"price\":{\"input\":2,\"output\":8,\"cached_input\":0.5,\"cache_write\":2.5}}";
  CHECK_EQ_INT(dexa_model_client_new(&m, "openai/g", o, strlen(o), NULL, 0), DEXA_OK);
  dexa_model_usage u;
  dexa_model_usage_init(&u, sizeof u);
  u.input_tokens = 1000;
  u.cached_input_tokens = 400;
  u.cache_write_tokens = 100;
  u.output_tokens = 200;
  double cost = dexa__client_cost(m->user_data, &u);
  CHECK(cost > 0.0030499 && cost < 0.0030501); /* (500*2 + 400*0.5 + 100*2.5 + 200*8) / 1e6 */
  dexa_model_free(m);
  CHECK_EQ_INT(dexa_model_client_new(&m, "openai/g", "{}", 2, NULL, 0), DEXA_OK);
  CHECK(dexa__client_cost(m->user_data, &u) < 0);
  dexa_model_free(m);
}

static void token_command_runs_caches_and_fails_clearly(void) {
  char *tok = NULL, why[256] = "";
  CHECK_EQ_INT(dexa__run_token_command("printf ' tok-1 \\n second line'", 10000, &tok, why, sizeof why), DEXA_OK);
  CHECK_STR(tok, " tok-1");
  free(tok);
  CHECK_EQ_INT(dexa__run_token_command("echo out; exit 3", 10000, &tok, why, sizeof why), DEXA_E_AUTH);
  CHECK_CONTAINS(why, "status 3");
  CHECK_EQ_INT(dexa__run_token_command("true", 10000, &tok, why, sizeof why), DEXA_E_AUTH);
  CHECK_CONTAINS(why, "printed no token");
  CHECK_EQ_INT(dexa__run_token_command("exec sleep 30", 200, &tok, why, sizeof why), DEXA_E_AUTH);
  CHECK_CONTAINS(why, "ran out of time");
  /* The client keeps a token for token_ttl_s and runs the command again after a 401. */
  char counter[64], opts[512];
  snprintf(counter, sizeof counter, "/tmp/dexa-token-count-%d", (int)getpid());
  unlink(counter);
  snprintf(opts, sizeof opts, "{\"project\":\"p\",\"token_command\":\"echo x >> %s; printf t-$(wc -l < %s)\"}",
           counter, counter);
  dexa_model *m = NULL;
  CHECK_EQ_INT(dexa_model_client_new(&m, "vertex/g", opts, strlen(opts), NULL, 0), DEXA_OK);
  dexa_model_request req;
  const char *msgs[] = {USER};
  make_request(&req, NULL, msgs, 1);
  dexa__call c1, c2, c3;
  dexa__call_init(&c1, m->user_data, &req, 1000);
  dexa__call_init(&c2, m->user_data, &req, 1100);
  CHECK_EQ_INT(dexa__call_prepare(&c1), DEXA_OK);
  CHECK_EQ_INT(dexa__call_prepare(&c2), DEXA_OK);
  int same = strcmp(c1.headers[2], "Authorization: Bearer t-1") == 0 && strcmp(c2.headers[2], c1.headers[2]) == 0;
  dexa__token_forget(m->user_data);
  dexa__call_init(&c3, m->user_data, &req, 1200);
  CHECK_EQ_INT(dexa__call_prepare(&c3), DEXA_OK);
  int fresh = strcmp(c3.headers[2], "Authorization: Bearer t-2") == 0;
  if (!same || !fresh) fprintf(stderr, "    %s | %s | %s\n", c1.headers[2], c2.headers[2], c3.headers[2]);
  dexa__call_free(&c1);
  dexa__call_free(&c2);
  dexa__call_free(&c3);
  dexa__model_request_free(&req);
  dexa_model_free(m);
  unlink(counter);
  CHECK(same);
  CHECK(fresh);
}

int main(void) {
  RUN(options_are_checked_with_clear_errors);
  RUN(responses_reasoning_options_reach_the_body);
  RUN(responses_reasoning_without_encrypted_content_is_not_replayed);
  RUN(responses_options_caching_schema_and_strict_tools);
  RUN(chat_options_schema_images_and_refusals);
  RUN(anthropic_caching_breakpoints_and_options);
  RUN(gemini_request_replays_parts_verbatim);
  RUN(vertex_urls_tokens_and_no_ids);
  RUN(gemini_stream_joins_text_and_keeps_signatures);
  RUN(gemini_stream_finishes_and_failures);
  RUN(crc32_is_ieee);
  RUN(bedrock_stream_keeps_reasoning_and_tools);
  RUN(bedrock_stream_failures);
  RUN(bedrock_request_signing_and_shapes);
  RUN(sigv4_matches_the_aws_test_vectors);
  RUN(azure_urls_and_key);
  RUN(first_round_decoders_report_finish_and_usage);
  RUN(price_gives_cost);
  RUN(token_command_runs_caches_and_fails_clearly);
  TEST_MAIN_END();
}
