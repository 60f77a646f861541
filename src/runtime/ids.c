/* Session ids from the system CSPRNG: unguessable, so an id can double as a
 * capability in URLs (the HTTP layer still signs it). */
#include <errno.h>
#include <stdio.h>
#include <sys/random.h>

#include "runtime/runtime_internal.h"

int dexa__random_session_id(char out[35]) {
  unsigned char raw[16];
  size_t got = 0;
  while (got < sizeof raw) {
    ssize_t n = getrandom(raw + got, sizeof raw - got, 0);
    if (n < 0) {
      if (errno == EINTR) continue;
      return DEXA_E_IO;
    }
    got += (size_t)n;
  }
  out[0] = 's';
  out[1] = '-';
  for (size_t i = 0; i < sizeof raw; i++) snprintf(out + 2 + 2 * i, 3, "%02x", raw[i]);
  return DEXA_OK;
}
