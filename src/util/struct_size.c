/* The unknown tail of a size-versioned struct. */
#include "util/struct_size.h"

int dexa__struct_tail_ok(const void *s, size_t size, size_t known) {
  if (size <= known) return 1;
  if (size > DEXA__STRUCT_SIZE_MAX) return 0;
  const unsigned char *p = s;
  for (size_t i = known; i < size; i++)
    if (p[i]) return 0;
  return 1;
}
