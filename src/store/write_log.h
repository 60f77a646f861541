/* The write log: the attribute writes of a connection's open transaction,
 * kept so that they can go into the session cache once the transaction
 * has committed (session_cache.h). Savepoints nest over it the way they
 * nest over the transaction: rolling one back drops what was logged after
 * it, including the raise of a session's data version.
 *
 * A backend calls these from its transaction and attribute operations;
 * nothing here touches the database. */
#ifndef DEXA_STORE_WRITE_LOG_H
#define DEXA_STORE_WRITE_LOG_H

#include <stddef.h>
#include <stdint.h>

#include "store/session_cache.h"

typedef struct dexa__logged_write dexa__logged_write;
typedef struct dexa__logged_bump dexa__logged_bump;
typedef struct dexa__log_mark dexa__log_mark;

typedef struct dexa__write_log {
  dexa__logged_bump *bumps; /* sessions whose version this transaction raised */
  size_t nbumps, bumps_cap;
  dexa__logged_write *writes;
  size_t nwrites, writes_cap;
  dexa__log_mark *marks; /* one per open savepoint */
  size_t nmarks, marks_cap;
  int broken; /* out of memory while logging: publish forgets instead */
} dexa__write_log;

/* 1 when this transaction has not raised sid's data version yet. */
int dexa__write_log_needs_bump(const dexa__write_log *log, const char *sid);
/* Records that it did: the session's version is now after. */
void dexa__write_log_bumped(dexa__write_log *log, const char *sid, int64_t after);
/* Records a write of key (val NULL: a delete). */
void dexa__write_log_write(dexa__write_log *log, const char *sid, const char *key, size_t klen,
                           const char *val, size_t vlen);

void dexa__write_log_savepoint(dexa__write_log *log);
void dexa__write_log_release(dexa__write_log *log);
void dexa__write_log_rollback_to(dexa__write_log *log);

/* After a successful commit: every logged session goes into the cache at
 * its new version (or out of it). Then, as after a rollback, the log is
 * empty again. */
void dexa__write_log_publish(dexa__write_log *log, dexa__session_cache *cache);
void dexa__write_log_clear(dexa__write_log *log);
void dexa__write_log_free(dexa__write_log *log);

#endif
