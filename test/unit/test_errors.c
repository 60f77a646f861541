/* src/util/errors.c: every DEXA_E_* code of include/dexagents/errors.h has a
 * name and a text, classes follow the hundreds digit, unknown codes get the
 * documented fallbacks. The list below is checked against errors.h by
 * test/abi/errors.sh, so a new code cannot be left out here. */
#include "dexagents/dexagents.h"

#include "testing.h"

typedef struct code_case {
  int code;
  const char *name;
  int cls;
} code_case;

#define C(code, cls) {code, #code, cls}
static const code_case codes[] = {
  C(DEXA_OK, DEXA_CLASS_OK),
  C(DEXA_E_INVALID_ARG, DEXA_CLASS_USAGE),
  C(DEXA_E_STRUCT_SIZE, DEXA_CLASS_USAGE),
  C(DEXA_E_INVALID_JSON, DEXA_CLASS_USAGE),
  C(DEXA_E_UNKNOWN_STEP, DEXA_CLASS_USAGE),
  C(DEXA_E_UNKNOWN_RPC, DEXA_CLASS_USAGE),
  C(DEXA_E_NOT_FOUND, DEXA_CLASS_USAGE),
  C(DEXA_E_EMPTY_MESSAGE, DEXA_CLASS_USAGE),
  C(DEXA_E_BAD_STATE, DEXA_CLASS_USAGE),
  C(DEXA_E_UNKNOWN_KEY, DEXA_CLASS_USAGE),
  C(DEXA_E_INVALID_RESUME_TOKEN, DEXA_CLASS_USAGE),
  C(DEXA_E_STALE_REVISION, DEXA_CLASS_USAGE),
  C(DEXA_E_TOO_LARGE, DEXA_CLASS_USAGE),
  C(DEXA_E_REENTRANT, DEXA_CLASS_USAGE),
  C(DEXA_E_ALREADY_EXISTS, DEXA_CLASS_USAGE),
  C(DEXA_E_UNSUPPORTED, DEXA_CLASS_USAGE),
  C(DEXA_E_NOT_PENDING, DEXA_CLASS_USAGE),
  C(DEXA_E_SESSION_ENDED, DEXA_CLASS_USAGE),
  C(DEXA_E_TRANSIENT, DEXA_CLASS_TRANSIENT),
  C(DEXA_E_TIMEOUT, DEXA_CLASS_TRANSIENT),
  C(DEXA_E_BUSY, DEXA_CLASS_TRANSIENT),
  C(DEXA_E_IO, DEXA_CLASS_TRANSIENT),
  C(DEXA_E_RATE_LIMITED, DEXA_CLASS_TRANSIENT),
  C(DEXA_E_PERMANENT, DEXA_CLASS_PERMANENT),
  C(DEXA_E_MODEL, DEXA_CLASS_PERMANENT),
  C(DEXA_E_TOOL, DEXA_CLASS_PERMANENT),
  C(DEXA_E_STATE_LIMIT, DEXA_CLASS_PERMANENT),
  C(DEXA_E_CALLBACK_FAILED, DEXA_CLASS_PERMANENT),
  C(DEXA_E_CORRUPT, DEXA_CLASS_PERMANENT),
  C(DEXA_E_AUTH, DEXA_CLASS_PERMANENT),
  C(DEXA_E_NOMEM, DEXA_CLASS_FATAL),
  C(DEXA_E_INTERNAL, DEXA_CLASS_FATAL),
};
#undef C
#define NCODES (sizeof codes / sizeof codes[0])

static void test_every_code_has_its_name(void) {
  for (size_t i = 0; i < NCODES; i++) CHECK_STR(dexa_error_name(codes[i].code), codes[i].name);
}

static void test_every_code_has_a_distinct_text(void) {
  for (size_t i = 0; i < NCODES; i++) {
    const char *t = dexa_strerror(codes[i].code);
    CHECK(t != NULL);
    CHECK(t[0] != '\0');
    CHECK(strcmp(t, "unknown error") != 0);
    for (size_t j = 0; j < i; j++) CHECK(strcmp(t, dexa_strerror(codes[j].code)) != 0);
  }
}

static void test_codes_are_distinct_and_negative(void) {
  for (size_t i = 1; i < NCODES; i++) {
    CHECK(codes[i].code < 0);
    for (size_t j = 0; j < i; j++) CHECK(codes[i].code != codes[j].code);
  }
}

static void test_every_code_has_its_class(void) {
  for (size_t i = 0; i < NCODES; i++) {
    if (dexa_error_class(codes[i].code) != codes[i].cls)
      fprintf(stderr, "    %s: class %d\n", codes[i].name, dexa_error_class(codes[i].code));
    CHECK_EQ_INT(dexa_error_class(codes[i].code), codes[i].cls);
  }
}

static void test_class_follows_hundreds_digit(void) {
  CHECK_EQ_INT(dexa_error_class(-100), DEXA_CLASS_USAGE);
  CHECK_EQ_INT(dexa_error_class(-199), DEXA_CLASS_USAGE);
  CHECK_EQ_INT(dexa_error_class(-200), DEXA_CLASS_TRANSIENT);
  CHECK_EQ_INT(dexa_error_class(-299), DEXA_CLASS_TRANSIENT);
  CHECK_EQ_INT(dexa_error_class(-300), DEXA_CLASS_PERMANENT);
  CHECK_EQ_INT(dexa_error_class(-399), DEXA_CLASS_PERMANENT);
  CHECK_EQ_INT(dexa_error_class(-901), DEXA_CLASS_FATAL);
  CHECK_EQ_INT(dexa_error_class(-999), DEXA_CLASS_FATAL);
  CHECK_EQ_INT(dexa_error_class(0), DEXA_CLASS_OK);
}

static void test_unknown_codes_get_fallbacks(void) {
  const int unknown[] = {1, 42, -1, -99, -100, -118, -199, -299, -399, -500, -903, -1000,
                         INT32_MIN, INT32_MAX};
  for (size_t i = 0; i < sizeof unknown / sizeof unknown[0]; i++) {
    CHECK_STR(dexa_strerror(unknown[i]), "unknown error");
    CHECK_STR(dexa_error_name(unknown[i]), "DEXA_E_UNKNOWN");
  }
}

static void test_unknown_code_class_is_never_ok(void) {
  /* a host loop must never treat a code it does not know as success */
  const int unknown[] = {1, -1, -50, -400, -500, -1000, INT32_MIN, INT32_MAX};
  for (size_t i = 0; i < sizeof unknown / sizeof unknown[0]; i++)
    CHECK(dexa_error_class(unknown[i]) != DEXA_CLASS_OK);
}

static void test_texts_are_static(void) {
  /* the same pointer every time: static text, nothing allocated */
  CHECK(dexa_strerror(DEXA_E_IO) == dexa_strerror(DEXA_E_IO));
  CHECK(dexa_strerror(12345) == dexa_strerror(54321));
  CHECK(dexa_error_name(DEXA_E_IO) == dexa_error_name(DEXA_E_IO));
}

int main(void) {
  RUN(test_every_code_has_its_name);
  RUN(test_every_code_has_a_distinct_text);
  RUN(test_codes_are_distinct_and_negative);
  RUN(test_every_code_has_its_class);
  RUN(test_class_follows_hundreds_digit);
  RUN(test_unknown_codes_get_fallbacks);
  RUN(test_unknown_code_class_is_never_ok);
  RUN(test_texts_are_static);
  TEST_MAIN_END();
}
