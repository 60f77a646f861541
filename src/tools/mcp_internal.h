/* MCP client internals shared by the files of src/tools/mcp_*.c:
 *
 *   mcp_config.c     the worker's configuration file (parse, validate, redact)
 *   mcp_wire.c       JSON-RPC message classification and the SSE parser
 *   mcp_stdio.c      child process transport (posix_spawn, pipes, reader thread)
 *   mcp_http.c       Streamable HTTP transport (libcurl)
 *   mcp_client.c     one connection per server: era detection, handshake,
 *                    requests matched by id, timeouts and cancellation,
 *                    the server's own requests (ping, roots, and those of a
 *                    tool call: elicitation, sampling) and its log messages
 *   mcp_calls.c      tools/call on a runner thread, so a call that waits for
 *                    the person can end its Step and be resumed (parked)
 *   mcp_ask.c        elicitation and sampling as questions and answers
 *   mcp_source.c     the tool source: names, effects, results, resource tools
 *   mcp_host.c       what the host shares with every source: the token
 *                    store, the sign-in redirect, the log callback
 *   mcp_token_file.c the default token store: one JSON file, mode 0600
 *   mcp_oauth*.c     OAuth 2.1 for Streamable HTTP servers (see mcp_oauth.h)
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
#define DEXA__MCP_QUESTION_TIMEOUT_MS 600000 /* a call that asked waits this long */
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

/* OAuth settings of one HTTP server ("auth" in the configuration). */
enum { DEXA__MCP_GRANT_CODE = 0, DEXA__MCP_GRANT_CLIENT_CREDENTIALS = 1, DEXA__MCP_GRANT_ENTERPRISE = 2 };
enum { DEXA__MCP_SAMPLING_OFF = 0, DEXA__MCP_SAMPLING_ASK = 1, DEXA__MCP_SAMPLING_AUTO = 2 };

typedef struct dexa__mcp_auth_cfg {
  int enabled; /* an "auth" object was given (OAuth also starts on any 401) */
  int grant;
  char *client_id;
  char *client_secret;
  char *client_metadata_url; /* a client ID metadata document's URL (CIMD) */
  char *client_name;
  char *redirect_uri;
  char *scopes;      /* space-separated; overrides what discovery finds */
  char *auth_method; /* token endpoint auth method; NULL: chosen */
  char *private_key; /* PEM, for private_key_jwt */
  char *private_key_file;
  char *signing_alg; /* ES256 (default) or RS256 */
  char *idp_token_endpoint; /* enterprise: the IdP that exchanges the ID token */
  char *idp_client_id;
  char *idp_client_secret;
  char *idp_id_token;
  char *idp_id_token_file;
} dexa__mcp_auth_cfg;

typedef struct dexa__mcp_root {
  char *uri;
  char *name;
} dexa__mcp_root;

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
  int elicitation;        /* declare elicitation: servers may ask the person */
  int sampling;           /* DEXA__MCP_SAMPLING_* */
  dexa__mcp_root *roots;
  size_t rootc;
  char *log_level; /* logging/setLevel after connecting, or NULL */
  int64_t question_timeout_ms; /* how long a call that asked stays open */
  dexa__mcp_auth_cfg auth;
} dexa__mcp_server_cfg;

typedef struct dexa__mcp_host dexa__mcp_host;

struct dexa_mcp_config {
  dexa__mcp_server_cfg *servers;
  size_t count;
  dexa__mcp_host *host; /* shared with the sources made from it */
};

int dexa__mcp_server_cfg_copy(dexa__mcp_server_cfg *dst, const dexa__mcp_server_cfg *src);
void dexa__mcp_server_cfg_free(dexa__mcp_server_cfg *s);

/* ---- what the host shares (mcp_host.c, mcp_token_file.c) ---- */

/* Reference counted: the configuration holds one, each source another. */
dexa__mcp_host *dexa__mcp_host_new(void);
dexa__mcp_host *dexa__mcp_host_ref(dexa__mcp_host *h);
void dexa__mcp_host_unref(dexa__mcp_host *h);
int dexa__mcp_host_set_auth(dexa__mcp_host *h, const dexa_mcp_auth_options *o);
void dexa__mcp_host_set_log(dexa__mcp_host *h, void (*log)(void *, int, const char *), void *ud);
/* The sign-in redirect and client name (NULL / "libdexagents" unless set). */
const char *dexa__mcp_host_redirect(const dexa__mcp_host *h);
const char *dexa__mcp_host_client_name(const dexa__mcp_host *h);

