/* The CLI's process: fork and exec (not posix_spawn: the child asks the
 * kernel to kill it when the worker dies, so a worker killed with SIGKILL
 * leaves no CLI behind), its own process group (a Stop ends what the CLI
 * started too: Bash commands, MCP servers), pipes with O_CLOEXEC so no
 * other child inherits them. Everything the child does between fork and
 * exec is async-signal-safe; argv, envp and the path are built before. */
#include "harness/cc_process.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#ifdef __linux__
#include <sys/prctl.h>
#endif

#include "dexagents/errors.h"

#define WRITE_TIMEOUT_MS 10000
#define MAX_LINE ((size_t)256 << 20) /* a transcript_mirror frame may be large */

static int64_t now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void close_fd(int *fd) {
  if (*fd >= 0) close(*fd);
  *fd = -1;
}

/* The executable: name itself when it has a slash, else the first match on
 * the PATH of envp (the child's environment decides, as execvp would). */
static char *resolve(const char *name, char *const envp[]) {
  if (strchr(name, '/')) return access(name, X_OK) == 0 ? strdup(name) : NULL;
  const char *path = "/usr/local/bin:/usr/bin:/bin";
  for (size_t i = 0; envp[i]; i++)
    if (strncmp(envp[i], "PATH=", 5) == 0) path = envp[i] + 5;
  for (const char *p = path; *p;) {
    const char *end = strchr(p, ':');
    size_t n = end ? (size_t)(end - p) : strlen(p);
    size_t len = n + strlen(name) + 2;
    char *full = malloc(len);
    if (!full) return NULL;
    snprintf(full, len, "%.*s/%s", (int)n, n ? p : ".", name);
    struct stat st;
    if (stat(full, &st) == 0 && S_ISREG(st.st_mode) && access(full, X_OK) == 0) return full;
    free(full);
    p += n + (end ? 1 : 0);
  }
  return NULL;
}

/* In the child: its own group, death with the worker, the pipes as its
 * standard streams, default signals. Never returns. */
static void child_exec(const char *exe, char *const argv[], char *const envp[], const char *cwd,
                       pid_t parent, const int in[2], const int out[2], const int er[2]) {
  setpgid(0, 0);
#ifdef __linux__
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (getppid() != parent) _exit(127); /* the worker died before prctl */
#else
  (void)parent;
#endif
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, NULL);
  signal(SIGPIPE, SIG_DFL);
  if (dup2(in[0], 0) < 0 || dup2(out[1], 1) < 0 || dup2(er[1], 2) < 0) _exit(127);
  if (cwd && chdir(cwd) != 0) _exit(126);
  execve(exe, argv, envp);
  _exit(127);
}

int dexa__cc_proc_start(dexa__cc_proc *p, char *const argv[], char *const envp[],
                        const char *cwd, char *err, size_t n) {
  memset(p, 0, sizeof *p);
  p->in_fd = p->out_fd = p->err_fd = -1;
  dexa__buf_init(&p->out);
  int in[2] = {-1, -1}, out[2] = {-1, -1}, er[2] = {-1, -1};
  int rc = DEXA_E_NOT_FOUND;
  char *exe = resolve(argv[0], envp);
  if (!exe) {
    snprintf(err, n, "the Claude Code CLI \"%s\" was not found or is not executable", argv[0]);
    goto cleanup;
  }
  rc = DEXA_E_IO;
  if (pipe2(in, O_CLOEXEC) || pipe2(out, O_CLOEXEC) || pipe2(er, O_CLOEXEC)) {
    snprintf(err, n, "pipe: %s", strerror(errno));
    goto cleanup;
  }
  pid_t parent = getpid();
  pid_t pid = fork();
  if (pid < 0) {
    snprintf(err, n, "fork: %s", strerror(errno));
    goto cleanup;
  }
  if (pid == 0) child_exec(exe, argv, envp, cwd, parent, in, out, er);
  setpgid(pid, pid); /* also here: no race with a kill of the group */
  p->pid = pid;
  p->in_fd = in[1];
  p->out_fd = out[0];
  p->err_fd = er[0];
  in[1] = out[0] = er[0] = -1;
  fcntl(p->in_fd, F_SETFL, fcntl(p->in_fd, F_GETFL) | O_NONBLOCK);
  rc = DEXA_OK;
cleanup:
  for (int i = 0; i < 2; i++) {
    close_fd(&in[i]);
    close_fd(&out[i]);
    close_fd(&er[i]);
  }
  free(exe);
  return rc;
}

/* SIGPIPE blocked for this thread while writing: a dead child is EPIPE. */
int dexa__cc_proc_write(dexa__cc_proc *p, const char *data, size_t len) {
  if (p->in_fd < 0) return DEXA_E_IO;
  sigset_t pipe_set, old;
  sigemptyset(&pipe_set);
  sigaddset(&pipe_set, SIGPIPE);
  pthread_sigmask(SIG_BLOCK, &pipe_set, &old);
  int rc = DEXA_OK;
  int64_t deadline = now_ms() + WRITE_TIMEOUT_MS;
  while (len > 0) {
    ssize_t w = write(p->in_fd, data, len);
    if (w > 0) {
      data += w;
      len -= (size_t)w;
      continue;
    }
    if (w < 0 && errno == EINTR) continue;
    int64_t left = deadline - now_ms();
    if (w < 0 && errno == EAGAIN && left > 0) {
      struct pollfd pf = {p->in_fd, POLLOUT, 0};
      poll(&pf, 1, (int)left);
      continue;
    }
    rc = DEXA_E_IO;
    break;
  }
  struct timespec zero = {0, 0};
  while (sigtimedwait(&pipe_set, NULL, &zero) > 0) {
  }
  pthread_sigmask(SIG_SETMASK, &old, NULL);
  return rc;
}

