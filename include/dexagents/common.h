/* libdexagents: common definitions shared by every public header.
 *
 * Nothing here depends on another library: JSON crosses the ABI as UTF-8
 * text plus a length, never as a parser's tree. */
#ifndef DEXAGENTS_COMMON_H
#define DEXAGENTS_COMMON_H

#include <stddef.h>
#include <stdint.h>

#if defined(BUILDING_DEXAGENTS) && defined(__GNUC__)
#define DEXA_EXTERN __attribute__((visibility("default")))
#else
#define DEXA_EXTERN
#endif

#if defined(__GNUC__)
#define DEXA_DEPRECATED(msg) __attribute__((deprecated(msg)))
#else
#define DEXA_DEPRECATED(msg)
#endif

#ifdef __cplusplus
#define DEXA_BEGIN_DECLS extern "C" {
#define DEXA_END_DECLS }
#else
#define DEXA_BEGIN_DECLS
#define DEXA_END_DECLS
#endif

DEXA_BEGIN_DECLS

/* Opaque handles. Each is created by dexa_<x>_new(&out, ...) and released by
 * dexa_<x>_free(x); every *_free(NULL) is a no-op. */
typedef struct dexa_agent dexa_agent;
typedef struct dexa_model dexa_model;
typedef struct dexa_tool_source dexa_tool_source;
typedef struct dexa_result dexa_result;
typedef struct dexa_runtime dexa_runtime;
typedef struct dexa_task dexa_task;

/* Frees memory that the library allocated for the caller (response
 * documents, flow descriptions). NULL is a no-op. */
DEXA_EXTERN void dexa_free(void *ptr);

DEXA_END_DECLS

#endif
