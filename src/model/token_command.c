/* Bearer tokens from a variable or a command (see token_command.h). The
 * command runs in a child with its own pipe: no shell state is shared, its
 * stderr is dropped, and a command that hangs is killed at the deadline. */
#include "model/token_command.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "dexagents/errors.h"

#define MAX_TOKEN_OUTPUT 16384

extern char **environ;

static int64_t mono_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int spawn(const char *command, int *fd, pid_t *pid) {
  int p[2];
  if (pipe2(p, O_CLOEXEC) != 0) return -1;
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, p[1], 1);
  posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
  posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  char *argv[] = {"/bin/sh", "-c", (char *)command, NULL};
  int rc = posix_spawn(pid, "/bin/sh", &fa, NULL, argv, environ);
  posix_spawn_file_actions_destroy(&fa);
  close(p[1]);
  if (rc != 0) {
    close(p[0]);
    return -1;
  }
  *fd = p[0];
  return 0;
}

/* Reads the child's output until EOF or the deadline; 1 when it ended. */
static int read_all(int fd, dexa__buf *out, int64_t deadline) {
  char chunk[1024];
  for (;;) {
    int64_t left = deadline - mono_ms();
    if (left <= 0) return 0;
    struct pollfd pf = {fd, POLLIN, 0};
    int r = poll(&pf, 1, left > 1000 ? 1000 : (int)left);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) continue;
    ssize_t n = read(fd, chunk, sizeof chunk);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return 1;
    if (out->len + (size_t)n <= MAX_TOKEN_OUTPUT) dexa__buf_append(out, chunk, (size_t)n);
  }
}

int dexa__run_token_command(const char *command, int64_t timeout_ms, char **out, char *why,
                            size_t why_size) {
  *out = NULL;
  int fd;
  pid_t pid;
  if (spawn(command, &fd, &pid) != 0) {
    snprintf(why, why_size, "token_command could not start");
    return DEXA_E_AUTH;
  }
  dexa__buf b;
  dexa__buf_init(&b);
  int ended = read_all(fd, &b, mono_ms() + timeout_ms);
  close(fd);
  if (!ended) kill(pid, SIGKILL);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  int rc = DEXA_OK;
  if (!ended) {
    snprintf(why, why_size, "token_command ran out of time (%lld ms)", (long long)timeout_ms);
    rc = DEXA_E_AUTH;
  } else if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    snprintf(why, why_size, "token_command failed (status %d)", WIFEXITED(status) ? WEXITSTATUS(status) : -1);
    rc = DEXA_E_AUTH;
  }
  size_t n = 0;
  while (n < b.len && b.data[n] != '\n' && b.data[n] != '\r') n++; /* the first line */
  while (n && (b.data[n - 1] == ' ' || b.data[n - 1] == '\t')) n--;
  if (rc == DEXA_OK && n == 0) {
    snprintf(why, why_size, "token_command printed no token");
    rc = DEXA_E_AUTH;
  }
  if (rc == DEXA_OK && b.oom) rc = DEXA_E_NOMEM;
  if (rc == DEXA_OK && !(*out = malloc(n + 1))) rc = DEXA_E_NOMEM;
  if (rc == DEXA_OK) {
    memcpy(*out, b.data, n);
    (*out)[n] = '\0';
  }
  if (b.data) memset(b.data, 0, b.len);
  dexa__buf_free(&b);
  return rc;
}

void dexa__token_forget(dexa__client_cfg *cfg) {
  pthread_mutex_lock(&cfg->token.mu);
  if (cfg->token.token) memset(cfg->token.token, 0, strlen(cfg->token.token));
  free(cfg->token.token);
  cfg->token.token = NULL;
  pthread_mutex_unlock(&cfg->token.mu);
}

/* The cached token, refreshed by the command when it is missing or old.
 * One caller runs the command while the others wait for its token. */
static int command_token(dexa__call *call, char **out) {
  dexa__client_cfg *cfg = (dexa__client_cfg *)call->cfg;
  dexa__token_cache *t = &cfg->token;
  int rc = DEXA_OK;
  pthread_mutex_lock(&t->mu);
  if (!t->token || call->now_s >= t->expires_s) {
    char *fresh = NULL;
    rc = dexa__run_token_command(cfg->token_command, cfg->connect_timeout_ms, &fresh, call->err,
                                 sizeof call->err);
    if (rc == DEXA_OK) {
      if (t->token) memset(t->token, 0, strlen(t->token));
      free(t->token);
      t->token = fresh;
      t->expires_s = call->now_s + cfg->token_ttl_s;
    }
  }
  if (rc == DEXA_OK && !(*out = strdup(t->token))) rc = DEXA_E_NOMEM;
  pthread_mutex_unlock(&t->mu);
  return rc;
}

int dexa__auth_google_token(dexa__call *call) {
  const dexa__client_cfg *cfg = call->cfg;
  const char *env = cfg->access_token_env ? cfg->access_token_env : "GOOGLE_CLOUD_ACCESS_TOKEN";
  const char *v = secure_getenv(env);
  char *token = NULL;
  int rc = DEXA_OK;
  if (v && *v) {
    token = strdup(v);
    if (!token) rc = DEXA_E_NOMEM;
  } else if (cfg->token_command) {
    rc = command_token(call, &token);
    call->token_from_command = 1;
  } else {
    snprintf(call->err, sizeof call->err,
             "no access token (set %s, or the token_command option, e.g. "
             "\"gcloud auth print-access-token\")",
             env);
    return DEXA_E_AUTH;
  }
  if (rc == DEXA_OK) {
    dexa__buf h;
    dexa__buf_init(&h);
    dexa__buf_printf(&h, "Bearer %s", token);
    rc = h.oom ? DEXA_E_NOMEM : dexa__call_header(call, "Authorization", h.data);
    if (h.data) memset(h.data, 0, h.len);
    dexa__buf_free(&h);
  }
  if (token) memset(token, 0, strlen(token));
  free(token);
  return rc;
}
