/* The session memo: the session rows an open transaction has touched, kept
 * in memory so that the transaction reads each row once however often its
 * operations ask, and writes a row's counters (event sequence, step order,
 * data version) once, just before it commits, however often they were
 * raised. A batch of Step completions raises them a dozen times per
 * session; each raise used to be a read and an update of the row.
 *
 * Savepoints nest over the memo as over the transaction: rolling one back
 * restores every row as it was at the savepoint and forgets rows first
 * read after it. A backend calls these from its transaction and session
 * operations; nothing here touches the database. */
#ifndef DEXA_STORE_SESSION_MEMO_H
#define DEXA_STORE_SESSION_MEMO_H

#include <stddef.h>
#include <stdint.h>

typedef struct dexa__memo_row {
  char *session_id;
  char *flow_type;
  int64_t skey;
  int64_t created_ms;
  int32_t status;
  int64_t event_seq, step_ord, data_ver;
  int dirty; /* counters changed: to be written before the commit */
  int64_t active_ms; /* the last activity (or the end); written at once when raised */
} dexa__memo_row;

typedef struct dexa__memo_undo dexa__memo_undo;

typedef struct dexa__session_memo {
  dexa__memo_row *rows;
  size_t nrows, rows_cap;
  dexa__memo_undo *undo; /* what to restore, newest last */
  size_t nundo, undo_cap;
  size_t *marks; /* undo length at each open savepoint */
  size_t nmarks, marks_cap;
} dexa__session_memo;

/* The row of session_id, or NULL when the transaction has not read it yet.
 * The pointer holds until the next add, rollback or clear. */
dexa__memo_row *dexa__session_memo_find(dexa__session_memo *m, const char *session_id);
/* Takes a row just read from the database (and its strings). NULL when out
 * of memory: then the row's strings are freed. */
dexa__memo_row *dexa__session_memo_add(dexa__session_memo *m, dexa__memo_row *row);
/* Call before changing a row found or added: records how to undo the
 * change. -1 when out of memory (then change nothing). */
int dexa__session_memo_will_change(dexa__session_memo *m, const dexa__memo_row *row);

/* A savepoint opens: -1 when out of memory (then it must not open). */
int dexa__session_memo_savepoint(dexa__session_memo *m);
void dexa__session_memo_release(dexa__session_memo *m);
void dexa__session_memo_rollback_to(dexa__session_memo *m);
/* After the transaction ends either way, and between operations outside
 * one. */
void dexa__session_memo_clear(dexa__session_memo *m);
void dexa__session_memo_free(dexa__session_memo *m);

#endif
