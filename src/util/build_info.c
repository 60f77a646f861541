/* dexa_build_info / dexa_build_has: what this build contains. The text is
 * written by the Makefile from its WITH_* options into
 * $(BUILD)/gen/dexa_build_config.h, so it is the build's own record (the
 * stub files of the parts left out do not need to say anything). */
#include <string.h>

#include "dexa_build_config.h"
#include "dexagents/version.h"

DEXA_EXTERN const char *dexa_build_info(void) { return DEXA__BUILD_INFO_JSON; }

DEXA_EXTERN int dexa_build_has(const char *feature) {
  if (!feature || !*feature || strchr(feature, ' ')) return 0;
  size_t n = strlen(feature);
  const char *p = DEXA__BUILD_FEATURES; /* " core flow ... " */
  while ((p = strstr(p, feature)) != NULL) {
    if (p[-1] == ' ' && p[n] == ' ') return 1;
    p += n;
  }
  return 0;
}
