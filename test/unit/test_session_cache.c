/* The session cache and its write log (store/session_cache.c,
 * store/write_log.c) over a real SQLite store: a reader is served from
 * memory only at the session's current data version; a commit puts its
 * writes in, a rolled-back savepoint's writes never arrive, and a write by
 * another store on the same file (another process) makes the next reader
 * read the session again. The bound drops least recently used sessions.
 * test-needs: sqlite postgresql */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "dexagents/errors.h"
#include "store/session_cache.h"
#include "store/store.h"
#include "support/temp_store.h"
#include "testing.h"

static char path[512];

static void fresh_path(const char *name) {
  char file[64];
  snprintf(file, sizeof file, "cache-%s", name);
  temp_store_path(path, sizeof path, file);
}

typedef temp_side side;

/* One write transaction: put key=val (val NULL: delete) on session sid. */
static int put(side *s, const char *sid, const char *key, const char *val) {
  dexa__store_conn *c = s->conn;
  int rc = c->ops->begin_write(c);
  if (rc == DEXA_OK) {
    rc = val ? c->ops->attr_put(c, sid, key, strlen(key), val, strlen(val))
             : c->ops->attr_delete(c, sid, key, strlen(key));
  }
  if (rc == DEXA_OK) return c->ops->commit(c);
  c->ops->rollback(c);
  return rc;
}

static int new_session(side *s, const char *sid) {
  dexa__store_conn *c = s->conn;
  int rc = c->ops->begin_write(c);
  if (rc == DEXA_OK) rc = c->ops->session_insert(c, sid, "F", 1, "{}", 2);
  if (rc == DEXA_OK) rc = c->ops->attr_put(c, sid, "a", 1, "1", 1);
  return rc == DEXA_OK ? c->ops->commit(c) : rc;
}

/* The cached value of key at version ver ("<miss>", "<none>" otherwise). */
static const char *cached(side *s, const char *sid, int64_t ver, const char *key) {
  static char out[256];
  char *buf = NULL;
  size_t cap = 0, n = 0;
  const char *v = NULL;
  int rc = dexa__session_cache_get(s->store->cache, sid, ver, key, strlen(key), &buf, &cap, &v, &n);
  snprintf(out, sizeof out, "%s",
           rc == DEXA_OK ? v : rc == DEXA__CACHE_MISS ? "<miss>" : "<none>");
  free(buf);
  return out;
}

static int64_t version(side *s, const char *sid) {
  int64_t v = -1;
  s->conn->ops->session_data_version(s->conn, sid, &v);
  return v;
}

static void test_a_commit_raises_the_version_once_and_fills_the_cache(void) {
  fresh_path("commit");
  side a = {0};
  if (temp_side_open(&a, path, 1 << 20) != DEXA_OK) return;
  CHECK_EQ_INT(new_session(&a, "s1"), DEXA_OK);
  int64_t v1 = version(&a, "s1");
  CHECK_EQ_INT(v1, 1);
  int64_t loaded = 0;
  CHECK_EQ_INT(dexa__session_cache_load(a.store->cache, a.conn, "s1", &loaded), DEXA_OK);
  CHECK_EQ_INT(loaded, v1);
  CHECK_STR(cached(&a, "s1", v1, "a"), "1");
  /* Two writes in one transaction: one raise; the commit puts both in. */
  dexa__store_conn *c = a.conn;
  CHECK_EQ_INT(c->ops->begin_write(c), DEXA_OK);
  CHECK_EQ_INT(c->ops->attr_put(c, "s1", "b", 1, "2", 1), DEXA_OK);
  CHECK_EQ_INT(c->ops->attr_delete(c, "s1", "a", 1), DEXA_OK);
  CHECK_STR(cached(&a, "s1", v1, "b"), "<none>"); /* not before the commit */
  CHECK_EQ_INT(c->ops->commit(c), DEXA_OK);
  CHECK_EQ_INT(version(&a, "s1"), v1 + 1);
  CHECK(dexa__session_cache_holds(a.store->cache, "s1", v1 + 1));
  CHECK_STR(cached(&a, "s1", v1 + 1, "b"), "2");
  CHECK_STR(cached(&a, "s1", v1 + 1, "a"), "<none>");
  CHECK_STR(cached(&a, "s1", v1 + 2, "b"), "<miss>");
  /* A new value for a key the cache holds replaces it. */
  CHECK_EQ_INT(put(&a, "s1", "b", "3"), DEXA_OK);
  CHECK_STR(cached(&a, "s1", v1 + 2, "b"), "3");
  temp_side_close(&a);
}