/* One line to the host's log callback, if any (levels 1 error .. 4 debug).
 * Never pass a token or a secret. */
void dexa__mcp_log(const dexa__mcp_host *h, int level, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* The token store: a record (JSON text) by key. get sets *out to a
 * malloc'd copy, or NULL when absent (DEXA_OK either way); put with value
 * NULL deletes. DEXA_E_UNSUPPORTED when the host gave no store and no file
 * can be found; DEXA_E_CALLBACK_FAILED when the host's store failed. */
int dexa__mcp_store_get(dexa__mcp_host *h, const char *key, char **out);
int dexa__mcp_store_put(dexa__mcp_host *h, const char *key, const char *value);

/* The file store (mcp_token_file.c): one JSON object of records, rewritten
 * whole under an exclusive lock, mode 0600 in a directory of mode 0700. */
int dexa__token_file_get(const char *path, const char *key, char **out);
int dexa__token_file_put(const char *path, const char *key, const char *value);
/* The default file: $XDG_STATE_HOME/dexagents/mcp-tokens.json, else
 * $HOME/.local/state/dexagents/mcp-tokens.json; NULL when neither is set. */
char *dexa__token_file_default(void);

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

typedef struct dexa__mcp_call dexa__mcp_call;
typedef struct dexa__mcp_oauth dexa__mcp_oauth;

/* A request in flight. */
typedef struct dexa__mcp_pending {
  struct dexa__mcp_pending *next;
  char id[64];
  char progress_token[64];
  cJSON *response; /* the whole message once it arrived */
  int done;
  int failed; /* the transport failed: error code */
  int64_t deadline_ms;
  int64_t hard_deadline_ms;
  int64_t progress_count;
  char method[32];
  dexa__mcp_call *owner; /* the tool call whose tools/call this is, or NULL */
  dexa__mcp_cancel cancel;
} dexa__mcp_pending;

/* A server's own request (elicitation, sampling) for a tool call, queued
 * for the thread that waits for that call (mcp_calls.c). */
typedef struct dexa__mcp_server_request {
  struct dexa__mcp_server_request *next;
  cJSON *msg; /* the whole request */
  uint64_t generation;
} dexa__mcp_server_request;

/* The outcome of an HTTP exchange that the server refused for want of
 * authorization: its status (401, 403) and WWW-Authenticate. */
typedef struct dexa__mcp_http_auth {
  long status;
  char challenge[2048];
} dexa__mcp_http_auth;

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
  int last_fail_rc;
  char last_error[512];
  dexa__mcp_stdio *stdio;
  dexa__mcp_http *http;
  int closing;
  dexa__mcp_host *host;   /* the host's store, redirect and log (a reference) */
  dexa__mcp_oauth *oauth; /* HTTP servers: the OAuth client (mcp_oauth.c) */
  int runners;            /* runner threads of tool calls alive (mu) */
};

int dexa__mcp_client_init(dexa__mcp_client *c, const dexa__mcp_server_cfg *cfg,
                          dexa__mcp_host *host);
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
/* The same for the tools/call of a tool call (mcp_calls.c): the server's
 * requests for it go to owner, and its deadlines wait while owner holds
 * them (a question to the person is open). */
int dexa__mcp_request_for(dexa__mcp_client *c, dexa__mcp_call *owner, const char *method,
                          cJSON *params, int64_t timeout_ms, const dexa__mcp_cancel *cancel,
                          cJSON **result, int64_t *rpc_error, char *err, size_t err_size);

/* Answers the server's request msg (whose "id" it takes) with result (or,
 * when result is NULL, with error code and message); result is consumed.
 * Sent on the transport of generation. */
void dexa__mcp_respond(dexa__mcp_client *c, uint64_t generation, const cJSON *msg, cJSON *result,
                       int64_t code, const char *message);

/* The capabilities we declare (elicitation, sampling, roots: as configured). */
cJSON *dexa__mcp_client_capabilities(const dexa__mcp_client *c);
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

/* Handles one message from the server (any transport; text is borrowed).
 * via_id: the id of our request whose HTTP response stream carried it (a
 * server request there belongs to that request), "" otherwise. */
void dexa__mcp_client_on_message(dexa__mcp_client *c, uint64_t generation, const char *via_id,
                                 const char *text, size_t len);
/* The transport of generation failed: every request in flight fails. */
void dexa__mcp_client_on_broken(dexa__mcp_client *c, uint64_t generation, int code,
                                const char *why);
