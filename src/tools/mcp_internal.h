/* MCP client internals shared by the files of src/tools/mcp_*.c:
 *
 *   mcp_config.c     the worker's configuration file (parse, validate, redact)
 *   mcp_wire.c       JSON-RPC message classification and the SSE parser
 *   mcp_stdio.c      child process transport (posix_spawn, pipes, reader thread)
 *   mcp_http.c       Streamable HTTP transport (libcurl)
 *   mcp_client.c     one connection per server: era detection, handshake,
 *                    requests matched by id, timeouts and cancellation
 *   mcp_source.c     the tool source: names, effects, results, resource tools
 *
 * Threads: one dexa__mcp_client per configured server, shared by every
 * worker thread. Its mutex guards its state and the table of requests in
 * flight; requests run concurrently and are matched to responses by id. */
#ifndef DEXA_TOOLS_MCP_INTERNAL_H
#define DEXA_TOOLS_MCP_INTERNAL_H

#include <cjson/cJSON.h>
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "dexagents/mcp.h"
#include "util/buf.h"

#define DEXA__MCP_MAX_MESSAGE (8u * 1024 * 1024) /* one JSON-RPC message */
#define DEXA__MCP_DEFAULT_TIMEOUT_MS 60000
#define DEXA__MCP_CONNECT_TIMEOUT_MS 15000 /* cap of handshake and listing */
#define DEXA__MCP_STOP_POLL_MS 100 /* how often a running call asks whether to stop */
/* A request whose caller asked it to stop (dexa__mcp_cancel): internal to
 * src/tools, never returned by a public function. */
#define DEXA__MCP_E_STOPPED (-1000)

/* A running request's question "should I stop?" (the turn was stopped):
 * stop(user) is polled while it waits; NULL stop never stops. */
typedef struct dexa__mcp_cancel {
  int (*stop)(void *user);
  void *user;
} dexa__mcp_cancel;

/* ---- configuration ---- */

enum { DEXA__MCP_STDIO = 1, DEXA__MCP_HTTP = 2 };
enum { DEXA__MCP_ERA_AUTO = 0, DEXA__MCP_ERA_LEGACY = 1, DEXA__MCP_ERA_MODERN = 2 };

typedef struct dexa__mcp_kv {
  char *key;
  char *value;
} dexa__mcp_kv;

typedef struct dexa__mcp_server_cfg {
  char *name;
  int transport;
  char *command;
  char **args; /* argc entries */
  size_t argc;
  dexa__mcp_kv *env;
  size_t envc;
  char *cwd;
  char *url;
  dexa__mcp_kv *headers;
  size_t headerc;
  int trust_annotations;
  int resource_and_prompt_tools;
  int64_t timeout_ms;
  char *protocol_version; /* NULL: auto (era detection); else a revision */
} dexa__mcp_server_cfg;

struct dexa_mcp_config {
  dexa__mcp_server_cfg *servers;
  size_t count;
};

int dexa__mcp_server_cfg_copy(dexa__mcp_server_cfg *dst, const dexa__mcp_server_cfg *src);
void dexa__mcp_server_cfg_free(dexa__mcp_server_cfg *s);

/* ---- wire: JSON-RPC and SSE (mcp_wire.c; the fuzz target) ---- */

enum {
  DEXA__RPC_INVALID = 0,
  DEXA__RPC_REQUEST,
  DEXA__RPC_NOTIFICATION,
  DEXA__RPC_RESULT,
  DEXA__RPC_ERROR
};

typedef struct dexa__rpc_msg {
  int kind;
  cJSON *root;        /* owned */
  char id[64];        /* canonical id text: 17 or "s:abc"; "" if none */
  const char *method; /* borrowed from root */
  const cJSON *params;
  const cJSON *result;
  int64_t error_code;
  const char *error_message;
} dexa__rpc_msg;

/* Parses one message (an object; a batch array is refused). Returns 0 and
 * fills m (free with dexa__rpc_msg_free), or -1 with m->kind INVALID. */
