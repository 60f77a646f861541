/* What the routes check about a request before any route runs: the Host
 * header (DNS rebinding), the media type of a POST, and the bytes of a JSON
 * body (one value, valid UTF-8, no NUL), so that a request the RPCs would
 * read differently from what was sent is refused with 400 and changes
 * nothing. */
#include <arpa/inet.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>

#include "dexagents/errors.h"
#include "http/http_internal.h"
#include "util/json_span.h"

/* ---- the body ------------------------------------------------------------------ */

/* Length of the UTF-8 sequence at s (RFC 3629: no overlong forms, no
 * surrogates, at most U+10FFFF), or 0 when it is not one. */
static size_t utf8_seq(const unsigned char *s, size_t n) {
  unsigned char c = s[0];
  if (c < 0x80) return 1;
  size_t k = c >= 0xC2 && c <= 0xDF ? 2 : c >= 0xE0 && c <= 0xEF ? 3 : c >= 0xF0 && c <= 0xF4 ? 4 : 0;
  if (k == 0 || k > n) return 0;
  for (size_t i = 1; i < k; i++)
    if ((s[i] & 0xC0) != 0x80) return 0;
  if (c == 0xE0 && s[1] < 0xA0) return 0; /* overlong */
  if (c == 0xED && s[1] > 0x9F) return 0; /* UTF-16 surrogate */
  if (c == 0xF0 && s[1] < 0x90) return 0; /* overlong */
  if (c == 0xF4 && s[1] > 0x8F) return 0; /* beyond U+10FFFF */
  return k;
}

/* A "\u0000" escape inside a string starting at s[i] == '\\'. */
static int nul_escape(const char *s, size_t n, size_t i) {
  return i + 5 < n && s[i + 1] == 'u' && strncmp(s + i + 2, "0000", 4) == 0;
}

const char *dexa__http_body_problem(const char *s, size_t n) {
  int in_string = 0;
  for (size_t i = 0; i < n;) {
    unsigned char c = (unsigned char)s[i];
    if (c == 0) return "the request body contains a NUL byte";
    size_t k = utf8_seq((const unsigned char *)s + i, n - i);
    if (k == 0) return "the request body is not valid UTF-8";
    if (in_string && c == '\\') {
      if (nul_escape(s, n, i)) return "a string of the request body contains NUL (\\u0000)";
      i += i + 1 < n ? 2 : 1; /* the escaped character (ASCII when valid) */
      continue;
    }
    if (c == '"') in_string = !in_string;
    i += k;
  }
  /* Exactly one JSON value: bytes after it would be dropped by the parser. */
  if (dexa__json_validate(s, n) != 0) return "the request body must be one JSON value";
  return NULL;
}

/* ---- the media type -------------------------------------------------------------- */

int dexa__http_is_json_type(const char *content_type) {
  if (!content_type) return 0;
  while (*content_type == ' ' || *content_type == '\t') content_type++;
  size_t n = strcspn(content_type, "; \t");
  if (n != 16 || strncasecmp(content_type, "application/json", 16) != 0) return 0;
  /* Parameters may follow; only a UTF-8 charset makes sense for JSON. */
  const char *cs = strcasestr(content_type + n, "charset=");
  if (!cs) return 1;
  cs += 8;
  if (*cs == '"') cs++;
  return strncasecmp(cs, "utf-8", 5) == 0 || strncasecmp(cs, "utf8", 4) == 0;
}

/* ---- the Host header ---------------------------------------------------------------- */

/* "<address>:<port>" of the socket the request came in on, IPv6 in
 * brackets; *loopback is set for 127.0.0.0/8 and ::1. */
static int local_address(struct MHD_Connection *c, char *out, size_t size, unsigned *port,
                         int *loopback) {
  const union MHD_ConnectionInfo *ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
  if (!ci) return -1;
  struct sockaddr_storage ss;
  socklen_t len = sizeof ss;
  if (getsockname(ci->connect_fd, (struct sockaddr *)&ss, &len) != 0) return -1;
  char ip[INET6_ADDRSTRLEN];
  if (ss.ss_family == AF_INET) {
    const struct sockaddr_in *a = (const struct sockaddr_in *)&ss;
    inet_ntop(AF_INET, &a->sin_addr, ip, sizeof ip);
    *port = ntohs(a->sin_port);
    *loopback = (ntohl(a->sin_addr.s_addr) >> 24) == 127;
    snprintf(out, size, "%s", ip);
  } else if (ss.ss_family == AF_INET6) {
    const struct sockaddr_in6 *a = (const struct sockaddr_in6 *)&ss;
    inet_ntop(AF_INET6, &a->sin6_addr, ip, sizeof ip);
    *port = ntohs(a->sin6_port);
    *loopback = IN6_IS_ADDR_LOOPBACK(&a->sin6_addr);
    snprintf(out, size, "[%s]", ip);
  } else {
    return -1;
  }
  return 0;
}

/* host[:port] equals name and port; no port in host means 80. */
static int host_is(const char *host, size_t n, const char *name, unsigned port) {
  size_t nl = strlen(name);
  if (n < nl || strncasecmp(host, name, nl) != 0) return 0;
  if (n == nl) return port == 80;
  char p[8];
  snprintf(p, sizeof p, "%u", port);
  return host[nl] == ':' && n - nl - 1 == strlen(p) && strncmp(host + nl + 1, p, n - nl - 1) == 0;
}

/* One entry of allowed_hosts: "name:port", or "name" for any port. */
static int allowed_entry(const char *host, size_t n, const char *e, size_t el) {
  if (el == 1 && e[0] == '*') return 1;
  if (el == n && strncasecmp(host, e, n) == 0) return 1;
  const char *colon = memrchr(e, ':', el), *bracket = memrchr(e, ']', el);
  int has_port = colon && (e[0] != '[' || (bracket && colon > bracket));
  return !has_port && n > el && host[el] == ':' && strncasecmp(host, e, el) == 0;
}

static int in_allowed_hosts(const char *list, const char *host, size_t n) {
  for (const char *p = list; p && *p;) {
    while (*p == ',' || *p == ' ') p++;
    size_t el = strcspn(p, ", ");
    if (el && allowed_entry(host, n, p, el)) return 1;
    p += el;
  }
  return 0;
}

int dexa__http_host_ok(const dexa_http_agent_routes *r, struct MHD_Connection *c) {
  const char *host = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_HOST);
  if (!host || !*host) return 0;
  size_t n = strlen(host);
  if (r->allowed_hosts && in_allowed_hosts(r->allowed_hosts, host, n)) return 1;
  char addr[INET6_ADDRSTRLEN + 2];
  unsigned port = 0;
  int loopback = 0;
  if (local_address(c, addr, sizeof addr, &port, &loopback) != 0) return 0;
  if (host_is(host, n, addr, port)) return 1;
  /* A browser on the same machine may say localhost. */
  return loopback && host_is(host, n, "localhost", port);
}
