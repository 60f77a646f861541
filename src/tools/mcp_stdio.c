/* stdio transport: the server is a child process started with posix_spawnp
 * (no shell) in its own process group, with pipes for stdin, stdout and
 * stderr (O_CLOEXEC, so no other child inherits them). One reader thread
 * per child splits stdout into lines (one JSON-RPC message each) and hands
 * them to the client, which matches responses to requests by id; stderr is
 * drained and its tail kept for error messages. Writers take the write
 * mutex, one line at a time, with SIGPIPE blocked so a dead child is an
 * error, not a signal, and give up after 10 s on a child that reads nothing. Stopping closes stdin, then sends SIGTERM and
 * SIGKILL to the process group, reaps the child and joins the reader. */
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
#include "tools/mcp_internal.h"

extern char **environ;

#define STDERR_TAIL 2048
#define WRITE_TIMEOUT_MS 10000 /* a server that reads none of its input is broken */

struct dexa__mcp_stdio {
  dexa__mcp_client *client;
  uint64_t generation;
  pid_t pid;
  int in_fd, out_fd, err_fd;
  pthread_t reader;
  int reader_started;
  pthread_mutex_t write_mu;
  pthread_mutex_t state_mu;
  int dead;     /* stdout closed or the reader failed */
  int stopping; /* set by stop: the reader exits */
  char err_tail[STDERR_TAIL];
  size_t err_len;
};

static void close_fd(int *fd) {
  if (*fd >= 0) close(*fd);
  *fd = -1;
}

static void keep_stderr(dexa__mcp_stdio *s, const char *buf, size_t n) {
  pthread_mutex_lock(&s->state_mu);
  if (n >= STDERR_TAIL) {
    buf += n - (STDERR_TAIL - 1);
    n = STDERR_TAIL - 1;
  }
  if (s->err_len + n >= STDERR_TAIL) {
    size_t drop = s->err_len + n - (STDERR_TAIL - 1);
    memmove(s->err_tail, s->err_tail + drop, s->err_len - drop);
    s->err_len -= drop;
  }
  memcpy(s->err_tail + s->err_len, buf, n);
  s->err_len += n;
  s->err_tail[s->err_len] = '\0';
  pthread_mutex_unlock(&s->state_mu);
}

void dexa__mcp_stdio_stderr_tail(dexa__mcp_stdio *s, char *out, size_t size) {
  if (!size) return;
  pthread_mutex_lock(&s->state_mu);
  /* The last non-empty line only: the rest is noise for a message. */
  size_t end = s->err_len;
  while (end > 0 && (s->err_tail[end - 1] == '\n' || s->err_tail[end - 1] == '\r')) end--;
  size_t start = end;
  while (start > 0 && s->err_tail[start - 1] != '\n') start--;
  snprintf(out, size, "%.*s", (int)(end - start), s->err_tail + start);
  pthread_mutex_unlock(&s->state_mu);
}

/* Splits stdout into lines; an oversized line breaks the connection (its
 * id is unknowable, so every request in flight fails). */
static void *reader_main(void *arg) {
  dexa__mcp_stdio *s = arg;
  dexa__buf line;
  dexa__buf_init(&line);
  char buf[65536];
  int code = DEXA_E_IO;
  const char *why = "the server closed its output";
  int out_open = 1, err_open = 1;
  while (out_open) {
    struct pollfd p[2] = {{s->out_fd, POLLIN, 0}, {err_open ? s->err_fd : -1, POLLIN, 0}};
    int r = poll(p, 2, 200);
    pthread_mutex_lock(&s->state_mu);
    int stopping = s->stopping;
    pthread_mutex_unlock(&s->state_mu);
    if (stopping) break;
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) {
      why = "poll failed";
      break;
    }
    if (err_open && (p[1].revents & (POLLIN | POLLHUP | POLLERR))) {
      ssize_t n = read(s->err_fd, buf, sizeof buf);
      if (n > 0) keep_stderr(s, buf, (size_t)n);
      else if (n == 0 || errno != EINTR) err_open = 0;
    }
    if (!(p[0].revents & (POLLIN | POLLHUP | POLLERR))) continue;
    ssize_t n = read(s->out_fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    for (ssize_t i = 0; i < n; i++) {
      if (buf[i] != '\n') {
        if (line.len < DEXA__MCP_MAX_MESSAGE) dexa__buf_putc(&line, buf[i]);
        else if (line.len == DEXA__MCP_MAX_MESSAGE) line.len++; /* mark: over the limit */
        continue;
      }
      if (line.len > DEXA__MCP_MAX_MESSAGE || line.oom) {
        code = DEXA_E_TOO_LARGE;
        why = "the server sent a message over the size limit";
        out_open = 0;
        break;
      }
      size_t len = line.len;
      while (len && line.data[len - 1] == '\r') len--;
      if (len) dexa__mcp_client_on_message(s->client, s->generation, "", line.data, len);
      dexa__buf_reset(&line);
    }
  }
  dexa__buf_free(&line);
  pthread_mutex_lock(&s->state_mu);
  s->dead = 1;
  int stopping = s->stopping;
  pthread_mutex_unlock(&s->state_mu);
  if (!stopping) dexa__mcp_client_on_broken(s->client, s->generation, code, why);
  return NULL;
}