/* Serialises a message for the wire (unformatted, so no raw newline). */
char *dexa__mcp_build_request(dexa__mcp_client *c, const char *id, const char *method,
                              cJSON *params);

int64_t dexa__mcp_now_ms(void);

/* ---- tool calls that may wait for the person (mcp_calls.c) ---- */

struct dexa__mcp_call {
  int refs;                    /* c->mu */
  dexa__mcp_client *c;
  dexa__mcp_call *next_parked; /* the parking's list */
  char key[512];               /* the invocation's idempotency key */
  cJSON *params;               /* the runner's, consumed by it */
  int64_t timeout_ms;
  /* c->mu: */
  int done;
  int rc;
  cJSON *result;
  int64_t rpc_code;
  char err[600];
  dexa__mcp_server_request *inbox;   /* the server's requests not yet taken */
  dexa__mcp_server_request *waiting; /* the request a question is open for */
  int64_t hold_until_ms;             /* the tools/call's deadlines wait until then */
  int64_t parked_until_ms;
  unsigned used; /* the recorded answers this server call was given (a bitmap) */
  int stop;      /* the turn was stopped: the runner cancels the tools/call */
};

/* Sends tools/call (params consumed) on a runner thread for the call of
 * key; *out holds one reference. */
int dexa__mcp_call_start(dexa__mcp_client *c, const char *key, cJSON *params, int64_t timeout_ms,
                         dexa__mcp_call **out);
/* Waits until the server sends a request for the call (returns 1, *req
 * owned by the caller) or the call ends (returns 0: done, rc, result and
 * err are set). stopped(ctx) is polled meanwhile (NULL: never): once it
 * says the turn was stopped, the tools/call is cancelled (its result is
 * DEXA__MCP_E_STOPPED). */
int dexa__mcp_call_next(dexa__mcp_call *call, dexa__mcp_server_request **req,
                        int (*stopped)(void *ctx), void *ctx);
/* Holds the call's deadlines for ms from now (0: releases them). */
void dexa__mcp_call_hold(dexa__mcp_call *call, int64_t ms);
void dexa__mcp_call_unref(dexa__mcp_call *call);
void dexa__mcp_server_request_free(dexa__mcp_server_request *r);
/* Queues the server's request msg (consumed) for owner (c->mu held). */
void dexa__mcp_call_deliver(dexa__mcp_call *owner, cJSON *msg, uint64_t generation);

/* Calls that wait for an answer, by key: a call that asked the person is
 * parked with its open server request; the answer's run of the Step takes
 * it back (on the same worker) and goes on with the same server call. */
typedef struct dexa__mcp_parking {
  pthread_mutex_t mu;
  dexa__mcp_call *head;
} dexa__mcp_parking;

void dexa__mcp_parking_init(dexa__mcp_parking *pk);
/* Parks call (the parking takes its reference) with req open for ms. */
void dexa__mcp_park(dexa__mcp_parking *pk, dexa__mcp_call *call, dexa__mcp_server_request *req,
                    int64_t ms);
/* Takes back the parked call of key (NULL when none: another worker, a
 * restart, or it expired); *req receives its open request. */
dexa__mcp_call *dexa__mcp_unpark(dexa__mcp_parking *pk, const char *key,
                                 dexa__mcp_server_request **req);
/* Drops every parked call (their server calls end with the connection). */
void dexa__mcp_parking_free(dexa__mcp_parking *pk);

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
/* The same; a 401, or a 403 that asks for more scope, is DEXA_E_AUTH with
 * the status and WWW-Authenticate in *auth (may be NULL). */
int dexa__mcp_http_post_auth(dexa__mcp_http *h, uint64_t generation, const char *body,
                             const char *wait_id, const char *method, const char *name,
                             int64_t deadline_ms, dexa__mcp_http_auth *auth, char *err,
                             size_t err_size);
/* The effective deadline of the request with id (progress and an open
 * question move it); 0 when it is no longer in flight. */
int64_t dexa__mcp_request_deadline(dexa__mcp_client *c, const char *id);
/* Opens the GET listen stream while tool calls run (legacy era), waiting
 * up to wait_ms until it is open or refused, so a server request sent
 * right after the tools/call finds it. */
void dexa__mcp_http_listen(dexa__mcp_http *h, int64_t wait_ms);
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

/* The client of an MCP tool source (NULL for any other source): for tests
 * that start a server under one timeout and time its calls under another. */
dexa__mcp_client *dexa__mcp_source_client(dexa_tool_source *s);

#endif
