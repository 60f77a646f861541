/* Minimal test harness: each test binary runs its tests with RUN(fn) and
 * ends with TEST_MAIN_END, printing "N passed, N failed" (and skipped).
 * test/run sums the binaries' lines into the final line of `make check`. */
#ifndef DEXA_TESTING_H
#define DEXA_TESTING_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int t_passed, t_failed, t_skipped, t_current_failed, t_current_skipped;

#define CHECK(cond)                                                                   \
  do {                                                                                \
    if (!(cond)) {                                                                    \
      fprintf(stderr, "    %s:%d: CHECK(%s) failed\n", __FILE__, __LINE__, #cond);    \
      t_current_failed = 1;                                                           \
      return;                                                                         \
    }                                                                                 \
  } while (0)

#define CHECK_EQ_INT(a, b)                                                             \
  do {                                                                                 \
    long long _a = (long long)(a), _b = (long long)(b);                                \
    if (_a != _b) {                                                                    \
      fprintf(stderr, "    %s:%d: %s == %lld, expected %s == %lld\n", __FILE__, __LINE__, \
              #a, _a, #b, _b);                                                         \
      t_current_failed = 1;                                                            \
      return;                                                                          \
    }                                                                                  \
  } while (0)

#define CHECK_STR(a, b)                                                                \
  do {                                                                                 \
    const char *_a = (a), *_b = (b);                                                   \
    if (!_a || !_b || strcmp(_a, _b) != 0) {                                           \
      fprintf(stderr, "    %s:%d: %s == \"%s\", expected \"%s\"\n", __FILE__, __LINE__, \
              #a, _a ? _a : "(null)", _b ? _b : "(null)");                             \
      t_current_failed = 1;                                                            \
      return;                                                                          \
    }                                                                                  \
  } while (0)

#define CHECK_CONTAINS(hay, needle)                                                    \
  do {                                                                                 \
    const char *_h = (hay), *_n = (needle);                                            \
    if (!_h || !strstr(_h, _n)) {                                                      \
      fprintf(stderr, "    %s:%d: \"%.400s\" does not contain \"%s\"\n", __FILE__,     \
              __LINE__, _h ? _h : "(null)", _n);                                       \
      t_current_failed = 1;                                                            \
      return;                                                                          \
    }                                                                                  \
  } while (0)

#define SKIP(why)                                                                      \
  do {                                                                                 \
    fprintf(stderr, "    skipped: %s\n", why);                                         \
    t_current_skipped = 1;                                                             \
    return;                                                                            \
  } while (0)

#define RUN(fn)                                                                        \
  do {                                                                                 \
    t_current_failed = 0;                                                              \
    t_current_skipped = 0;                                                             \
    fn();                                                                              \
    if (t_current_skipped) {                                                           \
      t_skipped++;                                                                     \
      printf("skip %s\n", #fn);                                                        \
    } else if (t_current_failed) {                                                     \
      t_failed++;                                                                      \
      printf("FAIL %s\n", #fn);                                                        \
    } else {                                                                           \
      t_passed++;                                                                      \
      printf("ok   %s\n", #fn);                                                        \
    }                                                                                  \
    fflush(stdout);                                                                    \
  } while (0)

#define TEST_MAIN_END()                                                                \
  do {                                                                                 \
    if (t_skipped)                                                                     \
      printf("%d passed, %d failed, %d skipped\n", t_passed, t_failed, t_skipped);     \
    else                                                                               \
      printf("%d passed, %d failed\n", t_passed, t_failed);                            \
    return t_failed ? 1 : 0;                                                           \
  } while (0)

#endif