static void keep_stderr(dexa__cc_proc *p, const char *buf, size_t n) {
  const size_t cap = DEXA__CC_STDERR_TAIL - 1;
  if (n >= cap) {
    buf += n - cap;
    n = cap;
  }
  if (p->err_len + n > cap) {
    size_t drop = p->err_len + n - cap;
    memmove(p->err_tail, p->err_tail + drop, p->err_len - drop);
    p->err_len -= drop;
  }
  memcpy(p->err_tail + p->err_len, buf, n);
  p->err_len += n;
  p->err_tail[p->err_len] = '\0';
}

/* A complete line in the buffer, if any. */
static int next_line(dexa__cc_proc *p, const char **line, size_t *len) {
  if (p->consumed >= p->out.len) return 0;
  char *start = p->out.data + p->consumed;
  char *nl = memchr(start, '\n', p->out.len - p->consumed);
  if (!nl) return 0;
  *nl = '\0';
  *line = start;
  *len = (size_t)(nl - start);
  while (*len && start[*len - 1] == '\r') (*len)--;
  p->consumed += (size_t)(nl - start) + 1;
  return 1;
}

/* Drops the lines already returned, so the buffer holds one line at most. */
static void compact(dexa__cc_proc *p) {
  if (!p->consumed) return;
  memmove(p->out.data, p->out.data + p->consumed, p->out.len - p->consumed);
  p->out.len -= p->consumed;
  p->consumed = 0;
}

int dexa__cc_proc_read_line(dexa__cc_proc *p, int wait_ms, const char **line, size_t *len) {
  if (next_line(p, line, len)) return 1;
  compact(p);
  if (p->out_eof) return -1;
  int64_t deadline = now_ms() + wait_ms;
  char buf[65536];
  for (;;) {
    struct pollfd pf[2] = {{p->out_fd, POLLIN, 0}, {p->err_fd, POLLIN, 0}};
    int64_t left = deadline - now_ms();
    int r = poll(pf, 2, left > 0 ? (int)left : 0);
    if (r < 0 && errno != EINTR) return -1;
    if (r > 0 && (pf[1].revents & (POLLIN | POLLHUP | POLLERR))) {
      ssize_t k = read(p->err_fd, buf, sizeof buf);
      if (k > 0) keep_stderr(p, buf, (size_t)k);
      else if (k == 0 || errno != EINTR) close_fd(&p->err_fd);
    }
    if (r > 0 && (pf[0].revents & (POLLIN | POLLHUP | POLLERR))) {
      ssize_t k = read(p->out_fd, buf, sizeof buf);
      if (k == 0 || (k < 0 && errno != EINTR && errno != EAGAIN)) {
        p->out_eof = 1;
        return -1;
      }
      if (k > 0) {
        dexa__buf_append(&p->out, buf, (size_t)k);
        if (p->out.oom || p->out.len > MAX_LINE) return DEXA_E_TOO_LARGE;
        if (next_line(p, line, len)) return 1;
      }
    }
    if (now_ms() >= deadline) return 0;
  }
}

void dexa__cc_proc_close_input(dexa__cc_proc *p) { close_fd(&p->in_fd); }

/* 1 when the child was reaped within wait_ms. */
static int reap_within(dexa__cc_proc *p, int64_t wait_ms) {
  int64_t deadline = now_ms() + wait_ms;
  for (;;) {
    pid_t r = waitpid(p->pid, NULL, WNOHANG);
    if (r == p->pid || (r < 0 && errno == ECHILD)) return 1;
    if (now_ms() >= deadline) return 0;
    /* Drain its output meanwhile: a child blocked on a full pipe never
     * exits. */
    const char *line;
    size_t len;
    if (!p->out_eof && p->out_fd >= 0) {
      if (dexa__cc_proc_read_line(p, 20, &line, &len) < 0) p->out_eof = 1;
    } else {
      struct timespec ts = {0, 20 * 1000000};
      nanosleep(&ts, NULL);
    }
  }
}

void dexa__cc_proc_stop(dexa__cc_proc *p, int64_t wait_ms, int64_t grace_ms) {
  if (p->pid <= 0) goto fds;
  close_fd(&p->in_fd);
  if (!reap_within(p, wait_ms)) {
    kill(-p->pid, SIGTERM);
    if (!reap_within(p, grace_ms)) {
      kill(-p->pid, SIGKILL);
      waitpid(p->pid, NULL, 0);
    }
  }
  /* Whatever it started in its group and left behind. */
  kill(-p->pid, SIGKILL);
  p->pid = 0;
fds:
  close_fd(&p->in_fd);
  close_fd(&p->out_fd);
  close_fd(&p->err_fd);
  dexa__buf_free(&p->out);
  p->consumed = 0;
}

void dexa__cc_proc_stderr_tail(const dexa__cc_proc *p, char *out, size_t size) {
  if (!size) return;
  size_t end = p->err_len;
  while (end > 0 && (p->err_tail[end - 1] == '\n' || p->err_tail[end - 1] == '\r')) end--;
  size_t start = end;
  while (start > 0 && p->err_tail[start - 1] != '\n') start--;
  snprintf(out, size, "%.*s", (int)(end - start), p->err_tail + start);
}
