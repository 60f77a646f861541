/* dexa_call members added after 1.0, read only when the caller has them. */
#include "flow/call.h"

int dexa__call_cancelled(const dexa_call *call) {
  if (!call || !DEXA__CALL_HAS(call, cancel_user_data) || !call->cancelled) return 0;
  return call->cancelled(call->cancel_user_data) != 0;
}
