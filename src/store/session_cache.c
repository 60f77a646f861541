/* The session cache (session_cache.h): a hash of sessions, each a sorted
 * array of its attributes, on an LRU list bounded in bytes. */
#include "store/session_cache.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "dexagents/errors.h"
#include "store/store.h"
#include "util/buf.h"

enum { BUCKETS = 4096, ITEM_OVERHEAD = 48, ENTRY_OVERHEAD = 128 };

typedef struct item {
  char *key; /* one allocation: key bytes, then the value and a NUL */
  size_t klen;
  char *val;
  size_t vlen;
} item;

typedef struct entry {
  char *sid;
  size_t bucket;
  int64_t ver;
  item *items; /* ascending by key, bytewise (as the store orders them) */
  size_t n, cap;
  size_t bytes;
  struct entry *next; /* in the bucket */
  struct entry *newer, *older;
} entry;

struct dexa__session_cache {
  pthread_mutex_t mu;
  size_t max_bytes, bytes;
  entry *buckets[BUCKETS];
  entry lru; /* sentinel: lru.older is the most recently used */
};

static size_t bucket_of(const char *sid) {
  uint32_t h = 2166136261u;
  for (const unsigned char *p = (const unsigned char *)sid; *p; p++) h = (h ^ *p) * 16777619u;
  return h % BUCKETS;
}

int dexa__session_cache_new(size_t max_bytes, dexa__session_cache **out) {
  dexa__session_cache *c = calloc(1, sizeof *c);
  if (!c) return DEXA_E_NOMEM;
  pthread_mutex_init(&c->mu, NULL);
  c->max_bytes = max_bytes;
  c->lru.newer = c->lru.older = &c->lru;
  *out = c;
  return DEXA_OK;
}

static void free_entry(entry *e) {
  for (size_t i = 0; i < e->n; i++) free(e->items[i].key);
  free(e->items);
  free(e->sid);
  free(e);
}

void dexa__session_cache_free(dexa__session_cache *c) {
  if (!c) return;
  for (entry *e = c->lru.older, *next; e != &c->lru; e = next) {
    next = e->older;
    free_entry(e);
  }
  pthread_mutex_destroy(&c->mu);
  free(c);
}

/* ---- entries (under the lock) ------------------------------------------- */

static entry *find(dexa__session_cache *c, const char *sid) {
  for (entry *e = c->buckets[bucket_of(sid)]; e; e = e->next) {
    if (strcmp(e->sid, sid) == 0) return e;
  }
  return NULL;
}

static void lru_unlink(entry *e) {
  e->newer->older = e->older;
  e->older->newer = e->newer;
}

static void lru_push(dexa__session_cache *c, entry *e) {
  e->newer = &c->lru;
  e->older = c->lru.older;
  c->lru.older->newer = e;
  c->lru.older = e;
}

static void touch(dexa__session_cache *c, entry *e) {
  lru_unlink(e);
  lru_push(c, e);
}

static void remove_entry(dexa__session_cache *c, entry *e) {
  entry **p = &c->buckets[e->bucket];
  while (*p != e) p = &(*p)->next;
  *p = e->next;
  lru_unlink(e);
  c->bytes -= e->bytes;
  free_entry(e);
}

static void add_entry(dexa__session_cache *c, entry *e) {
  e->bucket = bucket_of(e->sid);
  e->next = c->buckets[e->bucket];
  c->buckets[e->bucket] = e;
  lru_push(c, e);
  c->bytes += e->bytes;
}

/* Drops least recently used sessions until the cache fits; a session
 * bigger than a quarter of the cache is not kept at all. */
static void shrink(dexa__session_cache *c, entry *keep) {
  if (keep && keep->bytes > c->max_bytes / 4) remove_entry(c, keep);
  while (c->bytes > c->max_bytes && c->lru.newer != &c->lru) remove_entry(c, c->lru.newer);
}

static int key_cmp(const char *a, size_t alen, const char *b, size_t blen) {
  int r = memcmp(a, b, alen < blen ? alen : blen);
  if (r != 0) return r;
  return alen < blen ? -1 : alen > blen;
}

/* The index of the first item whose key is not below key. */
static size_t lower_bound(const entry *e, const char *key, size_t klen) {
  size_t lo = 0, hi = e->n;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (key_cmp(e->items[mid].key, e->items[mid].klen, key, klen) < 0) {
      lo = mid + 1;
    } else {
      hi = mid;
    }
  }
  return lo;
}

static int found_at(const entry *e, size_t i, const char *key, size_t klen) {
  return i < e->n && key_cmp(e->items[i].key, e->items[i].klen, key, klen) == 0;
}

