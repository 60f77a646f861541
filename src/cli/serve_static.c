/* The page of dexagents serve: the files of the UI directory (HTML, CSS,
 * JavaScript; no build step), read from disk on each request so an edit
 * shows on reload. Names of letters, digits, '.', '-' and '_' are served,
 * in the directory and in its subdirectories (one path segment of those
 * characters each, none starting with '.'). */
#include <microhttpd.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"

#define MAX_FILE_BYTES (8 * 1024 * 1024)
/* The page loads only its own files and talks only to its own origin; no
 * inline script or style, no frames, no plugins (as examples/ai-agent). */
#define PAGE_CSP                                                                           \
  "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "       \
  "connect-src 'self'; font-src 'self'; manifest-src 'self'; base-uri 'none'; "           \
  "form-action 'self'; frame-ancestors 'none'"

static int respond(struct MHD_Connection *c, unsigned status, const char *type, char *body,
                   size_t len, const char *location) {
  struct MHD_Response *r = MHD_create_response_from_buffer(len, body, MHD_RESPMEM_MUST_FREE);
  if (!r) {
    free(body);
    return 0;
  }
  MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, type);
  MHD_add_response_header(r, MHD_HTTP_HEADER_CACHE_CONTROL, "no-cache");
  dexa_http_security_headers(r, PAGE_CSP); /* nosniff, frame-ancestors, ... */
  if (location) MHD_add_response_header(r, MHD_HTTP_HEADER_LOCATION, location);
  enum MHD_Result ok = MHD_queue_response(c, status, r);
  MHD_destroy_response(r);
  return ok == MHD_YES;
}

static int text(struct MHD_Connection *c, unsigned status, const char *msg, const char *location) {
  char *body = strdup(msg);
  return body && respond(c, status, "text/plain; charset=utf-8", body, strlen(body), location);
}

static const char *content_type(const char *name) {
  static const char *const types[][2] = {
      {".html", "text/html; charset=utf-8"}, {".css", "text/css; charset=utf-8"},
      {".js", "text/javascript; charset=utf-8"}, {".mjs", "text/javascript; charset=utf-8"},
      {".json", "application/json"}, {".svg", "image/svg+xml"}, {".png", "image/png"},
      {".ico", "image/x-icon"}, {".woff2", "font/woff2"}, {".txt", "text/plain; charset=utf-8"},
      {".webmanifest", "application/manifest+json"}};
  const char *dot = strrchr(name, '.');
  for (size_t i = 0; dot && i < sizeof types / sizeof types[0]; i++)
    if (strcmp(dot, types[i][0]) == 0) return types[i][1];
  return "application/octet-stream";
}

static int safe_path(const char *p) {
  if (!*p || strlen(p) > 200) return 0;
  for (const char *seg = p; *seg; ) {
    size_t n = strcspn(seg, "/");
    if (n == 0 || seg[0] == '.' ||
        strspn(seg, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.-_") < n)
      return 0;
    seg += n;
    if (*seg == '/') seg++;
    else break;
  }
  return p[strlen(p) - 1] != '/';
}

static char *read_file(const char *path, size_t *len) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  char *data = NULL;
  long n = -1;
  if (fseek(f, 0, SEEK_END) == 0) n = ftell(f);
  if (n >= 0 && n <= MAX_FILE_BYTES && fseek(f, 0, SEEK_SET) == 0 &&
      (data = malloc((size_t)n + 1)) && fread(data, 1, (size_t)n, f) == (size_t)n) {
    *len = (size_t)n;
  } else {
    free(data);
    data = NULL;
  }
  fclose(f);
  return data;
}

int serve_static(struct MHD_Connection *c, const dexa_http_agent_routes *routes, const char *ui_dir,
                 const char *prefix, const char *url, const char *method) {
  size_t plen = strlen(prefix);
  /* DNS rebinding: a page of another name that resolves here gets nothing. */
  if (dexa_http_agent_routes_check_host(routes, c) != DEXA_OK)
    return text(c, 421, "the Host header does not name this server (allowed hosts)\n", NULL);
  if (strcmp(method, "GET") != 0 && strcmp(method, "HEAD") != 0)
    return text(c, 405, "method not allowed\n", NULL);
  char location[512];
  if (strcmp(url, "/") == 0 || strcmp(url, prefix) == 0) {
    snprintf(location, sizeof location, "%s/", prefix);
    return text(c, 302, "the AI Agent is at the prefix\n", location);
  }
  if (strncmp(url, prefix, plen) != 0 || url[plen] != '/') return text(c, 404, "not found\n", NULL);
  const char *name = url + plen + 1;
  if (!*name) name = "index.html";
  if (!safe_path(name)) return text(c, 404, "not found\n", NULL);
  char path[1024];
  snprintf(path, sizeof path, "%s/%s", ui_dir, name);
  size_t len = 0;
  char *data = read_file(path, &len);
  if (!data) return text(c, 404, "not found\n", NULL);
  return respond(c, 200, content_type(name), data, len, NULL);
}