static void test_a_rolled_back_savepoint_leaves_the_cache_and_the_version(void) {
  fresh_path("savepoint");
  side a = {0};
  if (temp_side_open(&a, path, 1 << 20) != DEXA_OK) return;
  CHECK_EQ_INT(new_session(&a, "s1"), DEXA_OK);
  int64_t v = 0;
  CHECK_EQ_INT(dexa__session_cache_load(a.store->cache, a.conn, "s1", &v), DEXA_OK);
  dexa__store_conn *c = a.conn;
  /* The savepoint holds the transaction's first write of s1 (and so its
   * raise); the write after it raises again. */
  CHECK_EQ_INT(c->ops->begin_write(c), DEXA_OK);
  CHECK_EQ_INT(c->ops->savepoint(c), DEXA_OK);
  CHECK_EQ_INT(c->ops->attr_put(c, "s1", "lost", 4, "x", 1), DEXA_OK);
  CHECK_EQ_INT(c->ops->rollback_to(c), DEXA_OK);
  CHECK_EQ_INT(c->ops->savepoint(c), DEXA_OK);
  CHECK_EQ_INT(c->ops->attr_put(c, "s1", "kept", 4, "y", 1), DEXA_OK);
  CHECK_EQ_INT(c->ops->release(c), DEXA_OK);
  CHECK_EQ_INT(c->ops->commit(c), DEXA_OK);
  CHECK_EQ_INT(version(&a, "s1"), v + 1);
  CHECK_STR(cached(&a, "s1", v + 1, "kept"), "y");
  CHECK_STR(cached(&a, "s1", v + 1, "lost"), "<none>");
  /* A whole transaction rolled back: nothing arrives, nothing is raised. */
  CHECK_EQ_INT(c->ops->begin_write(c), DEXA_OK);
  CHECK_EQ_INT(c->ops->attr_put(c, "s1", "kept", 4, "z", 1), DEXA_OK);
  CHECK_EQ_INT(c->ops->rollback(c), DEXA_OK);
  CHECK_EQ_INT(version(&a, "s1"), v + 1);
  CHECK_STR(cached(&a, "s1", v + 1, "kept"), "y");
  temp_side_close(&a);
}

/* Two stores on path, as two processes; 0 (both closed) if either cannot
 * open. */
static int open_two(side *a, side *b) {
  if (temp_side_open(a, path, 1 << 20) == DEXA_OK && temp_side_open(b, path, 1 << 20) == DEXA_OK)
    return 1;
  temp_side_close(a);
  temp_side_close(b);
  return 0;
}

/* Two stores on one file stand for two processes: each has its own cache
 * and sees the other's writes only through the data version. */