static int make_item(item *it, const char *key, size_t klen, const char *val, size_t vlen) {
  char *block = malloc(klen + vlen + 1);
  if (!block) return DEXA_E_NOMEM;
  if (klen) memcpy(block, key, klen);
  if (vlen) memcpy(block + klen, val, vlen);
  block[klen + vlen] = '\0';
  *it = (item){block, klen, block + klen, vlen};
  return DEXA_OK;
}

/* Inserts at i (the caller found that no item has this key). */
static int insert_item(entry *e, size_t i, const char *key, size_t klen, const char *val,
                       size_t vlen) {
  if (e->n == e->cap) {
    size_t cap = e->cap ? e->cap * 2 : 16;
    item *grown = realloc(e->items, cap * sizeof *grown);
    if (!grown) return DEXA_E_NOMEM;
    e->items = grown;
    e->cap = cap;
  }
  item it;
  if (make_item(&it, key, klen, val, vlen) != DEXA_OK) return DEXA_E_NOMEM;
  memmove(e->items + i + 1, e->items + i, (e->n - i) * sizeof *e->items);
  e->items[i] = it;
  e->n++;
  e->bytes += klen + vlen + ITEM_OVERHEAD;
  return DEXA_OK;
}

static void delete_item(entry *e, size_t i) {
  e->bytes -= e->items[i].klen + e->items[i].vlen + ITEM_OVERHEAD;
  free(e->items[i].key);
  memmove(e->items + i, e->items + i + 1, (e->n - i - 1) * sizeof *e->items);
  e->n--;
}

static int write_item(entry *e, const dexa__cache_write *w) {
  size_t i = lower_bound(e, w->key, w->klen);
  if (!found_at(e, i, w->key, w->klen))
    return w->val ? insert_item(e, i, w->key, w->klen, w->val, w->vlen) : DEXA_OK;
  if (!w->val) {
    delete_item(e, i);
    return DEXA_OK;
  }
  item it; /* a new value for a key already there: replaced in place */
  if (make_item(&it, w->key, w->klen, w->val, w->vlen) != DEXA_OK) return DEXA_E_NOMEM;
  e->bytes = e->bytes - e->items[i].vlen + w->vlen;
  free(e->items[i].key);
  e->items[i] = it;
  return DEXA_OK;
}

/* ---- loading -------------------------------------------------------------- */

static entry *new_entry(const char *sid, int64_t ver) {
  entry *e = calloc(1, sizeof *e);
  if (!e) return NULL;
  e->sid = strdup(sid);
  if (!e->sid) {
    free(e);
    return NULL;
  }
  e->ver = ver;
  e->bytes = ENTRY_OVERHEAD + strlen(sid);
  return e;
}

/* The store visits keys in ascending order, so each one is appended. */
static int collect(void *ctx, const char *key, size_t klen, const char *val, size_t vlen) {
  entry *e = ctx;
  return insert_item(e, e->n, key, klen, val, vlen);
}

int dexa__session_cache_holds(dexa__session_cache *c, const char *sid, int64_t ver) {
  pthread_mutex_lock(&c->mu);
  entry *e = find(c, sid);
  int hit = e && e->ver >= ver;
  if (hit) touch(c, e);
  pthread_mutex_unlock(&c->mu);
  return hit;
}

static void install(dexa__session_cache *c, entry *loaded) {
  pthread_mutex_lock(&c->mu);
  entry *e = find(c, loaded->sid);
  if (e && e->ver >= loaded->ver) {
    free_entry(loaded); /* a writer of this process got there first */
  } else {
    if (e) remove_entry(c, e);
    add_entry(c, loaded);
    shrink(c, loaded);
  }
  pthread_mutex_unlock(&c->mu);
}

int dexa__session_cache_load(dexa__session_cache *c, dexa__store_conn *conn, const char *sid,
                             int64_t *ver) {
  int rc = conn->ops->session_data_version(conn, sid, ver);
  if (rc != DEXA_OK || c->max_bytes == 0 || dexa__session_cache_holds(c, sid, *ver)) return rc;
  /* The version and the attributes from one snapshot. */
  rc = conn->ops->begin_read(conn);
  if (rc != DEXA_OK) return rc;
  rc = conn->ops->session_data_version(conn, sid, ver);
  entry *e = rc == DEXA_OK ? new_entry(sid, *ver) : NULL;
  if (rc == DEXA_OK && !e) rc = DEXA_E_NOMEM;
  if (rc == DEXA_OK) rc = conn->ops->attr_scan(conn, sid, "", 0, collect, e);
  int end = conn->ops->commit(conn);
  if (rc == DEXA_OK) rc = end;
  if (rc != DEXA_OK) {
    if (e) free_entry(e);
    return rc;
  }
  install(c, e);
  return DEXA_OK;
}

