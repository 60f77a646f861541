/* The session cache: the attributes of recently used sessions, in memory,
 * so that a Step's dispatch reads them without a database round trip per
 * attribute or a scan of the whole transcript.
 *
 * Coherence comes from the session's data version (sessions.data_ver in
 * SQLite), which every write transaction that changes a session's
 * attributes raises by one, in any process. A cached session carries the
 * version it holds; a reader first reads the store's version (one indexed
 * row) and uses the cache only if it holds that version or a newer one.
 * The transaction that writes a version puts its writes into the cache
 * after it commits (write_log.h), so the next Step of a session finds the
 * state the last one left without reading it back. A session written by
 * another process is read from the store again.
 *
 * Bounded: least recently used sessions are dropped past max_bytes.
 * Thread-safe: one mutex, held only to find and copy. */
#ifndef DEXA_STORE_SESSION_CACHE_H
#define DEXA_STORE_SESSION_CACHE_H

#include <stddef.h>
#include <stdint.h>

#include "dexagents/flow.h"

struct dexa__store_conn;

/* Returned by get and scan when the cache does not hold the session at
 * the version asked for (the caller reads the store). */
#define DEXA__CACHE_MISS 1

typedef struct dexa__session_cache dexa__session_cache;

/* max_bytes 0 makes a cache that holds nothing. */
int dexa__session_cache_new(size_t max_bytes, dexa__session_cache **out);
void dexa__session_cache_free(dexa__session_cache *cache);

/* Makes sure the cache holds the session at its current version, reading
 * every attribute on c in one read transaction when it does not; *ver gets
 * that version. Outside transactions only. */
int dexa__session_cache_load(dexa__session_cache *cache, struct dexa__store_conn *c,
                             const char *sid, int64_t *ver);

/* 1 when the cache holds sid at version ver or newer. */
int dexa__session_cache_holds(dexa__session_cache *cache, const char *sid, int64_t ver);

/* The value of key at version ver or newer, copied into *buf (grown as
 * needed, NUL-terminated). DEXA_E_NOT_FOUND: no such attribute then. */
int dexa__session_cache_get(dexa__session_cache *cache, const char *sid, int64_t ver,
                            const char *key, size_t klen, char **buf, size_t *cap,
                            const char **val, size_t *vlen);

/* Visits the attributes under prefix in key order, as dexa_attr_scan_fn
 * does, from a copy taken in *buf (so visit runs without the lock). */
int dexa__session_cache_scan(dexa__session_cache *cache, const char *sid, int64_t ver,
                             const char *prefix, size_t plen, char **buf, size_t *cap,
                             dexa_attr_visit_fn visit, void *ctx);

/* One committed change: the session moved from version after - 1 to
 * after, and its attribute key became val (NULL: deleted). */
typedef struct dexa__cache_write {
  const char *key;
  size_t klen;
  const char *val;
  size_t vlen;
} dexa__cache_write;

/* Applies a committed transaction's writes of one session, if the cache
 * holds the version they were made on; otherwise forgets the session. */
void dexa__session_cache_apply(dexa__session_cache *cache, const char *sid, int64_t after,
                               const dexa__cache_write *writes, size_t n);

/* Forgets every session (when a transaction's writes could not all be
 * logged, which sessions they touched is not known for sure). */
void dexa__session_cache_clear(dexa__session_cache *cache);

#endif
