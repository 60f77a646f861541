/* src/util/json_span.c: skip, validate, get, get_i64 and trim, including the
 * nesting cap that stops nesting bombs. */
#include "util/json_span.h"

#include "testing.h"

#include <stdint.h>

static int valid(const char *s) { return dexa__json_validate(s, strlen(s)) == 0; }

static void test_validate_accepts_every_kind_of_value(void) {
  CHECK(valid("null"));
  CHECK(valid("true"));
  CHECK(valid("false"));
  CHECK(valid("0"));
  CHECK(valid("\"\""));
  CHECK(valid("{}"));
  CHECK(valid("[]"));
  CHECK(valid("{\"a\":[1,2,{\"b\":null}],\"c\":\"d\"}"));
  CHECK(valid(" \t\r\n [ 1 , \"x\" ] \n"));
}

static void test_validate_rejects_empty_and_trailing_text(void) {
  CHECK(!valid(""));
  CHECK(!valid("   "));
  CHECK(!valid("1 2"));
  CHECK(!valid("{} {}"));
  CHECK(!valid("[1,]"));
  CHECK(!valid("{\"a\":1,}"));
  CHECK(!valid("[1 2]"));
  CHECK(!valid("{\"a\" 1}"));
  CHECK(!valid("{a:1}"));
  CHECK(!valid("{1:2}"));
  CHECK(!valid("["));
  CHECK(!valid("{\"a\":"));
  CHECK(!valid("]"));
  CHECK(dexa__json_validate(NULL, 0) != 0);
}

static void test_validate_rejects_bad_literals(void) {
  CHECK(!valid("nul"));
  CHECK(!valid("nulll"));
  CHECK(!valid("True"));
  CHECK(!valid("tru"));
  CHECK(!valid("fals"));
  CHECK(!valid("falsey"));
  CHECK(!valid("NaN"));
  CHECK(!valid("Infinity"));
  CHECK(!valid("undefined"));
  CHECK(!valid("[nul]"));
}

static void test_validate_numbers(void) {
  CHECK(valid("-0"));
  CHECK(valid("12"));
  CHECK(valid("-12.5"));
  CHECK(valid("1e10"));
  CHECK(valid("1E+10"));
  CHECK(valid("1.5e-3"));
  CHECK(valid("123456789012345678901234567890"));
  CHECK(!valid("01"));
  CHECK(!valid("+1"));
  CHECK(!valid("-"));
  CHECK(!valid("1."));
  CHECK(!valid(".5"));
  CHECK(!valid("1e"));
  CHECK(!valid("1e+"));
  CHECK(!valid("0x10"));
  CHECK(!valid("--1"));
  CHECK(!valid("1.2.3"));
}

static void test_validate_string_escapes(void) {
  CHECK(valid("\"\\\" \\\\ \\/ \\b \\f \\n \\r \\t\""));
  CHECK(valid("\"\\u00e9\\uD83D\\uDE00\\uABCD\""));
  CHECK(!valid("\"\\x41\""));
  CHECK(!valid("\"\\u12\""));
  CHECK(!valid("\"\\u12G4\""));
  CHECK(!valid("\"\\"));
  CHECK(!valid("\"\\u"));
  CHECK(!valid("\"abc"));
  CHECK(!valid("\"a\nb\""));   /* raw control character */
  CHECK(!valid("\"a\tb\""));
  CHECK(dexa__json_validate("\"a\0b\"", 5) != 0); /* escape then NUL */
  CHECK(dexa__json_validate("\"\\\0\"", 4) != 0);
  CHECK(valid("\"\xC3\xA9\"")); /* UTF-8 bytes pass as they are */
}

/* depth nested arrays: "[[[...]]]" */
static char *nested(int depth, char open, char close) {
  char *s = malloc((size_t)depth * 2 + 1);
  if (!s) return NULL;
  for (int i = 0; i < depth; i++) {
    s[i] = open;
    s[2 * depth - 1 - i] = close;
  }
  s[2 * depth] = '\0';
  return s;
}

static void test_nesting_up_to_the_cap_is_accepted(void) {
  char *s = nested(DEXA__JSON_MAX_DEPTH, '[', ']');
  CHECK(s != NULL);
  int ok = valid(s);
  free(s);
  CHECK(ok);
}

