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

/* Returns what this build of the library contains (the make options
 * WITH_HTTP, WITH_CURL, WITH_SQLITE, WITH_POSTGRES, MINIMAL): a JSON
 * document, static UTF-8 text, e.g.
 *   {"version":"1.1.0","features":["core",...,"sqlite"],
 *    "options":{"WITH_HTTP":true,...},"libraries":["libcjson",...]}
 * "libraries" are the third-party libraries the build links. Functions of
 * a part left out exist all the same and return DEXA_E_UNSUPPORTED. See
 * dexa_build_info(3). Thread-safe. Added in 1.1. */
DEXA_EXTERN const char *dexa_build_info(void);

/* Returns 1 when this build has feature, else 0 (also for NULL or an
 * unknown name). Features: "core", "flow", "runtime", "demo-models",
 * "function-tools", "mcp-stdio", "claude-code" (always); "http"
 * (WITH_HTTP); "providers", "mcp-http", "connectors" (WITH_CURL); "sqlite"
 * (WITH_SQLITE); "postgresql" (WITH_POSTGRES). Thread-safe. Added in 1.1. */
DEXA_EXTERN int dexa_build_has(const char *feature);

DEXA_END_DECLS

#endif
