/* The session memo (store/session_memo.c) inside the SQLite store: a write
 * transaction reads a session's row once, raises its counters in memory and
 * writes them before it commits; savepoints roll the memo back with the
 * database; outside a transaction a change is written at once; statements
 * given the memo's skey touch the right session. Each check reads the
 * result through a second store on the same file, as another process would,
 * so it sees only what was committed.
 * test-needs: sqlite postgresql */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dexagents/errors.h"
#include "store/store.h"
#include "support/temp_store.h"
#include "testing.h"

static char path[512];

typedef temp_side side;

/* A store on the file of name (a new one when fresh), as one process. */
static int open_side(const char *name, side *s, int fresh) {
  if (fresh) {
    char file[64];
    snprintf(file, sizeof file, "memo-%s", name);
    temp_store_path(path, sizeof path, file);
  }
  return temp_side_open(s, path, 0);
}

/* Two connections (two processes' worth) on one new store. A store that
 * cannot be opened fails the test: it must never pass by doing nothing. */
static int open_both(const char *name, side *a, side *b) {
  if (open_side(name, a, 1) == DEXA_OK && open_side(name, b, 0) == DEXA_OK) return 1;
  fprintf(stderr, "    cannot open the test store %s\n", path);
  t_current_failed = 1;
  return 0;
}

static int add_sessions(dexa__store_conn *c, const char *a, const char *b) {
  int rc = c->ops->begin_write(c);
  if (rc == DEXA_OK) rc = c->ops->session_insert(c, a, "F", 1, "{}", 2);
  if (rc == DEXA_OK && b) rc = c->ops->session_insert(c, b, "F", 2, "{}", 2);
  if (rc == DEXA_OK) return c->ops->commit(c);
  c->ops->rollback(c);
  return rc;
}

/* The committed row of sid as "status/event_seq/data_ver", and with_ord
 * the next step order (taken in a write transaction that is rolled back). */
static const char *committed_row(side *other, const char *sid, int with_ord) {
  static char out[96];
  dexa__store_conn *c = other->conn;
  dexa__session_row s;
  int64_t ord = -1;
  int rc = c->ops->session_get(c, sid, &s);
  if (rc != DEXA_OK) {
    snprintf(out, sizeof out, "%s", dexa_strerror(rc));
    return out;
  }
  if (with_ord && c->ops->begin_write(c) == DEXA_OK) {
    c->ops->session_next_ord(c, sid, &ord);
    c->ops->rollback(c);
  }
  int n = snprintf(out, sizeof out, "%d/%lld/%lld", (int)s.status, (long long)s.event_seq,
                   (long long)s.data_ver);
  if (with_ord) snprintf(out + n, sizeof out - (size_t)n, " next %lld", (long long)ord);
  dexa__session_row_free(&s);
  return out;
}

static const char *committed(side *other, const char *sid) { return committed_row(other, sid, 1); }

static void test_counters_are_raised_in_memory_and_written_at_commit(void) {
  side a = {0}, b = {0};
  if (!open_both("commit", &a, &b)) goto done;
  dexa__store_conn *c = a.conn;
  CHECK_EQ_INT(add_sessions(c, "s1", NULL), DEXA_OK);
  int64_t seq = 0, ord = 0;
  CHECK_EQ_INT(c->ops->begin_write(c), DEXA_OK);
  CHECK_EQ_INT(c->ops->session_bump_events(c, "s1", 2, &seq), DEXA_OK);
  CHECK_EQ_INT(c->ops->session_bump_events(c, "s1", 3, &seq), DEXA_OK);
  CHECK_EQ_INT(seq, 5);
  CHECK_EQ_INT(c->ops->session_next_ord(c, "s1", &ord), DEXA_OK);
  CHECK_EQ_INT(c->ops->session_next_ord(c, "s1", &ord), DEXA_OK);
  CHECK_EQ_INT(ord, 2);
  CHECK_EQ_INT(c->ops->attr_put(c, "s1", "k", 1, "1", 1), DEXA_OK);
  CHECK_EQ_INT(c->ops->attr_put(c, "s1", "j", 1, "2", 1), DEXA_OK);
  /* The transaction sees its own counters ... */
  dexa__session_row s;
  CHECK_EQ_INT(c->ops->session_get(c, "s1", &s), DEXA_OK);
  CHECK_EQ_INT(s.event_seq, 5);
  CHECK_EQ_INT(s.data_ver, 1);
  dexa__session_row_free(&s);
  int64_t ver = 0;
  CHECK_EQ_INT(c->ops->session_data_version(c, "s1", &ver), DEXA_OK);
  CHECK_EQ_INT(ver, 1);
  /* ... another process sees them only once they are committed. */
  CHECK_STR(committed_row(&b, "s1", 0), "0/0/0");
  CHECK_EQ_INT(c->ops->commit(c), DEXA_OK);
  CHECK_STR(committed(&b, "s1"), "0/5/1 next 3");
  /* A missing session is refused as before. */
  CHECK_EQ_INT(c->ops->begin_write(c), DEXA_OK);
  CHECK_EQ_INT(c->ops->session_next_ord(c, "nope", &ord), DEXA_E_NOT_FOUND);
  CHECK_EQ_INT(c->ops->attr_put(c, "nope", "k", 1, "1", 1), DEXA_E_NOT_FOUND);
  CHECK_EQ_INT(c->ops->commit(c), DEXA_OK);
done:
  temp_side_close(&a);
  temp_side_close(&b);
  temp_store_remove(path);
}