int dexa__rpc_parse(const char *s, size_t n, dexa__rpc_msg *m);
void dexa__rpc_msg_free(dexa__rpc_msg *m);
/* Canonical text of a JSON-RPC id value: "17" or "s:abc"; -1 when bad. */
int dexa__rpc_id_text(const cJSON *id, char *out, size_t size);

typedef struct dexa__sse_event {
  const char *event; /* "" when absent */
  const char *id;    /* NULL when the event set no id */
  const char *data;
  size_t data_len;
} dexa__sse_event;

/* on_event returns 0 to go on, nonzero to stop the parser (returned from
 * dexa__sse_feed). */
typedef int (*dexa__sse_fn)(void *user_data, const dexa__sse_event *ev);

typedef struct dexa__sse {
  dexa__buf line;
  dexa__buf data;
  dexa__buf event;
  char last_id[256]; /* the stream's last event id ("" none) */
  int has_id;        /* the current event set an id */
  int64_t retry_ms;  /* -1 until the server sends retry: */
  size_t max_event;
  int saw_cr;
  int failed; /* an event over max_event */
  dexa__sse_fn fn;
  void *user_data;
} dexa__sse;

void dexa__sse_init(dexa__sse *p, size_t max_event, dexa__sse_fn fn, void *user_data);
void dexa__sse_free(dexa__sse *p);
/* Feeds bytes; returns 0, the callback's nonzero value, or -1 (too large). */
int dexa__sse_feed(dexa__sse *p, const char *s, size_t n);
/* End of stream: an event without its blank line is discarded (per spec). */
void dexa__sse_end(dexa__sse *p);

/* Header value for Mcp-Name / Mcp-Param-*: plain visible ASCII, else
 * "=?base64?...?=". */
void dexa__mcp_header_value(dexa__buf *b, const char *v);

/* ---- client ---- */

typedef struct dexa__mcp_client dexa__mcp_client;
typedef struct dexa__mcp_stdio dexa__mcp_stdio;
typedef struct dexa__mcp_http dexa__mcp_http;

/* A request in flight. */
typedef struct dexa__mcp_pending {
  struct dexa__mcp_pending *next;
  char id[64];
  char progress_token[64];
  cJSON *response; /* the whole message once it arrived */
  int done;
  int failed; /* the transport failed: error code */
  int64_t deadline_ms;
  int64_t progress_count;
  dexa__mcp_cancel cancel;
} dexa__mcp_pending;

struct dexa__mcp_client {
  dexa__mcp_server_cfg cfg;
  pthread_mutex_t mu;
  pthread_cond_t cv;
  pthread_mutex_t connect_mu; /* one connect attempt at a time */
  pthread_rwlock_t transport_lock; /* writers (read lock) vs. stopping the stdio transport */
  int connected;
  uint64_t generation;  /* bumped by every new connection */
  int era;              /* detected era (cached across restarts) */
  char version[32];     /* negotiated protocol revision */
  cJSON *capabilities;  /* the server's */
  char *instructions;
  int64_t next_id;
  dexa__mcp_pending *pending;
  int tools_dirty;          /* list_changed seen */
  int64_t tools_expire_ms;  /* cache end (HTTP: no listen stream; modern: ttlMs) */
  int64_t last_fail_ms;
  char last_error[512];
  dexa__mcp_stdio *stdio;
  dexa__mcp_http *http;
  int closing;
};

int dexa__mcp_client_init(dexa__mcp_client *c, const dexa__mcp_server_cfg *cfg);
void dexa__mcp_client_close(dexa__mcp_client *c);

/* Connects (starting or restarting the server) and negotiates when not
 * connected. Returns DEXA_OK or an error with err filled. */
int dexa__mcp_client_ensure(dexa__mcp_client *c, char *err, size_t err_size);

/* Sends a request and waits for its response. params is consumed (may be
 * NULL). timeout_ms <= 0 uses the server's. On DEXA_OK *result is the
 * result object (owned by the caller). A JSON-RPC error gives DEXA_E_TOOL
 * with "MCP error CODE: message" in err and *rpc_error set; a timeout
 * DEXA_E_TIMEOUT (the request is cancelled); a broken connection DEXA_E_IO;
 * an oversized message DEXA_E_TOO_LARGE. */
