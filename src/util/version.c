#include "dexagents/version.h"

#include <stdlib.h>

DEXA_EXTERN const char *dexa_version(void) { return DEXA_VERSION_STRING; }

DEXA_EXTERN uint32_t dexa_version_num(void) { return DEXA_VERSION_NUM; }

DEXA_EXTERN void dexa_free(void *ptr) { free(ptr); }
