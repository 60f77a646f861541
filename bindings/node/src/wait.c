/* The host's wait helper: dexa_wait_evaluate for a JavaScript host.
 *
 * Pure and quick (no I/O, no callback), so it runs on the JS thread. The
 * channel counts cross as the JSON object form of dexa_wait_state (the man
 * page's form for bindings); lib/host.js builds it and reads the answer. */
#include "wait.h"

#include <stdlib.h>

/* waitEvaluate(waitText|null, nowMs, startedMs, firedText|null,
 * countsText|null): the answer's JSON text; throws the library's error. */
napi_value js_wait_evaluate(napi_env env, napi_callback_info info) {
  size_t argc = 5;
  napi_value argv[5];
  CHECK_NAPI(env, napi_get_cb_info(env, info, &argc, argv, NULL, NULL));
  if (!require_lib(env)) return NULL;
  if (argc < 5) return throw_dexa(env, DEXA_E_INVALID_ARG, "waitEvaluate needs 5 arguments");
  size_t wait_len = 0, fired_len = 0, counts_len = 0;
  char *wait = get_str(env, argv[0], &wait_len);
  char *fired = get_str(env, argv[3], &fired_len);
  char *counts = get_str(env, argv[4], &counts_len);
  napi_value ret = NULL;
  dexa_wait_state st;
  int rc = lib.dexa_wait_state_init(&st, sizeof st);
  if (rc == DEXA_OK) {
    napi_get_value_int64(env, argv[1], &st.now_ms);
    napi_get_value_int64(env, argv[2], &st.started_ms);
    st.fired = fired;
    st.fired_len = fired_len;
    st.channel_counts = counts;
    st.channel_counts_len = counts_len;
    char *out = NULL;
    size_t out_len = 0;
    rc = lib.dexa_wait_evaluate(&out, &out_len, wait, wait_len, &st);
    if (rc == DEXA_OK) ret = str_val(env, out, out_len);
    lib.dexa_free(out);
  }
  free(wait);
  free(fired);
  free(counts);
  return rc == DEXA_OK ? ret : throw_dexa(env, rc, NULL);
}
