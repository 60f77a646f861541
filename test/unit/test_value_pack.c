/* src/store/value_pack.c: packed values round-trip byte for byte, pack the
 * library's own JSON to well under its size, leave what they cannot shrink
 * alone, and refuse malformed input without reading or writing outside
 * their buffers (run under ASan by `make check-asan`). */
#include "store/value_pack.h"

#include "testing.h"

#include <stdint.h>

#include "dexagents/errors.h"

#define DICT_V1_LEN 2798
#define DICT_V1_FNV 0x5c9835f1u

/* Packs v and unpacks it again; returns the packed length (0: left as is)
 * or -1 when the round trip did not give v back. */
static long round_trip(const char *v, size_t n) {
  unsigned char *packed = malloc(dexa__value_pack_bound(n));
  if (!packed) return -1;
  size_t pn = dexa__value_pack(v, n, packed);
  long result = (long)pn;
  if (pn) {
    size_t len = 0;
    char *out = malloc(n + DEXA__UNPACK_SLACK);
    if (!out || !dexa__value_is_packed(packed, pn) ||
        dexa__value_unpacked_len(packed, pn, &len) != DEXA_OK || len != n ||
        dexa__value_unpack(packed, pn, out, len) != DEXA_OK || memcmp(out, v, n) != 0) {
      result = -1;
    }
    free(out);
  }
  free(packed);
  return result;
}

#define LIT(s) s, sizeof s - 1

static uint32_t next_random(uint32_t *state) {
  *state = *state * 1664525u + 1013904223u;
  return *state >> 8;
}

static void test_library_json_packs_to_under_two_thirds(void) {
  static const char *values[] = {
      "{\"type\":\"tool_call_finished\",\"at\":1796058801284,\"call_id\":\"call_read_a_1\","
      "\"name\":\"read_a\",\"status\":\"ok\",\"seq\":4}",
      "{\"type\":\"queue_changed\",\"at\":1796058801274,\"action\":\"added\",\"message\":{"
      "\"id\":\"m1\",\"text\":\"hello\",\"plan_mode\":false,\"steered\":false,\"at\":"
      "1796058801274}}",
      "{\"seq\":2,\"turn\":1,\"round\":1,\"role\":\"model\",\"model\":\"mock/dex\",\"at\":"
      "1796058801279,\"tool_calls\":[{\"call_id\":\"call_x\",\"name\":\"lookup\",\"arguments\":"
      "{\"key\":\"k1\"}}],\"item\":{\"type\":\"function_call\",\"call_id\":\"call_x\",\"name\":"
      "\"lookup\",\"arguments\":\"{\\\"key\\\":\\\"k1\\\"}\"}}",
      "{\"turn\":3,\"status\":\"idle\",\"mode\":\"chat\",\"since_ms\":1796058802548}",
  };
  for (size_t i = 0; i < sizeof values / sizeof values[0]; i++) {
    size_t n = strlen(values[i]);
    long packed = round_trip(values[i], n);
    if (packed <= 0 || (size_t)packed * 3 > n * 2) {
      fprintf(stderr, "    value %zu: %zu bytes packed to %ld\n", i, n, packed);
    }
    CHECK(packed > 0);
    CHECK((size_t)packed * 3 <= n * 2);
  }
}

static void test_short_and_incompressible_values_stay_as_they_are(void) {
  CHECK_EQ_INT(round_trip(LIT("{\"a\":1}")), 0);
  char noise[600];
  uint32_t state = 7;
  for (size_t i = 0; i < sizeof noise; i++) noise[i] = (char)(next_random(&state) & 0xFF);
  CHECK_EQ_INT(round_trip(noise, sizeof noise), 0);
  /* Past the probe: 8 KB of random letters are given up on after 1 KB. */
  static char letters[8192];
  for (size_t i = 0; i < sizeof letters; i++) letters[i] = (char)('a' + next_random(&state) % 26);
  CHECK_EQ_INT(round_trip(letters, sizeof letters), 0);
  /* Nothing the packer leaves alone can be mistaken for a packed value:
   * JSON text never starts with the tag byte. */
  CHECK(!dexa__value_is_packed("{\"a\":1}", 7));
  CHECK(!dexa__value_is_packed("\x01", 1));
}

static void test_repeats_overlapping_themselves_round_trip(void) {
  /* A run of one byte packs as a match at distance 1 longer than itself,
   * copied forwards; long lengths take extra length bytes. */
  static char run[5000];
  memset(run, 'a', sizeof run);
  long packed = round_trip(run, sizeof run);
  CHECK(packed > 0 && packed < 64);
  static char pattern[3000];
  for (size_t i = 0; i < sizeof pattern; i++) pattern[i] = "abcdefghijklmnopq"[i % 17];
  CHECK(round_trip(pattern, sizeof pattern) > 0);
}

static void test_long_values_round_trip_past_the_window(void) {
  /* Over 64 KB: matches further back than the 2-byte distance cannot be
   * used, and the dictionary falls out of reach. */
  size_t n = 200000;
  char *v = malloc(n);
  CHECK(v != NULL);
  uint32_t state = 11;
  for (size_t i = 0; i < n; i++) {
    v[i] = (i / 64) % 3 == 0 ? (char)('a' + next_random(&state) % 26) : "\"call_id\":\"x\","[i % 15];
  }
  long packed = round_trip(v, n);
  free(v);
  CHECK(packed > 0);
}

