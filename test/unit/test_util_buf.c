/* src/util/buf.c: growth, JSON string escaping (control characters,
 * invalid UTF-8 to U+FFFD), the sticky oom flag, steal and reset. */
#include "util/buf.h"
#include "util/json_span.h"

#include "testing.h"

#include <stdint.h>

/* Escapes n bytes of s and compares the literal with want. */
static int escapes_to(const char *s, size_t n, const char *want) {
  dexa__buf b;
  dexa__buf_init(&b);
  dexa__buf_json_str(&b, s, n);
  const char *got = dexa__buf_cstr(&b);
  int ok = got && strcmp(got, want) == 0 && dexa__json_validate(got, strlen(got)) == 0;
  if (!ok) fprintf(stderr, "    escaped: %s\n    expected: %s\n", got ? got : "(null)", want);
  dexa__buf_free(&b);
  return ok;
}

#define ESC(lit, want) escapes_to(lit, sizeof lit - 1, want)

static void test_empty_buffer_reads_as_empty_string(void) {
  dexa__buf b;
  dexa__buf_init(&b);
  CHECK_STR(dexa__buf_cstr(&b), "");
  CHECK_EQ_INT(b.len, 0);
  size_t len = 99;
  char *p = dexa__buf_steal(&b, &len);
  CHECK(p != NULL);
  CHECK_EQ_INT(len, 0);
  CHECK_STR(p, "");
  free(p);
  dexa__buf_free(&b);
}

static void test_reserve_alone_reads_as_empty_string(void) {
  dexa__buf b;
  dexa__buf_init(&b);
  CHECK_EQ_INT(dexa__buf_reserve(&b, 100), 0);
  CHECK(b.cap >= 101);
  CHECK_STR(dexa__buf_cstr(&b), "");
  char *p = dexa__buf_steal(&b, NULL);
  CHECK(p != NULL);
  CHECK_STR(p, "");
  free(p);
}

static void test_append_grows_and_stays_terminated(void) {
  dexa__buf b;
  dexa__buf_init(&b);
  for (int i = 0; i < 10000; i++) dexa__buf_putc(&b, (char)('a' + i % 26));
  CHECK_EQ_INT(b.len, 10000);
  CHECK(b.cap > b.len);
  CHECK_EQ_INT(b.data[b.len], '\0');
  CHECK_EQ_INT(b.data[9999], 'a' + 9999 % 26);
  CHECK_EQ_INT(strlen(dexa__buf_cstr(&b)), 10000);
  CHECK(!b.oom);
  dexa__buf_free(&b);
  CHECK(b.data == NULL);
}

static void test_append_embedded_nul_and_zero_length(void) {
  dexa__buf b;
  dexa__buf_init(&b);
  dexa__buf_append(&b, "a\0b", 3);
  dexa__buf_append(&b, NULL, 0);
  CHECK_EQ_INT(b.len, 3);
  CHECK(memcmp(b.data, "a\0b", 4) == 0);
  dexa__buf_free(&b);
}

static void test_puts_and_printf(void) {
  dexa__buf b;
  dexa__buf_init(&b);
  dexa__buf_puts(&b, "x=");
  dexa__buf_printf(&b, "%d,%s", 42, "y");
  CHECK_STR(dexa__buf_cstr(&b), "x=42,y");
  dexa__buf_free(&b);
}

static void test_printf_longer_than_stack_buffer(void) {
  char big[1000];
  memset(big, 'z', sizeof big - 1);
  big[sizeof big - 1] = '\0';
  dexa__buf b;
  dexa__buf_init(&b);
  dexa__buf_puts(&b, "<");
  dexa__buf_printf(&b, "%s|%s", big, big);
  dexa__buf_puts(&b, ">");
  CHECK_EQ_INT(b.len, 1 + 999 + 1 + 999 + 1);
  CHECK_EQ_INT(b.data[1000], '|');
  CHECK_EQ_INT(b.data[b.len - 1], '>');
  CHECK_EQ_INT(b.data[b.len], '\0');
  dexa__buf_free(&b);
}

static void test_json_i64_extremes(void) {
  dexa__buf b;
  dexa__buf_init(&b);
  dexa__buf_json_i64(&b, INT64_MIN);
  dexa__buf_putc(&b, ' ');
  dexa__buf_json_i64(&b, INT64_MAX);
  dexa__buf_putc(&b, ' ');
  dexa__buf_json_i64(&b, 0);
  CHECK_STR(dexa__buf_cstr(&b), "-9223372036854775808 9223372036854775807 0");
  dexa__buf_free(&b);
}

