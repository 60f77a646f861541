/* libcurl's process-wide initialisation, done once for every part of the
 * library that makes HTTP requests (model clients, MCP over HTTP). libcurl
 * 7.84+ initialises thread-safely; pthread_once keeps the call single. */
#ifndef DEXA_UTIL_CURL_GLOBAL_H
#define DEXA_UTIL_CURL_GLOBAL_H

/* DEXA_OK, or DEXA_E_INTERNAL when libcurl could not initialise. */
int dexa__curl_global_init(void);

#endif