/* environ with the configured variables set over it. */
static char **child_env(const dexa__mcp_server_cfg *cfg) {
  size_t n = 0;
  while (environ && environ[n]) n++;
  char **env = calloc(n + cfg->envc + 1, sizeof *env);
  if (!env) return NULL;
  size_t k = 0;
  for (size_t i = 0; i < n; i++) {
    const char *eq = strchr(environ[i], '=');
    size_t kl = eq ? (size_t)(eq - environ[i]) : strlen(environ[i]);
    int overridden = 0;
    for (size_t j = 0; j < cfg->envc && !overridden; j++)
      overridden = strlen(cfg->env[j].key) == kl && memcmp(cfg->env[j].key, environ[i], kl) == 0;
    if (!overridden) env[k++] = environ[i]; /* borrowed */
  }
  for (size_t j = 0; j < cfg->envc; j++) {
    size_t len = strlen(cfg->env[j].key) + strlen(cfg->env[j].value) + 2;
    char *v = malloc(len);
    if (!v) {
      free(env);
      return NULL; /* the few strings made so far leak only on OOM... */
    }
    snprintf(v, len, "%s=%s", cfg->env[j].key, cfg->env[j].value);
    env[k++] = v;
  }
  env[k] = NULL;
  return env;
}

static void free_env(char **env, const dexa__mcp_server_cfg *cfg) {
  if (!env) return;
  size_t k = 0;
  while (env[k]) k++;
  for (size_t j = 0; j < cfg->envc && j < k; j++) free(env[k - 1 - j]);
  free(env);
}

static int spawn_child(dexa__mcp_stdio *s, const dexa__mcp_server_cfg *cfg, char *err,
                       size_t err_size) {
  int in[2] = {-1, -1}, out[2] = {-1, -1}, er[2] = {-1, -1};
  posix_spawn_file_actions_t fa;
  posix_spawnattr_t attr;
  char **argv = calloc(cfg->argc + 2, sizeof *argv);
  char **env = child_env(cfg);
  int rc = DEXA_E_NOMEM;
  if (!argv || !env) goto done;
  argv[0] = cfg->command;
  for (size_t i = 0; i < cfg->argc; i++) argv[i + 1] = cfg->args[i];
  rc = DEXA_E_IO;
  if (pipe2(in, O_CLOEXEC) || pipe2(out, O_CLOEXEC) || pipe2(er, O_CLOEXEC)) {
    snprintf(err, err_size, "pipe: %s", strerror(errno));
    goto done;
  }
  posix_spawn_file_actions_init(&fa);
  posix_spawnattr_init(&attr);
  posix_spawn_file_actions_adddup2(&fa, in[0], 0);
  posix_spawn_file_actions_adddup2(&fa, out[1], 1);
  posix_spawn_file_actions_adddup2(&fa, er[1], 2);
  if (cfg->cwd) posix_spawn_file_actions_addchdir_np(&fa, cfg->cwd);
  /* Its own process group, so stopping it also stops what it started
   * (npx runs node as a child); default signal mask and dispositions. */
  sigset_t none, all;
  sigemptyset(&none);
  sigfillset(&all);
  posix_spawnattr_setpgroup(&attr, 0);
  posix_spawnattr_setsigmask(&attr, &none);
  posix_spawnattr_setsigdefault(&attr, &all);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK |
                                      POSIX_SPAWN_SETSIGDEF);
  int e = posix_spawnp(&s->pid, cfg->command, &fa, &attr, argv, env);
  posix_spawn_file_actions_destroy(&fa);
  posix_spawnattr_destroy(&attr);
  if (e != 0) {
    s->pid = 0;
    snprintf(err, err_size, "cannot start %s: %s", cfg->command, strerror(e));
    goto done;
  }
  s->in_fd = in[1];
  fcntl(s->in_fd, F_SETFL, fcntl(s->in_fd, F_GETFL) | O_NONBLOCK); /* our end only */
  s->out_fd = out[0];
  s->err_fd = er[0];
  in[1] = out[0] = er[0] = -1;
  rc = DEXA_OK;
done:
  for (int i = 0; i < 2; i++) {
    close_fd(&in[i]);
    close_fd(&out[i]);
    close_fd(&er[i]);
  }
  free(argv);
  free_env(env, cfg);
  return rc;
}