static void test_json_str_plain_ascii_unchanged(void) {
  CHECK(ESC("hello, world", "\"hello, world\""));
  CHECK(ESC("", "\"\""));
  CHECK(ESC("/ stays", "\"/ stays\""));
}

static void test_json_str_escapes_quote_and_backslash(void) {
  CHECK(ESC("a\"b\\c", "\"a\\\"b\\\\c\""));
}

static void test_json_str_escapes_control_chars(void) {
  CHECK(ESC("\n\r\t", "\"\\n\\r\\t\""));
  CHECK(ESC("\x01\x1f\x7f", "\"\\u0001\\u001f\\u007f\""));
  CHECK(ESC("\b\f", "\"\\u0008\\u000c\""));
  CHECK(escapes_to("a\0b", 3, "\"a\\u0000b\""));
}

static void test_json_str_keeps_valid_utf8(void) {
  CHECK(ESC("\xC3\xA9", "\"\xC3\xA9\""));                 /* é, 2 bytes */
  CHECK(ESC("\xE2\x82\xAC", "\"\xE2\x82\xAC\""));         /* €, 3 bytes */
  CHECK(ESC("\xF0\x9F\x98\x80", "\"\xF0\x9F\x98\x80\"")); /* emoji, 4 bytes */
  CHECK(ESC("\xEF\xBF\xBF", "\"\xEF\xBF\xBF\""));         /* U+FFFF */
  CHECK(ESC("\xF4\x8F\xBF\xBF", "\"\xF4\x8F\xBF\xBF\"")); /* U+10FFFF */
}

#define FFFD "\xEF\xBF\xBD"

static void test_json_str_invalid_utf8_becomes_replacement(void) {
  CHECK(ESC("\x80", "\"" FFFD "\""));                       /* lone continuation */
  CHECK(ESC("a\xFFz", "\"a" FFFD "z\""));                   /* never valid */
  CHECK(ESC("\xC0\xAF", "\"" FFFD FFFD "\""));              /* overlong 2-byte */
  CHECK(ESC("\xE0\x80\xAF", "\"" FFFD FFFD FFFD "\""));     /* overlong 3-byte */
  CHECK(ESC("\xF0\x80\x80\xAF", "\"" FFFD FFFD FFFD FFFD "\"")); /* overlong 4-byte */
  CHECK(ESC("\xED\xA0\x80", "\"" FFFD FFFD FFFD "\""));     /* surrogate D800 */
  CHECK(ESC("\xF4\x90\x80\x80", "\"" FFFD FFFD FFFD FFFD "\"")); /* > U+10FFFF */
  CHECK(ESC("\xF5\x80\x80\x80", "\"" FFFD FFFD FFFD FFFD "\""));
}

static void test_json_str_truncated_sequence_at_end(void) {
  CHECK(ESC("ok\xE2\x82", "\"ok" FFFD FFFD "\""));
  CHECK(ESC("\xF0\x9F\x98", "\"" FFFD FFFD FFFD "\""));
  CHECK(ESC("\xC3", "\"" FFFD "\""));
  /* a truncated sequence followed by ASCII: the ASCII is kept */
  CHECK(ESC("\xC3x", "\"" FFFD "x\""));
}

static void test_json_str_long_mixed_input(void) {
  dexa__buf in, b;
  dexa__buf_init(&in);
  dexa__buf_init(&b);
  for (int i = 0; i < 5000; i++) dexa__buf_append(&in, "a\"\n\xC3\xA9\xFF", 6);
  dexa__buf_json_str(&b, in.data, in.len);
  const char *out = dexa__buf_cstr(&b);
  CHECK(out != NULL);
  CHECK_EQ_INT(b.len, 2 + 5000 * (1 + 2 + 2 + 2 + 3));
  CHECK_EQ_INT(dexa__json_validate(out, b.len), 0);
  dexa__buf_free(&in);
  dexa__buf_free(&b);
}

static void test_json_cstr_null_is_null(void) {
  dexa__buf b;
  dexa__buf_init(&b);
  dexa__buf_json_cstr(&b, NULL);
  dexa__buf_putc(&b, ',');
  dexa__buf_json_cstr(&b, "x");
  CHECK_STR(dexa__buf_cstr(&b), "null,\"x\"");
  dexa__buf_free(&b);
}