static void test_random_json_like_text_round_trips(void) {
  static const char *words[] = {"{\"type\":\"", "turn_started", "\",\"at\":", "17960588",
                                "\"call_id\":\"call_", "x", "\\\"", "}", ",", "\u00e9"};
  uint32_t state = 3;
  char v[2000];
  for (int round = 0; round < 300; round++) {
    size_t n = 0, want = 24 + next_random(&state) % 1900;
    while (n < want) {
      const char *w = words[next_random(&state) % (sizeof words / sizeof words[0])];
      size_t wn = strlen(w);
      if (n + wn > want) break;
      memcpy(v + n, w, wn);
      n += wn;
    }
    CHECK(round_trip(v, n) >= 0);
  }
}

/* A packed value built by hand: a match that starts in the dictionary's
 * last bytes and runs on into the bytes just unpacked. */
static void test_a_match_may_run_from_the_dictionary_into_the_value(void) {
  size_t d = dexa__pack_dict_v1_len;
  const char *tail = dexa__pack_dict_v1 + d - 2;
  /* Literal "xyz", then 6 bytes from 5 back: the dictionary's last 2 bytes
   * and then "xyz" and the first of those bytes again. */
  unsigned char p[] = {DEXA__PACK_TAG_V1, 9, (3 << 4) | (6 - 4), 'x', 'y', 'z', 5, 0};
  char out[9 + DEXA__UNPACK_SLACK];
  CHECK_EQ_INT(dexa__value_unpack(p, sizeof p, out, 9), DEXA_OK);
  char want[9] = {'x', 'y', 'z', tail[0], tail[1], 'x', 'y', 'z', tail[0]};
  CHECK(memcmp(out, want, 9) == 0);
}

static void test_malformed_values_are_refused(void) {
  const char *v =
      "{\"type\":\"turn_started\",\"at\":1796058801274,\"turn\":1,\"mode\":\"chat\","
      "\"message_ids\":[\"m1\"]}";
  size_t n = strlen(v);
  unsigned char packed[256];
  size_t pn = dexa__value_pack(v, n, packed);
  CHECK(pn > 0);
  char *out = malloc(n + DEXA__UNPACK_SLACK);
  CHECK(out != NULL);
  /* Every truncation; a wrong length; a distance before the dictionary. */
  for (size_t cut = 0; cut < pn; cut++) {
    size_t len = 0;
    if (dexa__value_unpacked_len(packed, cut, &len) == DEXA_OK && len == n) {
      CHECK_EQ_INT(dexa__value_unpack(packed, cut, out, n), DEXA_E_CORRUPT);
    }
  }
  CHECK_EQ_INT(dexa__value_unpack(packed, pn, out, n - 1), DEXA_E_CORRUPT);
  unsigned char far[] = {DEXA__PACK_TAG_V1, 8, 0x00, 0xFF, 0xFF};
  CHECK_EQ_INT(dexa__value_unpack(far, sizeof far, out, 8), DEXA_E_CORRUPT);
  unsigned char zero[] = {DEXA__PACK_TAG_V1, 8, 0x00, 0x00, 0x00};
  CHECK_EQ_INT(dexa__value_unpack(zero, sizeof zero, out, 8), DEXA_E_CORRUPT);
  unsigned char trailing[] = {DEXA__PACK_TAG_V1, 1, 0x10, 'a', 0x00};
  CHECK_EQ_INT(dexa__value_unpack(trailing, sizeof trailing, out, 1), DEXA_E_CORRUPT);
  unsigned char bad_varint[] = {DEXA__PACK_TAG_V1, 0x80, 0x80};
  size_t len;
  CHECK_EQ_INT(dexa__value_unpacked_len(bad_varint, sizeof bad_varint, &len), DEXA_E_CORRUPT);
  /* Random damage never escapes the buffers (ASan watches) and, when the
   * damage leaves a well-formed value, it is a value of the right size. */
  uint32_t state = 5;
  unsigned char damaged[256];
  for (int round = 0; round < 2000; round++) {
    memcpy(damaged, packed, pn);
    damaged[1 + next_random(&state) % (pn - 1)] ^= (unsigned char)(1 + next_random(&state) % 255);
    if (dexa__value_unpacked_len(damaged, pn, &len) != DEXA_OK || len > n) continue;
    int rc = dexa__value_unpack(damaged, pn, out, len);
    CHECK(rc == DEXA_OK || rc == DEXA_E_CORRUPT);
  }
  free(out);
}

/* The dictionary is part of the file format: a stored value points into
 * it by position, so any edit would corrupt stored data. */
static void test_the_dictionary_is_frozen(void) {
  uint32_t h = 2166136261u;
  for (size_t i = 0; i < dexa__pack_dict_v1_len; i++) {
    h = (h ^ (unsigned char)dexa__pack_dict_v1[i]) * 16777619u;
  }
  if (dexa__pack_dict_v1_len != DICT_V1_LEN || h != DICT_V1_FNV)
    fprintf(stderr, "    dictionary: %zu bytes, FNV-1a %08x\n", dexa__pack_dict_v1_len, h);
  CHECK_EQ_INT(dexa__pack_dict_v1_len, DICT_V1_LEN);
  CHECK_EQ_INT(h, DICT_V1_FNV);
}

int main(void) {
  RUN(test_library_json_packs_to_under_two_thirds);
  RUN(test_short_and_incompressible_values_stay_as_they_are);
  RUN(test_repeats_overlapping_themselves_round_trip);
  RUN(test_long_values_round_trip_past_the_window);
  RUN(test_random_json_like_text_round_trips);
  RUN(test_a_match_may_run_from_the_dictionary_into_the_value);
  RUN(test_malformed_values_are_refused);
  RUN(test_the_dictionary_is_frozen);
  TEST_MAIN_END();
}
