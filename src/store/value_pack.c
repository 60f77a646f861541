/* Packed values (value_pack.h): a greedy LZ77 packer whose window starts
 * with a fixed dictionary, and a bounds-checked unpacker. */
#include "store/value_pack.h"

#include <pthread.h>
#include <stdint.h>
#include <string.h>

#include "dexagents/errors.h"

enum {
  MIN_MATCH = 4,
  MAX_DISTANCE = 65535,
  DICT_HASH_BITS = 12,
  VALUE_HASH_BITS = 10, /* small: the table is cleared for every value */
  DICT_WAYS = 8,       /* dictionary positions kept per hash: fragments share prefixes */
  MIN_PACK_INPUT = 24, /* shorter values are stored as they are */
  SKIP_SHIFT = 4,      /* after 16 misses in a row, look at every 2nd position, ... */
  PROBE_BYTES = 1024   /* a value that saved nothing by then is not packed */
};

#define DICT dexa__pack_dict_v1
#define DICT_LEN dexa__pack_dict_v1_len

static uint32_t hash4(const unsigned char *p, int bits) {
  uint32_t v;
  memcpy(&v, p, 4);
  return (v * 2654435761u) >> (32 - bits);
}

/* ---- dictionary index, built once ------------------------------------ */

static uint16_t dict_index[1 << DICT_HASH_BITS][DICT_WAYS]; /* position + 1; 0 = empty */
static pthread_once_t dict_once = PTHREAD_ONCE_INIT;

static void build_dict_index(void) {
  const unsigned char *d = (const unsigned char *)DICT;
  for (size_t p = 0; p + MIN_MATCH <= DICT_LEN; p++) {
    uint16_t *ways = dict_index[hash4(d + p, DICT_HASH_BITS)];
    /* Keep the earliest positions: a fragment's start is listed before the
     * positions inside later fragments that merely share four bytes. */
    for (int w = 0; w < DICT_WAYS; w++) {
      if (ways[w] == 0) {
        ways[w] = (uint16_t)(p + 1);
        break;
      }
    }
  }
}

/* ---- packing ------------------------------------------------------------ */

size_t dexa__value_pack_bound(size_t n) { return 1 + 10 + n + n / 255 + 16; }

static size_t put_varint(unsigned char *out, size_t v) {
  size_t i = 0;
  while (v >= 0x80) {
    out[i++] = (unsigned char)(v | 0x80);
    v >>= 7;
  }
  out[i++] = (unsigned char)v;
  return i;
}

/* The extra bytes of a length whose nibble said 15. */
static unsigned char *put_length_extra(unsigned char *o, size_t rest) {
  while (rest >= 255) {
    *o++ = 255;
    rest -= 255;
  }
  *o++ = (unsigned char)rest;
  return o;
}

static size_t common_length(const unsigned char *a, const unsigned char *b, size_t max) {
  size_t n = 0;
  while (n < max && a[n] == b[n]) n++;
  return n;
}

typedef struct match {
  size_t len;
  size_t distance;
} match;

/* The longest match for in[i..n) in the dictionary (never running past its
 * end) or earlier in the value (the newest position with the same hash). */
static match find_match(const unsigned char *in, size_t i, size_t n, const int32_t *head) {
  match best = {0, 0};
  const unsigned char *d = (const unsigned char *)DICT;
  if (i + DICT_LEN <= MAX_DISTANCE) {
    const uint16_t *ways = dict_index[hash4(in + i, DICT_HASH_BITS)];
    for (int w = 0; w < DICT_WAYS && ways[w]; w++) {
      size_t p = ways[w] - 1u;
      size_t max = DICT_LEN - p < n - i ? DICT_LEN - p : n - i;
      size_t len = common_length(d + p, in + i, max);
      if (len > best.len) best = (match){len, DICT_LEN - p + i};
    }
  }
  int32_t c = head[hash4(in + i, VALUE_HASH_BITS)];
  if (c >= 0 && i - (size_t)c <= MAX_DISTANCE) {
    size_t len = common_length(in + c, in + i, n - i);
    if (len >= best.len) best = (match){len, i - (size_t)c};
  }
  if (best.len < MIN_MATCH) best.len = 0;
  return best;
}

static unsigned char *put_sequence(unsigned char *o, const unsigned char *lit, size_t nlit,
                                   match m) {
  size_t mcode = m.len ? m.len - MIN_MATCH : 0;
  *o++ = (unsigned char)(((nlit < 15 ? nlit : 15) << 4) | (mcode < 15 ? mcode : 15));
  if (nlit >= 15) o = put_length_extra(o, nlit - 15);
  memcpy(o, lit, nlit);
  o += nlit;
  if (m.len) {
    *o++ = (unsigned char)(m.distance & 0xFF);
    *o++ = (unsigned char)(m.distance >> 8);
    if (mcode >= 15) o = put_length_extra(o, mcode - 15);
  }
  return o;
}

