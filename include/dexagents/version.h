/* libdexagents: version. This file is the one source of the version: the
 * Makefile reads the three numbers below to name the shared library. */
#ifndef DEXAGENTS_VERSION_H
#define DEXAGENTS_VERSION_H

#include "common.h"

#define DEXA_VERSION_MAJOR 1
#define DEXA_VERSION_MINOR 1
#define DEXA_VERSION_PATCH 0
#define DEXA_VERSION_STRING "1.1.0"
/* 0xMMmmpp, for compile-time comparisons. */
#define DEXA_VERSION_NUM 0x010100

DEXA_BEGIN_DECLS

/* Returns the version string of the library loaded at run time ("1.1.0"),
 * static text. Thread-safe. */
DEXA_EXTERN const char *dexa_version(void);

/* Returns the version of the library loaded at run time as 0xMMmmpp. */
DEXA_EXTERN uint32_t dexa_version_num(void);

DEXA_END_DECLS

#endif