int dexa__mcp_stdio_start(dexa__mcp_stdio **out, dexa__mcp_client *c, uint64_t generation,
                          char *err, size_t err_size) {
  *out = NULL;
  dexa__mcp_stdio *s = calloc(1, sizeof *s);
  if (!s) return DEXA_E_NOMEM;
  s->client = c;
  s->generation = generation;
  s->in_fd = s->out_fd = s->err_fd = -1;
  pthread_mutex_init(&s->write_mu, NULL);
  pthread_mutex_init(&s->state_mu, NULL);
  int rc = spawn_child(s, &c->cfg, err, err_size);
  if (rc == DEXA_OK) {
    if (pthread_create(&s->reader, NULL, reader_main, s) == 0) s->reader_started = 1;
    else {
      snprintf(err, err_size, "cannot start the reader thread");
      rc = DEXA_E_IO;
    }
  }
  if (rc != DEXA_OK) {
    dexa__mcp_stdio_stop(s);
    return rc;
  }
  *out = s;
  return DEXA_OK;
}

int dexa__mcp_stdio_alive(dexa__mcp_stdio *s) {
  pthread_mutex_lock(&s->state_mu);
  int alive = !s->dead;
  pthread_mutex_unlock(&s->state_mu);
  return alive;
}

int dexa__mcp_stdio_send(dexa__mcp_stdio *s, const char *text, size_t len) {
  sigset_t pipe_set, old;
  sigemptyset(&pipe_set);
  sigaddset(&pipe_set, SIGPIPE);
  pthread_mutex_lock(&s->write_mu);
  pthread_sigmask(SIG_BLOCK, &pipe_set, &old);
  int rc = DEXA_OK, got_pipe = 0;
  struct part {
    const char *p;
    size_t n;
  } parts[2] = {{text, len}, {"\n", 1}};
  for (int i = 0; i < 2 && rc == DEXA_OK; i++) {
    const char *p = parts[i].p;
    size_t n = parts[i].n;
    while (n > 0) {
      ssize_t w = s->in_fd >= 0 ? write(s->in_fd, p, n) : -1;
      if (w < 0 && errno == EINTR) continue;
      if (w < 0 && errno == EAGAIN) { /* a full pipe: the server is not reading */
        struct pollfd pf = {s->in_fd, POLLOUT, 0};
        if (poll(&pf, 1, WRITE_TIMEOUT_MS) > 0) continue;
        errno = ETIMEDOUT;
      }
      if (w < 0) {
        got_pipe = errno == EPIPE;
        rc = DEXA_E_IO;
        break;
      }
      p += w;
      n -= (size_t)w;
    }
  }
  if (got_pipe) { /* take the pending SIGPIPE of this thread before unblocking */
    struct timespec zero = {0, 0};
    sigtimedwait(&pipe_set, NULL, &zero);
  }
  pthread_sigmask(SIG_SETMASK, &old, NULL);
  pthread_mutex_unlock(&s->write_mu);
  return rc;
}

/* Waits up to ms for the child to exit, leaving it a zombie (so its pid,
 * and so its process group id, cannot be reused yet); 1 when it exited. */
static int exited_within(pid_t pid, int ms) {
  for (int waited = 0;; waited += 10) {
    siginfo_t si;
    memset(&si, 0, sizeof si);
    int r = waitid(P_PID, (id_t)pid, &si, WEXITED | WNOHANG | WNOWAIT);
    if ((r == 0 && si.si_pid == pid) || (r < 0 && errno == ECHILD)) return 1;
    if (waited >= ms) return 0;
    struct timespec ts = {0, 10 * 1000 * 1000};
    nanosleep(&ts, NULL);
  }
}

void dexa__mcp_stdio_stop(dexa__mcp_stdio *s) {
  if (!s) return;
  pthread_mutex_lock(&s->write_mu);
  close_fd(&s->in_fd); /* EOF on its stdin: the polite way to ask it to exit */
  pthread_mutex_unlock(&s->write_mu);
  if (s->pid > 0) {
    if (!exited_within(s->pid, 300)) {
      kill(-s->pid, SIGTERM);
      if (!exited_within(s->pid, 1000)) kill(-s->pid, SIGKILL);
    }
    kill(-s->pid, SIGKILL); /* what it left behind in its group */
    while (waitpid(s->pid, NULL, 0) < 0 && errno == EINTR) {
    }
  }
  pthread_mutex_lock(&s->state_mu);
  s->stopping = 1;
  pthread_mutex_unlock(&s->state_mu);
  if (s->reader_started) pthread_join(s->reader, NULL);
  close_fd(&s->out_fd);
  close_fd(&s->err_fd);
  pthread_mutex_destroy(&s->write_mu);
  pthread_mutex_destroy(&s->state_mu);
  free(s);
}