static void test_oom_is_sticky_and_reset_clears_it(void) {
  dexa__buf b;
  dexa__buf_init(&b);
  dexa__buf_puts(&b, "before");
  /* a size that cannot be reserved fails without allocating */
  CHECK_EQ_INT(dexa__buf_reserve(&b, SIZE_MAX - 8), -1);
  CHECK(b.oom);
  dexa__buf_puts(&b, "after");
  dexa__buf_printf(&b, "%d", 1);
  dexa__buf_json_cstr(&b, "x");
  CHECK_EQ_INT(b.len, 6);
  CHECK(dexa__buf_cstr(&b) == NULL);
  CHECK_EQ_INT(dexa__buf_reserve(&b, 1), -1);
  dexa__buf_reset(&b);
  CHECK(!b.oom);
  dexa__buf_puts(&b, "again");
  CHECK_STR(dexa__buf_cstr(&b), "again");
  dexa__buf_free(&b);
}

/* A failed steal hands nothing over and frees what was built: callers
 * return at once, so nothing may be left to free. */
static void test_failed_steal_frees_the_buffer(void) {
  dexa__buf b;
  dexa__buf_init(&b);
  dexa__buf_puts(&b, "built so far");
  CHECK_EQ_INT(dexa__buf_reserve(&b, SIZE_MAX - 8), -1);
  size_t len = 7;
  CHECK(dexa__buf_steal(&b, &len) == NULL);
  CHECK(b.data == NULL && b.len == 0 && b.cap == 0 && !b.oom);
  CHECK_EQ_INT(len, 7); /* untouched */
}

static void test_append_huge_length_sets_oom(void) {
  dexa__buf b;
  dexa__buf_init(&b);
  dexa__buf_append(&b, "x", SIZE_MAX / 2 + 1); /* refused before any allocation */
  CHECK(b.oom);
  CHECK_EQ_INT(b.len, 0);
  dexa__buf_free(&b);
}

static void test_steal_hands_over_and_resets(void) {
  dexa__buf b;
  dexa__buf_init(&b);
  dexa__buf_puts(&b, "{\"a\":1}");
  size_t len = 0;
  char *p = dexa__buf_steal(&b, &len);
  CHECK(p != NULL);
  CHECK_EQ_INT(len, 7);
  CHECK_STR(p, "{\"a\":1}");
  CHECK(b.data == NULL);
  CHECK_EQ_INT(b.len, 0);
  CHECK_EQ_INT(b.cap, 0);
  free(p);
  dexa__buf_puts(&b, "reuse");
  CHECK_STR(dexa__buf_cstr(&b), "reuse");
  dexa__buf_free(&b);
}

static void test_reset_keeps_capacity(void) {
  dexa__buf b;
  dexa__buf_init(&b);
  dexa__buf_puts(&b, "some text");
  size_t cap = b.cap;
  dexa__buf_reset(&b);
  CHECK_EQ_INT(b.len, 0);
  CHECK_EQ_INT(b.cap, cap);
  CHECK_STR(dexa__buf_cstr(&b), "");
  dexa__buf_free(&b);
}

int main(void) {
  RUN(test_empty_buffer_reads_as_empty_string);
  RUN(test_reserve_alone_reads_as_empty_string);
  RUN(test_append_grows_and_stays_terminated);
  RUN(test_append_embedded_nul_and_zero_length);
  RUN(test_puts_and_printf);
  RUN(test_printf_longer_than_stack_buffer);
  RUN(test_json_i64_extremes);
  RUN(test_json_str_plain_ascii_unchanged);
  RUN(test_json_str_escapes_quote_and_backslash);
  RUN(test_json_str_escapes_control_chars);
  RUN(test_json_str_keeps_valid_utf8);
  RUN(test_json_str_invalid_utf8_becomes_replacement);
  RUN(test_json_str_truncated_sequence_at_end);
  RUN(test_json_str_long_mixed_input);
  RUN(test_json_cstr_null_is_null);
  RUN(test_oom_is_sticky_and_reset_clears_it);
  RUN(test_failed_steal_frees_the_buffer);
  RUN(test_append_huge_length_sets_oom);
  RUN(test_steal_hands_over_and_resets);
  RUN(test_reset_keeps_capacity);
  TEST_MAIN_END();
}