static void test_a_write_by_another_process_is_read_again(void) {
  fresh_path("processes");
  side a = {0}, b = {0};
  CHECK(open_two(&a, &b));
  CHECK_EQ_INT(new_session(&a, "s1"), DEXA_OK);
  int64_t va = 0, vb = 0;
  CHECK_EQ_INT(dexa__session_cache_load(a.store->cache, a.conn, "s1", &va), DEXA_OK);
  CHECK_EQ_INT(put(&b, "s1", "a", "from b"), DEXA_OK);
  /* A's cache still holds the old version; A's next load sees the newer
   * one in the store and reads the session again. */
  CHECK_STR(cached(&a, "s1", va, "a"), "1");
  CHECK(!dexa__session_cache_holds(a.store->cache, "s1", va + 1));
  CHECK_EQ_INT(dexa__session_cache_load(a.store->cache, a.conn, "s1", &vb), DEXA_OK);
  CHECK_EQ_INT(vb, va + 1);
  CHECK_STR(cached(&a, "s1", vb, "a"), "from b");
  /* B wrote again, then A: A's commit sees that its cache missed a version
   * and forgets the session instead of patching an old copy. */
  CHECK_EQ_INT(put(&b, "s1", "c", "b again"), DEXA_OK);
  CHECK_EQ_INT(put(&a, "s1", "a", "from a"), DEXA_OK);
  CHECK(!dexa__session_cache_holds(a.store->cache, "s1", 0));
  CHECK_EQ_INT(dexa__session_cache_load(a.store->cache, a.conn, "s1", &vb), DEXA_OK);
  CHECK_STR(cached(&a, "s1", vb, "c"), "b again");
  CHECK_STR(cached(&a, "s1", vb, "a"), "from a");
  temp_side_close(&a);
  temp_side_close(&b);
}

typedef struct listing {
  char text[512];
} listing;

static int list_attr(void *ctx, const char *key, size_t klen, const char *val, size_t vlen) {
  listing *l = ctx;
  size_t used = strlen(l->text);
  snprintf(l->text + used, sizeof l->text - used, "%s%.*s=%.*s", used ? "," : "", (int)klen, key,
           (int)vlen, val);
  return 0;
}

static int stop_after_first(void *ctx, const char *key, size_t klen, const char *val,
                            size_t vlen) {
  list_attr(ctx, key, klen, val, vlen);
  return 1;
}

/* What a write transaction of A reads of key, as the transaction sees it. */
static const char *read_in_write(side *s, const char *sid, const char *key, const char *put_first) {
  static char out[256];
  dexa__store_conn *c = s->conn;
  const char *v = NULL;
  size_t n = 0;
  int rc = c->ops->begin_write(c);
  if (rc == DEXA_OK && put_first) rc = c->ops->attr_put(c, sid, key, strlen(key), put_first, strlen(put_first));
  if (rc == DEXA_OK) rc = c->ops->attr_get(c, sid, key, strlen(key), &v, &n);
  snprintf(out, sizeof out, "%s", rc == DEXA_OK ? v : dexa_strerror(rc));
  c->ops->rollback(c);
  return out;
}

/* Reads inside a write transaction may come from the cache (SQLite), but
 * only from the version the transaction finds in the store, and never
 * after the transaction wrote the session. */
static void test_a_write_transaction_reads_the_current_version(void) {
  fresh_path("in-write");
  side a = {0}, b = {0};
  CHECK(open_two(&a, &b));
  CHECK_EQ_INT(new_session(&a, "s1"), DEXA_OK);
  int64_t v = 0;
  CHECK_EQ_INT(dexa__session_cache_load(a.store->cache, a.conn, "s1", &v), DEXA_OK);
  CHECK_STR(read_in_write(&a, "s1", "a", NULL), "1");
  CHECK_EQ_INT(put(&b, "s1", "a", "from b"), DEXA_OK); /* A's cache is one version behind */
  CHECK_STR(read_in_write(&a, "s1", "a", NULL), "from b");
  CHECK_STR(read_in_write(&a, "s1", "a", "mine"), "mine");
  listing seen = {""};
  dexa__store_conn *c = a.conn;
  CHECK_EQ_INT(c->ops->begin_write(c), DEXA_OK);
  CHECK_EQ_INT(c->ops->attr_scan(c, "s1", "", 0, list_attr, &seen), DEXA_OK);
  c->ops->rollback(c);
  CHECK_STR(seen.text, "a=from b");
  temp_side_close(&a);
  temp_side_close(&b);
}

