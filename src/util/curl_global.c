#include "util/curl_global.h"

#include <curl/curl.h>
#include <pthread.h>

#include "dexagents/errors.h"

static pthread_once_t once = PTHREAD_ONCE_INIT;
static int init_rc = DEXA_OK; /* written once, under pthread_once */

static void init(void) {
  if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) init_rc = DEXA_E_INTERNAL;
}

int dexa__curl_global_init(void) {
  pthread_once(&once, init);
  return init_rc;
}
