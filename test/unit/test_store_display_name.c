/* dexa_store_display_name: a store URI without its password, in each form
 * libpq takes (URI authority, query parameter, key/value conninfo), with
 * everything else kept; a SQLite path unchanged; bad arguments refused. */
#include <string.h>

#include "dexagents/dexagents.h"
#include "testing.h"

static const char *shown(const char *uri) {
  static char buf[512];
  return dexa_store_display_name(uri, buf, sizeof buf) == DEXA_OK ? buf : "(error)";
}

static void test_uri_keeps_all_but_the_password(void) {
  CHECK_STR(shown("postgresql://app:s3cret@db1:5432/agents?sslmode=require"),
            "postgresql://app@db1:5432/agents?sslmode=require");
  CHECK_STR(shown("postgres://app@db1/agents"), "postgres://app@db1/agents");
  CHECK_STR(shown("postgresql:///agents?host=/run/pg&password=s3cret&user=app"),
            "postgresql:///agents?host=/run/pg&user=app");
  CHECK_STR(shown("postgresql://u:p%40ss@h/db?password=x"), "postgresql://u@h/db");
  CHECK_STR(shown("postgresql://h/db?options=-csearch_path%3Dt#frag"),
            "postgresql://h/db?options=-csearch_path%3Dt#frag");
}

static void test_conninfo_drops_the_password_pair(void) {
  CHECK_STR(shown("host=db1 dbname=agents user=app password=s3cret"),
            "host=db1 dbname=agents user=app");
  CHECK_STR(shown("password = 'a b\\' c' host=db1"), "host=db1");
  CHECK_STR(shown("dbname=agents   password='x'"), "dbname=agents");
}

static void test_paths_are_kept(void) {
  CHECK_STR(shown("/var/lib/agent/store.db"), "/var/lib/agent/store.db");
  CHECK_STR(shown("sqlite:/tmp/a=b.db"), "sqlite:/tmp/a=b.db");
}

static void test_bad_arguments_and_short_buffers(void) {
  char buf[16];
  CHECK_EQ_INT(dexa_store_display_name(NULL, buf, sizeof buf), DEXA_E_INVALID_ARG);
  CHECK_EQ_INT(dexa_store_display_name("x", NULL, 4), DEXA_E_INVALID_ARG);
  CHECK_EQ_INT(dexa_store_display_name("x", buf, 0), DEXA_E_INVALID_ARG);
  CHECK_EQ_INT(dexa_store_display_name("postgresql://app:pw@a-long-host-name/db", buf, sizeof buf),
               DEXA_OK);
  CHECK_STR(buf, "postgresql://ap"); /* cut, never with the password */
}

int main(void) {
  RUN(test_uri_keeps_all_but_the_password);
  RUN(test_conninfo_drops_the_password_pair);
  RUN(test_paths_are_kept);
  RUN(test_bad_arguments_and_short_buffers);
  TEST_MAIN_END();
}
