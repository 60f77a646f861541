/* AWS event stream framing (see eventstream.h). */
#include "model/eventstream.h"

#include <stdio.h>
#include <string.h>

#define PRELUDE 12
#define TRAILER 4

uint32_t dexa__crc32(uint32_t crc, const unsigned char *s, size_t n) {
  crc = ~crc;
  for (size_t i = 0; i < n; i++) {
    crc ^= s[i];
    for (int k = 0; k < 8; k++) crc = (crc >> 1) ^ (0xEDB88320u & (0u - (crc & 1u)));
  }
  return ~crc;
}

static uint32_t be32(const unsigned char *s) {
  return (uint32_t)s[0] << 24 | (uint32_t)s[1] << 16 | (uint32_t)s[2] << 8 | s[3];
}

void dexa__es_parser_init(dexa__es_parser *p, dexa__es_fn on_message, void *ctx) {
  memset(p, 0, sizeof *p);
  dexa__buf_init(&p->msg);
  p->on_message = on_message;
  p->ctx = ctx;
}

void dexa__es_parser_free(dexa__es_parser *p) { dexa__buf_free(&p->msg); }

static int broken(dexa__es_parser *p, const char *why) {
  p->failed = 1;
  snprintf(p->why, sizeof p->why, "%s", why);
  return -1;
}

/* The size of a header value of type t at s (n bytes left), or -1. */
static long value_size(unsigned char t, const unsigned char *s, size_t n) {
  static const long fixed[] = {0, 0, 1, 2, 4, 8, -2, -2, 8, 16}; /* -2: 2-byte length first */
  if (t > 9) return -1;
  if (fixed[t] >= 0) return (size_t)fixed[t] <= n ? fixed[t] : -1;
  if (n < 2) return -1;
  long len = 2 + ((long)s[0] << 8 | s[1]);
  return (size_t)len <= n ? len : -1;
}

/* Copies a string header's value into out (cut to its size). */
static void string_value(const unsigned char *v, char *out, size_t size) {
  size_t len = (size_t)v[0] << 8 | v[1];
  if (len >= size) len = size - 1;
  memcpy(out, v + 2, len);
  out[len] = '\0';
}

static int headers(dexa__es_parser *p, const unsigned char *s, size_t n, char *mtype, char *type,
                   size_t size) {
  size_t i = 0;
  while (i < n) {
    size_t nl = s[i++];
    if (nl == 0 || i + nl + 1 > n) return broken(p, "a malformed event-stream header");
    const unsigned char *name = s + i;
    i += nl;
    unsigned char t = s[i++];
    long vs = value_size(t, s + i, n - i);
    if (vs < 0) return broken(p, "a malformed event-stream header value");
    if (t == 7) {
      if (nl == 13 && !memcmp(name, ":message-type", 13)) string_value(s + i, mtype, size);
      else if ((nl == 11 && !memcmp(name, ":event-type", 11)) ||
               (nl == 15 && !memcmp(name, ":exception-type", 15)) ||
               (nl == 11 && !memcmp(name, ":error-code", 11)))
        string_value(s + i, type, size);
    }
    i += (size_t)vs;
  }
  return 0;
}

/* One whole message in p->msg. */
static int deliver(dexa__es_parser *p) {
  const unsigned char *m = (const unsigned char *)p->msg.data;
  size_t total = p->need, hlen = be32(m + 4);
  if (dexa__crc32(0, m, total - TRAILER) != be32(m + total - TRAILER))
    return broken(p, "an event-stream message whose CRC does not match");
  char mtype[32] = "", type[128] = "";
  if (headers(p, m + PRELUDE, hlen, mtype, type, sizeof type) != 0) return -1;
  size_t off = PRELUDE + hlen, plen = total - off - TRAILER;
  char saved = (char)m[off + plen];
  p->msg.data[off + plen] = '\0'; /* the payload as a C string (its CRC byte is restored) */
  int rc = p->on_message(p->ctx, mtype[0] ? mtype : "event", type, p->msg.data + off, plen);
  p->msg.data[off + plen] = saved;
  dexa__buf_reset(&p->msg);
  p->need = 0;
  return rc;
}

/* The prelude is in: checks it and sets need. */
static int prelude(dexa__es_parser *p) {
  const unsigned char *m = (const unsigned char *)p->msg.data;
  uint32_t total = be32(m), hlen = be32(m + 4);
  if (dexa__crc32(0, m, 8) != be32(m + 8)) return broken(p, "an event-stream prelude whose CRC does not match");
  if (total < PRELUDE + TRAILER || total > DEXA__ES_MAX_MESSAGE || hlen > total - PRELUDE - TRAILER)
    return broken(p, "an event-stream message of a bad length");
  p->need = total;
  return 0;
}

int dexa__es_parser_feed(dexa__es_parser *p, const char *bytes, size_t n) {
  if (p->failed) return -1;
  while (n) {
    size_t want = (p->need ? p->need : PRELUDE) - p->msg.len;
    size_t take = n < want ? n : want;
    dexa__buf_append(&p->msg, bytes, take);
    if (p->msg.oom) return broken(p, "out of memory");
    bytes += take;
    n -= take;
    if (!p->need && p->msg.len == PRELUDE && prelude(p) != 0) return -1;
    if (p->need && p->msg.len == p->need) {
      int rc = deliver(p);
      if (rc != 0) return rc;
    }
  }
  return 0;
}

int dexa__es_parser_pending(const dexa__es_parser *p) { return p->msg.len > 0; }