int dexa__mcp_request(dexa__mcp_client *c, const char *method, cJSON *params, int64_t timeout_ms,
                      cJSON **result, int64_t *rpc_error, char *err, size_t err_size);
/* dexa__mcp_request that stops early when cancel says so: the server gets
 * notifications/cancelled and the caller DEXA__MCP_E_STOPPED. */
int dexa__mcp_request_cancellable(dexa__mcp_client *c, const char *method, cJSON *params,
                                  int64_t timeout_ms, const dexa__mcp_cancel *cancel,
                                  cJSON **result, int64_t *rpc_error, char *err, size_t err_size);
/* 1 when the request of id in flight was asked to stop (transports poll
 * it while they wait). */
int dexa__mcp_request_stop_asked(dexa__mcp_client *c, const char *id);

/* Sends a notification (params consumed). */
int dexa__mcp_notify(dexa__mcp_client *c, const char *method, cJSON *params);

/* Handles one message from the server (any transport; text is borrowed). */
void dexa__mcp_client_on_message(dexa__mcp_client *c, uint64_t generation, const char *text,
                                 size_t len);
/* The transport of generation failed: every request in flight fails. */
void dexa__mcp_client_on_broken(dexa__mcp_client *c, uint64_t generation, int code,
                                const char *why);
/* Serialises a message for the wire (unformatted, so no raw newline). */
char *dexa__mcp_build_request(dexa__mcp_client *c, const char *id, const char *method,
                              cJSON *params);

int64_t dexa__mcp_now_ms(void);

/* ---- stdio transport ---- */

int dexa__mcp_stdio_start(dexa__mcp_stdio **out, dexa__mcp_client *c, uint64_t generation,
                          char *err, size_t err_size);
/* Writes one line; DEXA_E_IO when the child is gone. Thread-safe. */
int dexa__mcp_stdio_send(dexa__mcp_stdio *s, const char *text, size_t len);
/* Stops the child (stdin closed, SIGTERM, SIGKILL to its process group),
 * reaps it, joins the reader and closes every descriptor. */
void dexa__mcp_stdio_stop(dexa__mcp_stdio *s);
/* The last bytes the server wrote to stderr (for error messages). */
void dexa__mcp_stdio_stderr_tail(dexa__mcp_stdio *s, char *out, size_t size);
int dexa__mcp_stdio_alive(dexa__mcp_stdio *s);

/* ---- HTTP transport ---- */

int dexa__mcp_http_new(dexa__mcp_http **out, dexa__mcp_client *c);
void dexa__mcp_http_free(dexa__mcp_http *h);
/* POSTs one message and delivers every message of the response (JSON or
 * SSE, resumed by GET with Last-Event-ID) to the client. wait_id: the
 * request id whose response ends the exchange ("" for a notification or a
 * response). method/name feed Mcp-Method and Mcp-Name (modern era).
 * Returns DEXA_OK, DEXA_E_TIMEOUT, DEXA_E_IO, DEXA_E_TOO_LARGE or
 * DEXA_E_NOT_FOUND (the session is gone: re-initialize). */
int dexa__mcp_http_post(dexa__mcp_http *h, uint64_t generation, const char *body,
                        const char *wait_id, const char *method, const char *name,
                        int64_t deadline_ms, char *err, size_t err_size);
/* Ends the session with DELETE (when it has one) and forgets it. */
void dexa__mcp_http_end_session(dexa__mcp_http *h);
void dexa__mcp_http_reset_session(dexa__mcp_http *h);

/* ---- tool source ---- */

/* The tool name offered to the model for tool of server: see mcp_source.c.
 * out must hold 65 bytes. */
void dexa__mcp_tool_name(const char *server, const char *tool, char *out);
/* The name 1.0 offered (a '.' kept as is, a hash with a wrong offset
 * basis); calls recorded under it still resolve. */
void dexa__mcp_tool_name_1_0(const char *server, const char *tool, char *out);

#endif