/* ---- reading -------------------------------------------------------------- */

int dexa__session_cache_get(dexa__session_cache *c, const char *sid, int64_t ver,
                            const char *key, size_t klen, char **buf, size_t *cap,
                            const char **val, size_t *vlen) {
  pthread_mutex_lock(&c->mu);
  entry *e = find(c, sid);
  int rc = DEXA__CACHE_MISS;
  if (e && e->ver >= ver) {
    touch(c, e);
    size_t i = lower_bound(e, key, klen);
    if (!found_at(e, i, key, klen)) {
      rc = DEXA_E_NOT_FOUND;
    } else if (dexa__grow(buf, cap, e->items[i].vlen + 1) != 0) {
      rc = DEXA_E_NOMEM;
    } else {
      memcpy(*buf, e->items[i].val, e->items[i].vlen + 1);
      *val = *buf;
      *vlen = e->items[i].vlen;
      rc = DEXA_OK;
    }
  }
  pthread_mutex_unlock(&c->mu);
  return rc;
}

/* A copied item in a scan buffer: the header, then key, value and NUL. */
typedef struct copied {
  size_t klen, vlen;
} copied;

static size_t copied_size(size_t klen, size_t vlen) {
  size_t n = sizeof(copied) + klen + vlen + 1;
  return (n + 7) & ~(size_t)7;
}

/* Copies the items under prefix into *buf; *used gets the bytes copied. */
static int copy_range(dexa__session_cache *c, const char *sid, int64_t ver, const char *prefix,
                      size_t plen, char **buf, size_t *cap, size_t *used) {
  pthread_mutex_lock(&c->mu);
  entry *e = find(c, sid);
  int rc = DEXA__CACHE_MISS;
  if (e && e->ver >= ver) {
    touch(c, e);
    size_t first = lower_bound(e, prefix, plen), end = first, total = 0;
    while (end < e->n && e->items[end].klen >= plen &&
           memcmp(e->items[end].key, prefix, plen) == 0) {
      total += copied_size(e->items[end].klen, e->items[end].vlen);
      end++;
    }
    rc = dexa__grow(buf, cap, total ? total : 1) != 0 ? DEXA_E_NOMEM : DEXA_OK;
    for (size_t i = first; rc == DEXA_OK && i < end; i++) {
      const item *it = &e->items[i];
      copied h = {it->klen, it->vlen};
      memcpy(*buf + *used, &h, sizeof h);
      memcpy(*buf + *used + sizeof h, it->key, it->klen + it->vlen + 1);
      *used += copied_size(it->klen, it->vlen);
    }
  }
  pthread_mutex_unlock(&c->mu);
  return rc;
}

int dexa__session_cache_scan(dexa__session_cache *c, const char *sid, int64_t ver,
                             const char *prefix, size_t plen, char **buf, size_t *cap,
                             dexa_attr_visit_fn visit, void *ctx) {
  size_t used = 0;
  int rc = copy_range(c, sid, ver, prefix, plen, buf, cap, &used);
  for (size_t at = 0; rc == DEXA_OK && at < used;) {
    copied h;
    memcpy(&h, *buf + at, sizeof h);
    const char *key = *buf + at + sizeof h;
    int vr = visit(ctx, key, h.klen, key + h.klen, h.vlen);
    if (vr < 0) rc = vr;
    if (vr != 0) break;
    at += copied_size(h.klen, h.vlen);
  }
  return rc;
}

/* ---- writing -------------------------------------------------------------- */

void dexa__session_cache_apply(dexa__session_cache *c, const char *sid, int64_t after,
                               const dexa__cache_write *writes, size_t n) {
  pthread_mutex_lock(&c->mu);
  entry *e = find(c, sid);
  if (e && e->ver != after - 1) {
    remove_entry(c, e); /* another process wrote in between: read it again */
    e = NULL;
  }
  if (e) {
    size_t before = e->bytes;
    int rc = DEXA_OK;
    for (size_t i = 0; i < n && rc == DEXA_OK; i++) rc = write_item(e, &writes[i]);
    c->bytes = c->bytes - before + e->bytes;
    e->ver = after;
    if (rc != DEXA_OK) {
      remove_entry(c, e);
    } else {
      touch(c, e);
      shrink(c, e);
    }
  }
  pthread_mutex_unlock(&c->mu);
}

void dexa__session_cache_clear(dexa__session_cache *c) {
  pthread_mutex_lock(&c->mu);
  while (c->lru.newer != &c->lru) remove_entry(c, c->lru.newer);
  pthread_mutex_unlock(&c->mu);
}