static void test_a_rolled_back_savepoint_restores_the_rows(void) {
  side a = {0}, b = {0};
  if (!open_both("savepoint", &a, &b)) goto done;
  dexa__store_conn *c = a.conn;
  CHECK_EQ_INT(add_sessions(c, "s1", "s2"), DEXA_OK);
  int64_t seq = 0, ord = 0;
  CHECK_EQ_INT(c->ops->begin_write(c), DEXA_OK);
  CHECK_EQ_INT(c->ops->session_bump_events(c, "s1", 1, &seq), DEXA_OK);
  CHECK_EQ_INT(c->ops->savepoint(c), DEXA_OK);
  CHECK_EQ_INT(c->ops->session_bump_events(c, "s1", 4, &seq), DEXA_OK);
  CHECK_EQ_INT(c->ops->session_set_status(c, "s1", 2), DEXA_OK);
  /* s2 is first read inside the savepoint, s3 is created inside it. */
  CHECK_EQ_INT(c->ops->session_next_ord(c, "s2", &ord), DEXA_OK);
  CHECK_EQ_INT(c->ops->session_insert(c, "s3", "F", 3, "{}", 2), DEXA_OK);
  CHECK_EQ_INT(c->ops->session_next_ord(c, "s3", &ord), DEXA_OK);
  CHECK_EQ_INT(c->ops->savepoint(c), DEXA_OK);
  CHECK_EQ_INT(c->ops->session_bump_events(c, "s2", 7, &seq), DEXA_OK);
  CHECK_EQ_INT(c->ops->release(c), DEXA_OK);
  /* Rolling back the outer savepoint undoes the released inner one too. */
  CHECK_EQ_INT(c->ops->rollback_to(c), DEXA_OK);
  dexa__session_row s;
  CHECK_EQ_INT(c->ops->session_get(c, "s1", &s), DEXA_OK);
  CHECK_EQ_INT(s.event_seq, 1);
  CHECK_EQ_INT(s.status, 0);
  dexa__session_row_free(&s);
  CHECK_EQ_INT(c->ops->session_get(c, "s3", &s), DEXA_E_NOT_FOUND);
  CHECK_EQ_INT(c->ops->session_next_ord(c, "s2", &ord), DEXA_OK);
  CHECK_EQ_INT(ord, 1);
  CHECK_EQ_INT(c->ops->commit(c), DEXA_OK);
  CHECK_STR(committed(&b, "s1"), "0/1/0 next 1");
  CHECK_STR(committed(&b, "s2"), "0/0/0 next 2");
  CHECK_STR(committed(&b, "s3"), "not found");
done:
  temp_side_close(&a);
  temp_side_close(&b);
  temp_store_remove(path);
}

static int see_session(void *ctx, const dexa__session_row *row) {
  char *out = ctx;
  size_t n = strlen(out);
  snprintf(out + n, 128 - n, "%s:%lld ", row->session_id, (long long)row->event_seq);
  return DEXA_OK;
}

/* session_list reads the table, so the memo's counters go to it first, in
 * the open savepoint; rolling that back must leave them to the commit. */
static void test_counters_written_early_survive_a_savepoint_rollback(void) {
  side a = {0}, b = {0};
  if (!open_both("early", &a, &b)) goto done;
  dexa__store_conn *c = a.conn;
  CHECK_EQ_INT(add_sessions(c, "s1", NULL), DEXA_OK);
  int64_t seq = 0;
  char listed[128] = "";
  CHECK_EQ_INT(c->ops->begin_write(c), DEXA_OK);
  CHECK_EQ_INT(c->ops->session_bump_events(c, "s1", 3, &seq), DEXA_OK);
  CHECK_EQ_INT(c->ops->savepoint(c), DEXA_OK);
  CHECK_EQ_INT(c->ops->session_list(c, 0, NULL, 10, see_session, listed), DEXA_OK);
  CHECK_STR(listed, "s1:3 ");
  CHECK_EQ_INT(c->ops->rollback_to(c), DEXA_OK);
  CHECK_EQ_INT(c->ops->commit(c), DEXA_OK);
  CHECK_STR(committed(&b, "s1"), "0/3/0 next 1");
done:
  temp_side_close(&a);
  temp_side_close(&b);
  temp_store_remove(path);
}

