/* libdexagents: store administration.
 *
 * Checking a store, giving its free space back, and copying its sessions
 * into another store (for example a SQLite file into PostgreSQL). Each
 * takes a store URI as dexa_runtime_options.store does ("sqlite:PATH",
 * PATH, or a backend's URI) and works through the store interface the
 * runtime uses, so it works for every backend that has the operations.
 *
 * Run them with no worker on the stores: a copy reads each session in one
 * read transaction and writes it in one write transaction, so each session
 * is copied whole, but Steps that run meanwhile are not in the copy. */
#ifndef DEXAGENTS_STORE_H
#define DEXAGENTS_STORE_H

#include "common.h"

DEXA_BEGIN_DECLS

/* Checks the store at uri: the backend's own check (SQLite
 * integrity_check), and for every session that its attributes, channel
 * messages, Step rows and events are what the library writes (JSON where
 * JSON belongs, valid states, event sequences in order and within the
 * session's counter). *out (dexa_free) receives the report
 * {"ok":bool,"sessions":N,"attributes":N,"channel_messages":N,"steps":N,
 * "events":N,"problems":[{"session_id"?,"problem"}]} (at most 100 problems
 * listed; "problem_count" has them all). Returns DEXA_OK (no problem),
 * DEXA_E_CORRUPT (problems found; *out says which), DEXA_E_INVALID_ARG,
 * DEXA_E_UNSUPPORTED (a backend without the operations), DEXA_E_IO or
 * DEXA_E_NOMEM; on error errmsg (if not NULL) receives a message. */
DEXA_EXTERN int dexa_store_check(const char *uri, char **out, size_t *out_len, char *errmsg,
                                 size_t errmsg_size);

/* Gives the store's free space back to the system (SQLite: VACUUM, then a
 * checkpoint that truncates the WAL; PostgreSQL: a plain VACUUM (ANALYZE)
 * of the store's tables, which runs beside the workers). *out (dexa_free) receives
 * {"bytes_before":N,"bytes_after":N}. Other processes may keep the store
 * open; it waits up to 10 s for a writer. Returns DEXA_OK,
 * DEXA_E_INVALID_ARG, DEXA_E_UNSUPPORTED, DEXA_E_BUSY, DEXA_E_IO or
 * DEXA_E_NOMEM. */
DEXA_EXTERN int dexa_store_vacuum(const char *uri, char **out, size_t *out_len, char *errmsg,
                                  size_t errmsg_size);

/* Copies every session of the store at src_uri into the store at dst_uri
 * (created when missing): its counters and settings, attributes, channel
 * messages, live Step rows (a Step that was running is resumed after its
 * lease ends, as after a crash) and retained events. Nothing is copied
 * when a session is already in the destination (DEXA_E_ALREADY_EXISTS);
 * each session is copied in one transaction. *out (dexa_free) receives
 * {"sessions":N,"attributes":N,"channel_messages":N,"steps":N,"events":N}.
 * Returns DEXA_OK, DEXA_E_INVALID_ARG (same store twice), DEXA_E_ALREADY_EXISTS,
 * DEXA_E_UNSUPPORTED, DEXA_E_IO, DEXA_E_CORRUPT or DEXA_E_NOMEM. */
DEXA_EXTERN int dexa_store_copy(const char *src_uri, const char *dst_uri, char **out,
                                size_t *out_len, char *errmsg, size_t errmsg_size);

/* Writes into buf (n bytes, always NUL-terminated, cut if too small) the
 * store URI fit for logs and messages: a PostgreSQL URI or conninfo
 * without its password (the "user:password@" part, a "password" query
 * parameter or key); everything else as given, so the server, database
 * and user are still named. Returns DEXA_OK, DEXA_E_INVALID_ARG (a NULL
 * argument or n of 0) or DEXA_E_NOMEM. Added in 1.1. */
DEXA_EXTERN int dexa_store_display_name(const char *uri, char *buf, size_t n);

DEXA_END_DECLS

#endif
