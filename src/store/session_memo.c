/* The session memo (session_memo.h): a small array of rows, searched from
 * the newest, and an undo log of row images truncated to a mark when a
 * savepoint rolls back. */
#include "store/session_memo.h"

#include <stdlib.h>
#include <string.h>

#include "util/buf.h"

/* A row image before a change, or (added) a row to forget. */
struct dexa__memo_undo {
  size_t row;
  int added;
  dexa__memo_row before; /* strings not owned */
};

static void row_free(dexa__memo_row *row) {
  free(row->session_id);
  free(row->flow_type);
  row->session_id = row->flow_type = NULL;
}

dexa__memo_row *dexa__session_memo_find(dexa__session_memo *m, const char *session_id) {
  for (size_t i = m->nrows; i > 0; i--) {
    if (strcmp(m->rows[i - 1].session_id, session_id) == 0) return &m->rows[i - 1];
  }
  return NULL;
}

/* Outside any savepoint nothing needs undoing: a rollback clears all. */
static int log_undo(dexa__session_memo *m, size_t row, int added) {
  if (m->nmarks == 0) return 0;
  if (dexa__grow_array(&m->undo, m->nundo, &m->undo_cap, sizeof *m->undo) != 0) return -1;
  m->undo[m->nundo++] = (dexa__memo_undo){row, added, m->rows[row]};
  return 0;
}

dexa__memo_row *dexa__session_memo_add(dexa__session_memo *m, dexa__memo_row *row) {
  if (dexa__grow_array(&m->rows, m->nrows, &m->rows_cap, sizeof *m->rows) != 0) {
    row_free(row);
    return NULL;
  }
  m->rows[m->nrows] = *row;
  memset(row, 0, sizeof *row);
  if (log_undo(m, m->nrows, 1) != 0) {
    row_free(&m->rows[m->nrows]);
    return NULL;
  }
  return &m->rows[m->nrows++];
}

int dexa__session_memo_will_change(dexa__session_memo *m, const dexa__memo_row *row) {
  return log_undo(m, (size_t)(row - m->rows), 0);
}

int dexa__session_memo_savepoint(dexa__session_memo *m) {
  if (dexa__grow_array(&m->marks, m->nmarks, &m->marks_cap, sizeof *m->marks) != 0) return -1;
  m->marks[m->nmarks++] = m->nundo;
  return 0;
}

void dexa__session_memo_release(dexa__session_memo *m) {
  if (m->nmarks > 0) m->nmarks--;
  /* Released into the transaction itself: its rollback clears all. */
  if (m->nmarks == 0) m->nundo = 0;
}

void dexa__session_memo_rollback_to(dexa__session_memo *m) {
  if (m->nmarks == 0) {
    dexa__session_memo_clear(m);
    return;
  }
  size_t mark = m->marks[--m->nmarks];
  /* Newest first: a row added after the mark is the last row by then. */
  while (m->nundo > mark) {
    dexa__memo_undo *u = &m->undo[--m->nundo];
    if (u->added) {
      row_free(&m->rows[--m->nrows]);
    } else {
      m->rows[u->row] = u->before;
    }
  }
}

void dexa__session_memo_clear(dexa__session_memo *m) {
  while (m->nrows > 0) row_free(&m->rows[--m->nrows]);
  m->nundo = m->nmarks = 0;
}

void dexa__session_memo_free(dexa__session_memo *m) {
  dexa__session_memo_clear(m);
  free(m->rows);
  free(m->undo);
  free(m->marks);
  memset(m, 0, sizeof *m);
}
