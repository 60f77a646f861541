/* dexagents worker: runs the Steps of a store and nothing else, so a store
 * can have as many worker processes as it needs (on PostgreSQL, on many
 * machines). SIGTERM or SIGINT drains it: no new Step starts and each
 * running one finishes and is committed; a second signal or the drain
 * timeout ends it at once, and other workers resume what it held once
 * its leases end (a single-attempt Step cut off is recorded as an unknown
 * outcome, never run again). */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli/cli.h"

typedef struct drain {
  dexa_runtime *rt;
  pthread_mutex_t mu;
  pthread_cond_t cv;
  int done;
} drain;

static void *drain_main(void *arg) {
  drain *d = arg;
  dexa_runtime_stop(d->rt); /* waits for each worker's current Step */
  pthread_mutex_lock(&d->mu);
  d->done = 1;
  pthread_cond_broadcast(&d->cv);
  pthread_mutex_unlock(&d->mu);
  return NULL;
}

static int drained(drain *d) {
  pthread_mutex_lock(&d->mu);
  int done = d->done;
  pthread_mutex_unlock(&d->mu);
  return done;
}

/* Waits for the drain, a second signal or the deadline. 1 when drained. */
static int wait_drain(drain *d, const sigset_t *sigs, long timeout_s) {
  struct timespec start;
  clock_gettime(CLOCK_MONOTONIC, &start);
  while (!drained(d)) {
    struct timespec now, tick = {0, 100 * 1000 * 1000};
    siginfo_t info;
    if (sigtimedwait(sigs, &info, &tick) > 0) {
      fprintf(stderr, "dexagents worker: second signal: stopping without waiting\n");
      return 0;
    }
    clock_gettime(CLOCK_MONOTONIC, &now);
    if (now.tv_sec - start.tv_sec >= timeout_s) {
      fprintf(stderr, "dexagents worker: the drain took over %ld s: stopping without waiting\n",
              timeout_s);
      return 0;
    }
  }
  return 1;
}

int cmd_worker(int argc, char **argv) {
  cli_globals g = {NULL, NULL, 0, -1, NULL, NULL, NULL};
  const char *threads_s = NULL, *drain_s = NULL, *pos[1];
  int npos;
  const cli_opt opts[] = {{"--threads", 1, &threads_s, NULL},
                          {"--drain-timeout", 1, &drain_s, NULL},
                          {NULL, 0, NULL, NULL}};
  int rc = cli_parse(argc, argv, 2, &g, opts, pos, 0, &npos, "worker");
  if (rc != CLI_OK) return rc;
  long threads = 0, drain_s_n = 60;
  if (threads_s && cli_int("--threads", threads_s, 256, &threads) != CLI_OK) return CLI_USAGE;
  if (drain_s && cli_int("--drain-timeout", drain_s, 86400, &drain_s_n) != CLI_OK) return CLI_USAGE;
  /* The signals go to sigwait below, never to a worker thread. */
  sigset_t sigs;
  sigemptyset(&sigs);
  sigaddset(&sigs, SIGINT);
  sigaddset(&sigs, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &sigs, NULL);
  signal(SIGPIPE, SIG_IGN);
  cli_app a;
  rc = cli_app_open(&a, &g, 1);
  if (rc == CLI_OK) rc = cli_app_start(&a, threads ? (int)threads : a.cfg.threads);
  if (rc != CLI_OK) {
    cli_app_close(&a);
    return rc;
  }
  fprintf(stderr, "dexagents worker: %d threads on %s (pid %ld)\n",
          threads ? (int)threads : a.cfg.threads, a.cfg.store, (long)getpid());
  int sig = 0;
  sigwait(&sigs, &sig);
  fprintf(stderr, "dexagents worker: %s: draining (running Steps finish, no new one starts)\n",
          sig == SIGTERM ? "SIGTERM" : "SIGINT");
  drain d = {a.rt, PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0};
  pthread_t t;
  if (pthread_create(&t, NULL, drain_main, &d) != 0) {
    cli_app_close(&a);
    return CLI_FAIL;
  }
  if (!wait_drain(&d, &sigs, drain_s_n)) {
    /* Leave the threads running: the process ends, their leases expire. */
    fflush(stderr);
    _exit(CLI_TIMEOUT);
  }
  pthread_join(t, NULL);
  a.started = 0; /* stopped by the drain */
  cli_app_close(&a);
  fprintf(stderr, "dexagents worker: drained\n");
  return CLI_OK;
}
