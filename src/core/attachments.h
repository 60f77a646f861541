/* Attachments of a user message: images and files, each given by URL or as
 * base64 bytes, checked when send_message queues the message and stored
 * with it (dexagents-flow(7)); the model clients send them in each
 * provider's format. Events carry a view without the bytes. */
#ifndef DEXA_CORE_ATTACHMENTS_H
#define DEXA_CORE_ATTACHMENTS_H

#include "core/core.h"

#define DEXA__MAX_ATTACHMENTS 16

/* Checks send_message's "attachments" (an array, may be NULL); fails the
 * result with the reason and returns its code, else DEXA_OK with *bytes =
 * the bytes of their data and URLs. */
int dexa__attachments_check(dexa__ctx *c, const cJSON *attachments, size_t *bytes);

/* Appends the view of attachments (a JSON array text, as stored) to b:
 * [{"type","media_type"?,"name"?,"url"?,"bytes"?}], bytes being the decoded
 * size of the data. */
void dexa__attachments_view(dexa__buf *b, const char *json, size_t len);

#endif
