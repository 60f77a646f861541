/* The worker's MCP configuration: the mcpServers shape, unknown keys refused
 * with their path, bad values, redaction of env and header values, and the
 * stable tool-name scheme. */
#include <dexagents/dexagents.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "testing.h"
#include "tools/mcp_internal.h"

static int load(const char *json, char *err, dexa_mcp_config **out) {
  dexa_mcp_config *c = NULL;
  int rc = dexa_mcp_config_load(&c, NULL, json, strlen(json), err, 256);
  if (out) *out = c;
  else dexa_mcp_config_free(c);
  return rc;
}

static void test_both_transports_parse_with_defaults(void) {
  dexa_mcp_config *c = NULL;
  char err[256];
  CHECK_EQ_INT(load("{\"mcpServers\":{\"files\":{\"command\":\"npx\",\"args\":[\"a\",\"b\"],"
                    "\"env\":{\"TOKEN\":\"s3cret\"},\"cwd\":\"/tmp\",\"trustAnnotations\":true},"
                    "\"web\":{\"type\":\"http\",\"url\":\"https://x.example/mcp\","
                    "\"headers\":{\"Authorization\":\"Bearer tok\"},\"timeoutMs\":5000,"
                    "\"protocolVersion\":\"2026-07-28\",\"resourceAndPromptTools\":true}}}",
                    err, &c),
               DEXA_OK);
  CHECK_EQ_INT(c->count, 2);
  CHECK_EQ_INT(c->servers[0].transport, DEXA__MCP_STDIO);
  CHECK_EQ_INT(c->servers[0].argc, 2);
  CHECK_EQ_INT(c->servers[0].timeout_ms, 60000);
  CHECK(c->servers[0].trust_annotations);
  CHECK(!c->servers[0].protocol_version);
  CHECK_EQ_INT(c->servers[1].transport, DEXA__MCP_HTTP);
  CHECK_EQ_INT(c->servers[1].timeout_ms, 5000);
  CHECK_STR(c->servers[1].protocol_version, "2026-07-28");
  CHECK(!c->servers[1].trust_annotations);
  dexa_mcp_config_free(c);
}

static void test_unknown_keys_are_refused_with_their_path(void) {
  char err[256];
  CHECK_EQ_INT(load("{\"mcpServers\":{\"files\":{\"command\":\"x\",\"evn\":{}}}}", err, NULL),
               DEXA_E_UNKNOWN_KEY);
  CHECK_CONTAINS(err, "mcpServers.files.evn: unknown key");
  CHECK_EQ_INT(load("{\"mcpServers\":{},\"servers\":{}}", err, NULL), DEXA_E_UNKNOWN_KEY);
  CHECK_CONTAINS(err, "servers: unknown key");
  /* Per-tool settings of earlier example versions are refused too. */
  CHECK_EQ_INT(load("{\"mcpServers\":{\"f\":{\"command\":\"x\",\"tools\":{\"a\":{}}}}}", err, NULL),
               DEXA_E_UNKNOWN_KEY);
  CHECK_CONTAINS(err, "mcpServers.f.tools");
}

static void test_bad_values_are_refused(void) {
  char err[256];
  const char *bad[] = {
      "{\"mcpServers\":{\"a\":{}}}",                                        /* neither */
      "{\"mcpServers\":{\"a\":{\"command\":\"x\",\"url\":\"http://h\"}}}",  /* both */
      "{\"mcpServers\":{\"a\":{\"url\":\"ftp://h\"}}}",
      "{\"mcpServers\":{\"a\":{\"command\":\"\"}}}",
      "{\"mcpServers\":{\"a\":{\"command\":\"x\",\"args\":[1]}}}",
      "{\"mcpServers\":{\"a\":{\"command\":\"x\",\"env\":{\"A\":1}}}}",
      "{\"mcpServers\":{\"a\":{\"command\":\"x\",\"timeoutMs\":5}}}",
      "{\"mcpServers\":{\"a\":{\"command\":\"x\",\"trustAnnotations\":\"yes\"}}}",
      "{\"mcpServers\":{\"a\":{\"command\":\"x\",\"protocolVersion\":\"1999-01-01\"}}}",
      "{\"mcpServers\":{\"a\":{\"command\":\"x\",\"type\":\"sse\"}}}",
      "{\"mcpServers\":{\"a\":{\"url\":\"http://h\",\"headers\":{\"X\":\"a\\nb\"}}}}",
      "{\"mcpServers\":{\"a\":{\"url\":\"http://h\",\"args\":[]}}}",
      "{\"mcpServers\":{\"a__b\":{\"command\":\"x\"}}}",
      "{\"mcpServers\":{\"a_\":{\"command\":\"x\"}}}",
      "{\"mcpServers\":{\"a b\":{\"command\":\"x\"}}}",
      "{\"mcpServers\":{\"a\":{\"command\":\"x\"},\"a\":{\"command\":\"y\"}}}",
      "{\"mcpServers\":[]}",
      "{}",
  };
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    int rc = load(bad[i], err, NULL);
    if (rc != DEXA_E_INVALID_ARG) fprintf(stderr, "    case %zu: %s -> %d %s\n", i, bad[i], rc, err);
    CHECK_EQ_INT(rc, DEXA_E_INVALID_ARG);
    CHECK(err[0]);
  }
  CHECK_EQ_INT(load("{\"mcpServers\":", err, NULL), DEXA_E_INVALID_JSON);
  CHECK_EQ_INT(load("[]", err, NULL), DEXA_E_INVALID_JSON);
  dexa_mcp_config *c = (dexa_mcp_config *)1;
  CHECK_EQ_INT(dexa_mcp_config_load(&c, NULL, NULL, 0, NULL, 0), DEXA_E_INVALID_ARG);
  CHECK(c == NULL);
  CHECK_EQ_INT(dexa_mcp_config_load(&c, "/nonexistent/mcp.json", NULL, 0, err, sizeof err), DEXA_E_IO);
  CHECK_CONTAINS(err, "/nonexistent/mcp.json");
}

