/* The Claude Code CLI as a child process of the worker: started with fork
 * and exec in its own process group, spoken to over pipes, one JSON line
 * at a time, and always ended by its group (no orphan outlives a segment).
 * One owner: the thread running the segment. */
#ifndef DEXA_HARNESS_CC_PROCESS_H
#define DEXA_HARNESS_CC_PROCESS_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "util/buf.h"

#define DEXA__CC_STDERR_TAIL 2048

typedef struct dexa__cc_proc {
  pid_t pid; /* 0 when none runs; the process group id too */
  int in_fd, out_fd, err_fd;
  dexa__buf out;   /* stdout bytes read and not yet returned */
  size_t consumed; /* bytes of out already returned as lines */
  int out_eof;
  char err_tail[DEXA__CC_STDERR_TAIL];
  size_t err_len;
} dexa__cc_proc;

/* Starts argv[0] (a path, or a name found on envp's PATH) with envp in cwd
 * (NULL: the worker's). Returns DEXA_OK, DEXA_E_NOT_FOUND (no such
 * executable), DEXA_E_IO or DEXA_E_NOMEM, with a message in err. */
int dexa__cc_proc_start(dexa__cc_proc *p, char *const argv[], char *const envp[],
                        const char *cwd, char *err, size_t err_size);

/* Writes len bytes (a whole line) to its stdin, waiting at most 10 s for a
 * child that reads nothing. Returns DEXA_OK or DEXA_E_IO. */
int dexa__cc_proc_write(dexa__cc_proc *p, const char *data, size_t len);

/* Waits up to wait_ms for a line of its stdout. Returns 1 with *line and
 * *len (the line without its newline, valid until the next call), 0 when no
 * line came in time, -1 at the end of its output, or DEXA_E_TOO_LARGE. */
int dexa__cc_proc_read_line(dexa__cc_proc *p, int wait_ms, const char **line, size_t *len);

/* Closes its stdin: the CLI ends once its turn is done. */
void dexa__cc_proc_close_input(dexa__cc_proc *p);

/* Ends it: stdin closed, then (unless it already exited within wait_ms)
 * SIGTERM to its process group, SIGKILL after grace_ms; reaps it and kills
 * whatever of its group is left, so nothing it started outlives it. Safe
 * to call twice. */
void dexa__cc_proc_stop(dexa__cc_proc *p, int64_t wait_ms, int64_t grace_ms);

/* The last line it wrote to stderr ("" when none). */
void dexa__cc_proc_stderr_tail(const dexa__cc_proc *p, char *out, size_t size);

#endif
