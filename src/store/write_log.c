/* The write log (write_log.h): three growing arrays, truncated to a mark
 * when a savepoint rolls back. */
#include "store/write_log.h"

#include <stdlib.h>
#include <string.h>

#include "util/buf.h"

struct dexa__logged_bump {
  char *sid;
  int64_t after;
};

struct dexa__logged_write {
  size_t bump; /* the session, as its index in bumps */
  char *block; /* key bytes, then the value */
  size_t klen, vlen;
  int deleted;
};

struct dexa__log_mark {
  size_t nbumps, nwrites;
};

static size_t find_bump(const dexa__write_log *log, const char *sid) {
  for (size_t i = log->nbumps; i > 0; i--) {
    if (strcmp(log->bumps[i - 1].sid, sid) == 0) return i - 1;
  }
  return SIZE_MAX;
}

int dexa__write_log_needs_bump(const dexa__write_log *log, const char *sid) {
  return find_bump(log, sid) == SIZE_MAX;
}

void dexa__write_log_bumped(dexa__write_log *log, const char *sid, int64_t after) {
  char *copy = strdup(sid);
  if (!copy ||
      dexa__grow_array(&log->bumps, log->nbumps, &log->bumps_cap, sizeof *log->bumps) != 0) {
    free(copy);
    log->broken = 1;
    return;
  }
  log->bumps[log->nbumps++] = (dexa__logged_bump){copy, after};
}

void dexa__write_log_write(dexa__write_log *log, const char *sid, const char *key, size_t klen,
                           const char *val, size_t vlen) {
  size_t bump = find_bump(log, sid);
  if (!val) vlen = 0;
  char *block = malloc(klen + vlen + 1);
  if (bump == SIZE_MAX || !block ||
      dexa__grow_array(&log->writes, log->nwrites, &log->writes_cap, sizeof *log->writes) != 0) {
    free(block);
    log->broken = 1;
    return;
  }
  if (klen) memcpy(block, key, klen);
  if (vlen) memcpy(block + klen, val, vlen);
  log->writes[log->nwrites++] = (dexa__logged_write){bump, block, klen, vlen, val == NULL};
}

static void truncate_to(dexa__write_log *log, size_t nbumps, size_t nwrites) {
  while (log->nwrites > nwrites) free(log->writes[--log->nwrites].block);
  while (log->nbumps > nbumps) free(log->bumps[--log->nbumps].sid);
}

void dexa__write_log_savepoint(dexa__write_log *log) {
  if (dexa__grow_array(&log->marks, log->nmarks, &log->marks_cap, sizeof *log->marks) != 0) {
    /* Without a mark a rollback cannot be followed: the log is broken, and
     * the mark count still has to match the savepoints. */
    log->broken = 1;
    return;
  }
  log->marks[log->nmarks++] = (dexa__log_mark){log->nbumps, log->nwrites};
}

void dexa__write_log_release(dexa__write_log *log) {
  if (log->nmarks > 0) log->nmarks--;
}

void dexa__write_log_rollback_to(dexa__write_log *log) {
  if (log->nmarks == 0) {
    log->broken = 1;
    return;
  }
  dexa__log_mark m = log->marks[--log->nmarks];
  truncate_to(log, m.nbumps, m.nwrites);
}

void dexa__write_log_clear(dexa__write_log *log) {
  truncate_to(log, 0, 0);
  log->nmarks = 0;
  log->broken = 0;
}

void dexa__write_log_publish(dexa__write_log *log, dexa__session_cache *cache) {
  dexa__cache_write *w = log->nwrites ? malloc(log->nwrites * sizeof *w) : NULL;
  if (log->broken || (log->nwrites && !w)) {
    dexa__session_cache_clear(cache);
  } else {
    for (size_t b = 0; b < log->nbumps; b++) {
      size_t n = 0;
      for (size_t i = 0; i < log->nwrites; i++) {
        const dexa__logged_write *lw = &log->writes[i];
        if (lw->bump != b) continue;
        w[n++] = (dexa__cache_write){lw->block, lw->klen, lw->deleted ? NULL : lw->block + lw->klen,
                                     lw->vlen};
      }
      dexa__session_cache_apply(cache, log->bumps[b].sid, log->bumps[b].after, w, n);
    }
  }
  free(w);
  dexa__write_log_clear(log);
}

void dexa__write_log_free(dexa__write_log *log) {
  dexa__write_log_clear(log);
  free(log->bumps);
  free(log->writes);
  free(log->marks);
  memset(log, 0, sizeof *log);
}