static void test_outside_a_transaction_a_change_is_written_at_once(void) {
  side a = {0}, b = {0};
  if (!open_both("autocommit", &a, &b)) goto done;
  dexa__store_conn *c = a.conn;
  CHECK_EQ_INT(add_sessions(c, "s1", NULL), DEXA_OK);
  int64_t seq = 0;
  CHECK_EQ_INT(c->ops->session_bump_events(c, "s1", 2, &seq), DEXA_OK);
  CHECK_STR(committed(&b, "s1"), "0/2/0 next 1");
  CHECK_EQ_INT(c->ops->attr_put(c, "s1", "k", 1, "1", 1), DEXA_OK);
  CHECK_STR(committed(&b, "s1"), "0/2/1 next 1");
  /* Another process raises it meanwhile: the next read here sees that. */
  CHECK_EQ_INT(b.conn->ops->session_bump_events(b.conn, "s1", 5, &seq), DEXA_OK);
  dexa__session_row s;
  CHECK_EQ_INT(c->ops->session_get(c, "s1", &s), DEXA_OK);
  CHECK_EQ_INT(s.event_seq, 7);
  dexa__session_row_free(&s);
done:
  temp_side_close(&a);
  temp_side_close(&b);
  temp_store_remove(path);
}

static int see_value(void *ctx, int64_t seq, const char *json, size_t len) {
  char *out = ctx;
  size_t n = strlen(out);
  snprintf(out + n, 128 - n, "%lld=%.*s ", (long long)seq, (int)len, json);
  return DEXA_OK;
}

static int see_attr(void *ctx, const char *key, size_t klen, const char *val, size_t vlen) {
  char *out = ctx;
  size_t n = strlen(out);
  snprintf(out + n, 128 - n, "%.*s=%.*s ", (int)klen, key, (int)vlen, val);
  return 0;
}

/* Two sessions written in one transaction (their skeys bound from the
 * memo) read back apart, inside it and after it. */
static void test_each_session_keeps_its_own_data(void) {
  side a = {0}, b = {0};
  if (!open_both("skey", &a, &b)) goto done;
  dexa__store_conn *c = a.conn;
  CHECK_EQ_INT(add_sessions(c, "s1", "s2"), DEXA_OK);
  CHECK_EQ_INT(c->ops->begin_write(c), DEXA_OK);
  const char *sids[2] = {"s1", "s2"};
  for (int i = 0; i < 2; i++) {
    char v[8];
    snprintf(v, sizeof v, "%d", i + 1);
    CHECK_EQ_INT(c->ops->attr_put(c, sids[i], "k", 1, v, 1), DEXA_OK);
    CHECK_EQ_INT(c->ops->chan_push(c, sids[i], "ch", 2, v, 1), DEXA_OK);
    CHECK_EQ_INT(c->ops->event_append(c, sids[i], 1, v, 1), DEXA_OK);
  }
  CHECK_EQ_INT(c->ops->attr_delete(c, "s1", "k", 1), DEXA_OK);
  const char *v = NULL;
  size_t n = 0;
  CHECK_EQ_INT(c->ops->attr_get(c, "s1", "k", 1, &v, &n), DEXA_E_NOT_FOUND);
  CHECK_EQ_INT(c->ops->attr_get(c, "s2", "k", 1, &v, &n), DEXA_OK);
  CHECK_STR(v, "2");
  char taken[128] = "";
  CHECK_EQ_INT(c->ops->chan_take(c, "s2", "ch", 2, 10, see_value, taken), DEXA_OK);
  CHECK_STR(taken, "1=2 ");
  CHECK_EQ_INT(c->ops->commit(c), DEXA_OK);
  dexa__store_conn *o = b.conn;
  char s1[128] = "", s2[128] = "", ev[128] = "";
  int64_t count = 0;
  CHECK_EQ_INT(o->ops->attr_scan(o, "s1", "", 0, see_attr, s1), DEXA_OK);
  CHECK_EQ_INT(o->ops->attr_scan(o, "s2", "", 0, see_attr, s2), DEXA_OK);
  CHECK_STR(s1, "");
  CHECK_STR(s2, "k=2 ");
  CHECK_EQ_INT(o->ops->chan_count(o, "s1", "ch", 2, &count), DEXA_OK);
  CHECK_EQ_INT(count, 1);
  CHECK_EQ_INT(o->ops->chan_count(o, "s2", "ch", 2, &count), DEXA_OK);
  CHECK_EQ_INT(count, 0);
  CHECK_EQ_INT(o->ops->event_read(o, "s1", 0, 10, see_value, ev), DEXA_OK);
  CHECK_STR(ev, "1=1 ");
done:
  temp_side_close(&a);
  temp_side_close(&b);
  temp_store_remove(path);
}

int main(void) {
  RUN(test_counters_are_raised_in_memory_and_written_at_commit);
  RUN(test_a_rolled_back_savepoint_restores_the_rows);
  RUN(test_counters_written_early_survive_a_savepoint_rollback);
  RUN(test_outside_a_transaction_a_change_is_written_at_once);
  RUN(test_each_session_keeps_its_own_data);
  TEST_MAIN_END();
}