static void test_nesting_bomb_is_rejected(void) {
  char *s = nested(DEXA__JSON_MAX_DEPTH + 1, '[', ']');
  CHECK(s != NULL);
  int ok = valid(s);
  free(s);
  CHECK(!ok);
  /* a deep bomb fails without blowing the stack */
  s = nested(1000000, '[', ']');
  CHECK(s != NULL);
  ok = valid(s);
  free(s);
  CHECK(!ok);
}

static void test_nesting_bomb_of_objects_is_rejected(void) {
  const int depth = DEXA__JSON_MAX_DEPTH + 1;
  char *s = malloc((size_t)depth * 6 + 8);
  CHECK(s != NULL);
  size_t p = 0;
  for (int i = 0; i < depth; i++) p += (size_t)sprintf(s + p, "{\"a\":");
  p += (size_t)sprintf(s + p, "1");
  for (int i = 0; i < depth; i++) s[p++] = '}';
  s[p] = '\0';
  int ok = valid(s);
  free(s);
  CHECK(!ok);
}

static void test_skip_moves_past_one_value(void) {
  const char *s = "  {\"a\":[1,2]} , 7";
  size_t pos = 0;
  CHECK_EQ_INT(dexa__json_skip(s, strlen(s), &pos), 0);
  CHECK_EQ_INT(pos, 13);
  CHECK_EQ_INT(s[pos], ' ');
  pos = 16;
  CHECK_EQ_INT(dexa__json_skip(s, strlen(s), &pos), 0);
  CHECK_EQ_INT(pos, strlen(s));
  pos = 0;
  CHECK(dexa__json_skip(NULL, 3, &pos) != 0);
}

static void test_skip_respects_length_not_nul(void) {
  /* the length ends the text: "tr" is not "true", "[1" is not "[1]" */
  size_t pos = 0;
  CHECK(dexa__json_skip("true", 2, &pos) != 0);
  pos = 0;
  CHECK(dexa__json_skip("[1]", 2, &pos) != 0);
  pos = 0;
  CHECK(dexa__json_skip("\"ab\"", 3, &pos) != 0);
  pos = 0;
  CHECK(dexa__json_skip("12345", 3, &pos) == 0);
  CHECK_EQ_INT(pos, 3);
}

static void test_get_finds_top_level_members(void) {
  const char *s = "{\"a\":1, \"b\" : {\"a\":2} ,\"c\":\"x,}\",\"d\":[1,{\"e\":3}]}";
  const char *v;
  size_t vl;
  CHECK_EQ_INT(dexa__json_get(s, strlen(s), "b", &v, &vl), 0);
  CHECK_EQ_INT(vl, 7);
  CHECK(memcmp(v, "{\"a\":2}", vl) == 0);
  CHECK_EQ_INT(dexa__json_get(s, strlen(s), "c", &v, &vl), 0);
  CHECK(vl == 5 && memcmp(v, "\"x,}\"", 5) == 0);
  CHECK_EQ_INT(dexa__json_get(s, strlen(s), "d", &v, &vl), 0);
  CHECK(vl == 11 && memcmp(v, "[1,{\"e\":3}]", vl) == 0);
  /* nested keys are not top-level members */
  CHECK_EQ_INT(dexa__json_get(s, strlen(s), "e", &v, &vl), 1);
  CHECK_EQ_INT(dexa__json_get(s, strlen(s), "", &v, &vl), 1);
}

static void test_get_first_of_duplicate_keys(void) {
  const char *s = "{\"k\":1,\"k\":2}";
  const char *v;
  size_t vl;
  CHECK_EQ_INT(dexa__json_get(s, strlen(s), "k", &v, &vl), 0);
  CHECK(vl == 1 && v[0] == '1');
}

static void test_get_absent_and_not_an_object(void) {
  const char *v;
  size_t vl;
  CHECK_EQ_INT(dexa__json_get("{}", 2, "a", &v, &vl), 1);
  CHECK_EQ_INT(dexa__json_get(" { } ", 5, "a", &v, &vl), 1);
  CHECK_EQ_INT(dexa__json_get("[1]", 3, "a", &v, &vl), -1);
  CHECK_EQ_INT(dexa__json_get("\"a\"", 3, "a", &v, &vl), -1);
  CHECK_EQ_INT(dexa__json_get("", 0, "a", &v, &vl), -1);
  CHECK_EQ_INT(dexa__json_get("{\"a\"", 4, "a", &v, &vl), -1);
  CHECK_EQ_INT(dexa__json_get("{\"b\":}", 6, "a", &v, &vl), -1);
  CHECK_EQ_INT(dexa__json_get("{\"b\":1 \"a\":2}", 13, "a", &v, &vl), -1);
  CHECK_EQ_INT(dexa__json_get("{\"b\":1", 6, "a", &v, &vl), -1);
}

