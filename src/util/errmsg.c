/* errmsg: see errmsg.h. */
#include "util/errmsg.h"

#include <stdarg.h>
#include <stdio.h>

int dexa__say(char *errmsg, size_t n, int rc, const char *fmt, ...) {
  if (errmsg && n) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(errmsg, n, fmt, ap);
    va_end(ap);
  }
  return rc;
}