size_t dexa__value_pack(const char *v, size_t n, unsigned char *out) {
  if (n < MIN_PACK_INPUT) return 0;
  pthread_once(&dict_once, build_dict_index);
  const unsigned char *in = (const unsigned char *)v;
  int32_t head[1 << VALUE_HASH_BITS];
  memset(head, 0xFF, sizeof head); /* -1: no earlier position */
  unsigned char *o = out;
  *o++ = DEXA__PACK_TAG_V1;
  o += put_varint(o, n);
  size_t lit = 0; /* start of the pending literals */
  size_t i = 0, misses = 0;
  int probed = 0;
  while (i + MIN_MATCH <= n) {
    /* Incompressible data (random ids, base64, other compressed bytes)
     * costs little: the search skips ahead the longer it finds nothing,
     * and gives up if the first PROBE_BYTES saved nothing at all. */
    if (!probed && i >= PROBE_BYTES) {
      probed = 1;
      if ((size_t)(o - out) + (i - lit) >= i) return 0;
    }
    match m = find_match(in, i, n, head);
    if (m.len == 0) {
      if (i < INT32_MAX) head[hash4(in + i, VALUE_HASH_BITS)] = (int32_t)i;
      i += 1 + (misses++ >> SKIP_SHIFT);
      continue;
    }
    misses = 0;
    o = put_sequence(o, in + lit, i - lit, m);
    for (size_t end = i + m.len; i < end; i++) {
      if (i + MIN_MATCH <= n && i < INT32_MAX) head[hash4(in + i, VALUE_HASH_BITS)] = (int32_t)i;
    }
    lit = i;
  }
  if (lit < n) o = put_sequence(o, in + lit, n - lit, (match){0, 0});
  size_t packed = (size_t)(o - out);
  return packed + n / 16 <= n ? packed : 0;
}

/* ---- unpacking ---------------------------------------------------------- */

int dexa__value_is_packed(const void *p, size_t n) {
  return n > 1 && ((const unsigned char *)p)[0] == DEXA__PACK_TAG_V1;
}

static int get_varint(const unsigned char **p, const unsigned char *end, size_t *v) {
  size_t r = 0;
  for (int shift = 0; shift < 64 && *p < end; shift += 7) {
    unsigned char b = *(*p)++;
    r |= (size_t)(b & 0x7F) << shift;
    if (!(b & 0x80)) {
      *v = r;
      return DEXA_OK;
    }
  }
  return DEXA_E_CORRUPT;
}

int dexa__value_unpacked_len(const unsigned char *p, size_t n, size_t *len) {
  if (!dexa__value_is_packed(p, n)) return DEXA_E_CORRUPT;
  const unsigned char *q = p + 1;
  return get_varint(&q, p + n, len);
}

/* Adds the extra bytes of a length whose nibble said 15. */
static int get_length(const unsigned char **p, const unsigned char *end, size_t *len) {
  unsigned char b;
  do {
    if (*p >= end) return DEXA_E_CORRUPT;
    b = *(*p)++;
    *len += b;
  } while (b == 255);
  return DEXA_OK;
}

/* Copies len bytes from distance back in (dictionary || out[0..pos)). The
 * source may start in the dictionary and run on into out, and may overlap
 * the bytes being written (a repeat), so out's part is copied forwards.
 * Short copies move whole 16-byte blocks and may write up to
 * DEXA__UNPACK_SLACK bytes past the match, which later bytes overwrite. */
static void copy_match(char *out, size_t pos, size_t distance, size_t len) {
  size_t from = DICT_LEN + pos - distance; /* in window coordinates */
  if (from + len <= DICT_LEN) {
    if (len <= 16 && from + 16 <= DICT_LEN) {
      memcpy(out + pos, DICT + from, 16);
    } else {
      memcpy(out + pos, DICT + from, len);
    }
    return;
  }
  if (from >= DICT_LEN && distance >= 16) {
    const char *src = out + (from - DICT_LEN);
    for (size_t k = 0; k < len; k += 16) memcpy(out + pos + k, src + k, 16);
    return;
  }
  while (len > 0 && from < DICT_LEN) {
    size_t k = DICT_LEN - from < len ? DICT_LEN - from : len;
    memcpy(out + pos, DICT + from, k);
    pos += k;
    from += k;
    len -= k;
  }
  const char *src = out + (from - DICT_LEN);
  for (size_t k = 0; k < len; k++) out[pos + k] = src[k];
}

int dexa__value_unpack(const unsigned char *p, size_t n, char *out, size_t len) {
  size_t total;
  if (dexa__value_unpacked_len(p, n, &total) != DEXA_OK || total != len) return DEXA_E_CORRUPT;
  const unsigned char *end = p + n;
  const unsigned char *q = p + 1;
  while (*q++ & 0x80) {
  }
  size_t pos = 0;
  while (pos < len) {
    if (q >= end) return DEXA_E_CORRUPT;
    unsigned char token = *q++;
    size_t nlit = token >> 4;
    if (nlit == 15 && get_length(&q, end, &nlit) != DEXA_OK) return DEXA_E_CORRUPT;
    if (nlit > (size_t)(end - q) || nlit > len - pos) return DEXA_E_CORRUPT;
    if (nlit <= 16 && end - q >= 16) {
      memcpy(out + pos, q, 16); /* one block; the slack takes the excess */
    } else {
      memcpy(out + pos, q, nlit);
    }
    q += nlit;
    pos += nlit;
    if (pos == len) break;
    if (end - q < 2) return DEXA_E_CORRUPT;
    size_t distance = (size_t)q[0] | (size_t)q[1] << 8;
    q += 2;
    size_t mlen = token & 15;
    if (mlen == 15 && get_length(&q, end, &mlen) != DEXA_OK) return DEXA_E_CORRUPT;
    mlen += MIN_MATCH;
    if (distance == 0 || distance > DICT_LEN + pos || mlen > len - pos) return DEXA_E_CORRUPT;
    copy_match(out, pos, distance, mlen);
    pos += mlen;
  }
  return q == end ? DEXA_OK : DEXA_E_CORRUPT;
}