static void test_get_key_prefix_does_not_match(void) {
  const char *s = "{\"ab\":1,\"a\":2}";
  const char *v;
  size_t vl;
  CHECK_EQ_INT(dexa__json_get(s, strlen(s), "a", &v, &vl), 0);
  CHECK(vl == 1 && v[0] == '2');
}

static void test_get_i64_reads_integers(void) {
  const char *s = "{\"n\":-42,\"big\":9223372036854775807,\"min\":-9223372036854775808,"
                  "\"f\":1.5,\"s\":\"7\",\"e\":1e3,\"z\":0,\"null\":null}";
  size_t n = strlen(s);
  int64_t x = 0;
  CHECK_EQ_INT(dexa__json_get_i64(s, n, "n", &x), 0);
  CHECK_EQ_INT(x, -42);
  CHECK_EQ_INT(dexa__json_get_i64(s, n, "big", &x), 0);
  CHECK(x == INT64_MAX);
  CHECK_EQ_INT(dexa__json_get_i64(s, n, "min", &x), 0);
  CHECK(x == INT64_MIN);
  CHECK_EQ_INT(dexa__json_get_i64(s, n, "z", &x), 0);
  CHECK_EQ_INT(x, 0);
  x = 5;
  CHECK_EQ_INT(dexa__json_get_i64(s, n, "f", &x), -1);
  CHECK_EQ_INT(dexa__json_get_i64(s, n, "s", &x), -1);
  CHECK_EQ_INT(dexa__json_get_i64(s, n, "e", &x), -1);
  CHECK_EQ_INT(dexa__json_get_i64(s, n, "null", &x), -1);
  CHECK_EQ_INT(dexa__json_get_i64(s, n, "absent", &x), 1);
  CHECK_EQ_INT(x, 5); /* untouched on failure */
  CHECK_EQ_INT(dexa__json_get_i64("[1]", 3, "n", &x), -1);
}

static void test_get_i64_rejects_out_of_range(void) {
  const char *s = "{\"over\":9223372036854775808,\"under\":-9223372036854775809,"
                  "\"long\":123456789012345678901234}";
  size_t n = strlen(s);
  int64_t x = 5;
  CHECK_EQ_INT(dexa__json_get_i64(s, n, "long", &x), -1);
  CHECK_EQ_INT(dexa__json_get_i64(s, n, "over", &x), -1);
  CHECK_EQ_INT(dexa__json_get_i64(s, n, "under", &x), -1);
  CHECK_EQ_INT(x, 5);
}

static void test_trim(void) {
  const char *s = " \t\r\n{\"a\":1}\n ";
  size_t n = strlen(s);
  dexa__json_trim(&s, &n);
  CHECK_EQ_INT(n, 7);
  CHECK(memcmp(s, "{\"a\":1}", 7) == 0);
  const char *blank = " \n\t ";
  n = strlen(blank);
  dexa__json_trim(&blank, &n);
  CHECK_EQ_INT(n, 0);
  const char *none = "x";
  n = 0;
  dexa__json_trim(&none, &n);
  CHECK_EQ_INT(n, 0);
}

int main(void) {
  RUN(test_validate_accepts_every_kind_of_value);
  RUN(test_validate_rejects_empty_and_trailing_text);
  RUN(test_validate_rejects_bad_literals);
  RUN(test_validate_numbers);
  RUN(test_validate_string_escapes);
  RUN(test_nesting_up_to_the_cap_is_accepted);
  RUN(test_nesting_bomb_is_rejected);
  RUN(test_nesting_bomb_of_objects_is_rejected);
  RUN(test_skip_moves_past_one_value);
  RUN(test_skip_respects_length_not_nul);
  RUN(test_get_finds_top_level_members);
  RUN(test_get_first_of_duplicate_keys);
  RUN(test_get_absent_and_not_an_object);
  RUN(test_get_key_prefix_does_not_match);
  RUN(test_get_i64_reads_integers);
  RUN(test_get_i64_rejects_out_of_range);
  RUN(test_trim);
  TEST_MAIN_END();
}