static void test_a_scan_visits_its_prefix_in_key_order(void) {
  fresh_path("scan");
  side a = {0};
  if (temp_side_open(&a, path, 1 << 20) != DEXA_OK) return;
  CHECK_EQ_INT(new_session(&a, "s1"), DEXA_OK);
  const char *keys[] = {"m/3", "m/1", "n", "m/2", "m"};
  for (int i = 0; i < 5; i++) CHECK_EQ_INT(put(&a, "s1", keys[i], keys[i]), DEXA_OK);
  int64_t v = 0;
  CHECK_EQ_INT(dexa__session_cache_load(a.store->cache, a.conn, "s1", &v), DEXA_OK);
  CHECK_EQ_INT(put(&a, "s1", "m/0", "new"), DEXA_OK); /* arrives by the commit */
  char *buf = NULL;
  size_t cap = 0;
  listing all = {""}, first = {""};
  CHECK_EQ_INT(dexa__session_cache_scan(a.store->cache, "s1", v + 1, "m/", 2, &buf, &cap,
                                        list_attr, &all),
               DEXA_OK);
  CHECK_STR(all.text, "m/0=new,m/1=m/1,m/2=m/2,m/3=m/3");
  CHECK_EQ_INT(dexa__session_cache_scan(a.store->cache, "s1", v + 1, "", 0, &buf, &cap,
                                        stop_after_first, &first),
               DEXA_OK);
  CHECK_STR(first.text, "a=1");
  CHECK_EQ_INT(dexa__session_cache_scan(a.store->cache, "s1", v + 2, "m/", 2, &buf, &cap,
                                        list_attr, &all),
               DEXA__CACHE_MISS);
  free(buf);
  temp_side_close(&a);
}

static void test_the_bound_drops_the_least_recently_used(void) {
  fresh_path("bound");
  side a = {0};
  /* About 1.7 KB per session below: four fit in 8 KB, five do not. */
  if (temp_side_open(&a, path, 8 * 1024) != DEXA_OK) return;
  char big[1500];
  memset(big, 'x', sizeof big - 1);
  big[sizeof big - 1] = '\0';
  const char *sids[] = {"s1", "s2", "s3", "s4", "s5"};
  int64_t v[5];
  for (int i = 0; i < 5; i++) {
    CHECK_EQ_INT(new_session(&a, sids[i]), DEXA_OK);
    CHECK_EQ_INT(put(&a, sids[i], "big", big), DEXA_OK);
  }
  for (int i = 0; i < 5; i++) {
    if (i == 4) CHECK(dexa__session_cache_holds(a.store->cache, "s1", v[0])); /* s1 is used */
    CHECK_EQ_INT(dexa__session_cache_load(a.store->cache, a.conn, sids[i], &v[i]), DEXA_OK);
  }
  CHECK(!dexa__session_cache_holds(a.store->cache, "s2", 0));
  for (int i = 0; i < 5; i++) {
    if (i != 1) CHECK(dexa__session_cache_holds(a.store->cache, sids[i], v[i]));
  }
  /* A session bigger than a quarter of the cache is not kept at all. */
  char huge[4000];
  memset(huge, 'y', sizeof huge - 1);
  huge[sizeof huge - 1] = '\0';
  CHECK_EQ_INT(put(&a, "s5", "huge", huge), DEXA_OK);
  CHECK(!dexa__session_cache_holds(a.store->cache, "s5", 0));
  CHECK(dexa__session_cache_holds(a.store->cache, "s1", v[0]));
  temp_side_close(&a);
}

int main(void) {
  RUN(test_a_commit_raises_the_version_once_and_fills_the_cache);
  RUN(test_a_rolled_back_savepoint_leaves_the_cache_and_the_version);
  RUN(test_a_write_by_another_process_is_read_again);
  RUN(test_a_scan_visits_its_prefix_in_key_order);
  RUN(test_a_write_transaction_reads_the_current_version);
  RUN(test_the_bound_drops_the_least_recently_used);
  TEST_MAIN_END();
}