static void test_redacted_json_hides_env_and_header_values(void) {
  char path[] = "/tmp/dexa-mcp-config-XXXXXX";
  int fd = mkstemp(path);
  CHECK(fd >= 0);
  const char *json = "{\"mcpServers\":{\"f\":{\"command\":\"srv\",\"env\":{\"API_KEY\":\"s3cret-env\"}},"
                     "\"w\":{\"url\":\"http://h/mcp\",\"headers\":{\"Authorization\":\"Bearer s3cret-hdr\"}}}}";
  CHECK(write(fd, json, strlen(json)) == (ssize_t)strlen(json));
  close(fd);
  dexa_mcp_config *c = NULL;
  char err[256];
  CHECK_EQ_INT(dexa_mcp_config_load(&c, path, NULL, 0, err, sizeof err), DEXA_OK);
  unlink(path);
  char *out = NULL;
  size_t len = 0;
  CHECK_EQ_INT(dexa_mcp_config_redacted_json(c, &out, &len), DEXA_OK);
  CHECK(len == strlen(out));
  CHECK(!strstr(out, "s3cret"));
  CHECK_CONTAINS(out, "\"env\":{\"API_KEY\":\"<redacted>\"}");
  CHECK_CONTAINS(out, "\"headers\":{\"Authorization\":\"<redacted>\"}");
  CHECK_CONTAINS(out, "\"command\":\"srv\"");
  /* The redacted form loads again (same shape, known keys only). */
  dexa_mcp_config *again = NULL;
  CHECK_EQ_INT(dexa_mcp_config_load(&again, NULL, out, len, err, sizeof err), DEXA_OK);
  dexa_mcp_config_free(again);
  dexa_free(out);
  CHECK_EQ_INT(dexa_mcp_config_redacted_json(NULL, &out, &len), DEXA_E_INVALID_ARG);
  dexa_mcp_config_free(c);
  dexa_mcp_config_free(NULL);
}

static void test_tool_names_are_stable_and_valid(void) {
  char a[65], b[65], c2[65];
  dexa__mcp_tool_name("fs", "read_file", a);
  CHECK_STR(a, "fs__read_file");
  dexa__mcp_tool_name("fs", "read file", a);
  dexa__mcp_tool_name("fs", "read file", b);
  dexa__mcp_tool_name("fs", "read_file ", c2);
  CHECK_STR(a, b);                  /* stable */
  CHECK(strcmp(a, c2) != 0);        /* distinct originals stay distinct */
  CHECK(strncmp(a, "fs__read_file_", 14) == 0 && strlen(a) == 14 + 12);
  /* The low 48 bits of FNV-1a 64 (offset basis 14695981039346656037). */
  CHECK_STR(a, "fs__read_file_fb929db4e9f1");
  dexa__mcp_tool_name("fs", "files.read", a);
  CHECK_STR(a, "fs__files_read_421fd0376a62"); /* no '.' for OpenAI or Anthropic */
  dexa__mcp_tool_name("fs", "read-file_2", a);
  CHECK_STR(a, "fs__read-file_2");
  /* The names 1.0 offered, still resolved: a '.' kept, a wrong basis. */
  dexa__mcp_tool_name_1_0("fs", "files.read", a);
  CHECK_STR(a, "fs__files.read");
  dexa__mcp_tool_name_1_0("fs", "read file", a);
  CHECK_STR(a, "fs__read_file_99ae60de10f3");
  char longname[200];
  memset(longname, 'x', 150);
  longname[150] = '\0';
  dexa__mcp_tool_name("a-server-with-a-long-name-32-chr", longname, a);
  CHECK_EQ_INT(strlen(a), 64);
  dexa__mcp_tool_name("s", "\xc3\xa9t\xc3\xa9", a); /* UTF-8 */
  for (const char *p = a; *p; p++)
    CHECK((*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') || *p == '_');
  dexa_tool_source **v = NULL;
  size_t n = 9;
  CHECK_EQ_INT(dexa_mcp_tool_sources_new(&v, &n, NULL), DEXA_E_INVALID_ARG);
  CHECK(v == NULL && n == 0);
}

int main(void) {
  RUN(test_both_transports_parse_with_defaults);
  RUN(test_unknown_keys_are_refused_with_their_path);
  RUN(test_bad_values_are_refused);
  RUN(test_redacted_json_hides_env_and_header_values);
  RUN(test_tool_names_are_stable_and_valid);
  TEST_MAIN_END();
}
