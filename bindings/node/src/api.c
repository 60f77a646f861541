/* Opening libdexagents at run time (see api.h). */
#include "api.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

dexa_api lib;

static pthread_mutex_t load_mu = PTHREAD_MUTEX_INITIALIZER;
static char loaded_path[4096];
/* The oldest library whose functions this addon calls: 1.1.0. */
#define REQUIRED_VERSION_NUM 0x010100u

const char *api_loaded_path(void) { return loaded_path; }

static int resolve(void *h, dexa_api *api, char *err, size_t n) {
#define DEXA_API_RESOLVE(f)                                                      \
  *(void **)&api->f = dlsym(h, #f);                                            \
  if (!api->f) {                                                               \
    snprintf(err, n, "the library lacks %s (it is older than this package)", #f); \
    return -1;                                                                 \
  }
  DEXA_API_FUNCS(DEXA_API_RESOLVE)
#undef DEXA_API_RESOLVE
  return 0;
}

int api_load(const char *path, char *err, size_t n) {
  int rc = 0;
  pthread_mutex_lock(&load_mu);
  if (lib.dexa_version) goto done;
  void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    const char *e = dlerror();
    snprintf(err, n, "%s", e ? e : "dlopen failed");
    rc = -1;
    goto done;
  }
  dexa_api api;
  memset(&api, 0, sizeof api);
  if (resolve(h, &api, err, n) != 0) {
    dlclose(h);
    rc = -1;
    goto done;
  }
  uint32_t v = api.dexa_version_num();
  if (v >> 16 != REQUIRED_VERSION_NUM >> 16 || v < REQUIRED_VERSION_NUM) {
    snprintf(err, n, "it is version %s; this package needs 1.x >= 1.1", api.dexa_version());
    dlclose(h);
    rc = -1;
    goto done;
  }
  lib = api;
  snprintf(loaded_path, sizeof loaded_path, "%s", path);
done:
  pthread_mutex_unlock(&load_mu);
  return rc;
}
