/* The page of the AI Agent example: plain files of ui/ (HTML, CSS,
 * JavaScript; no build step), read from disk on each request so an edit
 * shows on reload. Only names of letters, digits, '.', '-' and '_' directly
 * in ui/ are served. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ai_agent.h"

#define MAX_FILE_BYTES (4 * 1024 * 1024)
/* The page loads only its own files and talks only to its own origin; no
 * inline script or style, no frames, no plugins. */
#define PAGE_CSP                                                                           \
  "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "       \
  "connect-src 'self'; font-src 'self'; manifest-src 'self'; base-uri 'none'; "           \
  "form-action 'self'; frame-ancestors 'none'"

static enum MHD_Result respond(struct MHD_Connection *c, unsigned status, const char *type,
                               char *body, size_t len, const char *location) {
  struct MHD_Response *r = MHD_create_response_from_buffer(len, body, MHD_RESPMEM_MUST_FREE);
  if (!r) {
    free(body);
    return MHD_NO;
  }
  MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, type);
  MHD_add_response_header(r, MHD_HTTP_HEADER_CACHE_CONTROL, "no-cache");
  dexa_http_security_headers(r, PAGE_CSP);
  if (location) MHD_add_response_header(r, MHD_HTTP_HEADER_LOCATION, location);
  enum MHD_Result ok = MHD_queue_response(c, status, r);
  MHD_destroy_response(r);
  return ok;
}

static enum MHD_Result text(struct MHD_Connection *c, unsigned status, const char *msg,
                            const char *location) {
  size_t n = strlen(msg);
  char *body = malloc(n + 1);
  if (!body) return MHD_NO;
  memcpy(body, msg, n + 1);
  return respond(c, status, "text/plain; charset=utf-8", body, n, location);
}

static const char *content_type(const char *name) {
  const char *dot = strrchr(name, '.');
  if (!dot) return "application/octet-stream";
  if (strcmp(dot, ".html") == 0) return "text/html; charset=utf-8";
  if (strcmp(dot, ".css") == 0) return "text/css; charset=utf-8";
  if (strcmp(dot, ".js") == 0) return "text/javascript; charset=utf-8";
  if (strcmp(dot, ".svg") == 0) return "image/svg+xml";
  if (strcmp(dot, ".png") == 0) return "image/png";
  if (strcmp(dot, ".json") == 0) return "application/json";
  if (strcmp(dot, ".ico") == 0) return "image/x-icon";
  if (strcmp(dot, ".webmanifest") == 0) return "application/manifest+json";
  return "application/octet-stream";
}

static int safe_name(const char *name) {
  if (!*name || name[0] == '.' || strlen(name) > 100) return 0;
  return strspn(name, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.-_") ==
         strlen(name);
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

enum MHD_Result ai_agent_serve_static(struct MHD_Connection *c, const dexa_http_agent_routes *routes,
                                      const char *ui_dir, const char *prefix, const char *url,
                                      const char *method) {
  size_t plen = strlen(prefix);
  if (dexa_http_agent_routes_check_host(routes, c) != DEXA_OK)
    return text(c, 421, "the Host header does not name this server\n", NULL);
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
  if (!safe_name(name)) return text(c, 404, "not found\n", NULL);
  char path[1024];
  snprintf(path, sizeof path, "%s/%s", ui_dir, name);
  size_t len = 0;
  char *data = read_file(path, &len);
  if (!data) return text(c, 404, "not found\n", NULL);
  return respond(c, 200, content_type(name), data, len, NULL);
}
