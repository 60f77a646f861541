/* examples/chat: the pieces of the terminal chat shared by its files.
 *
 * chat.c         options, the runtime, the read-send-follow loop
 * chat_render.c  printing events (as they stream) and stored messages
 * chat_tools.c   the host function tools "clock" (READ) and "note" (WRITE)
 * chat_commands.c  ":" commands (approve, reject, answer, stop, plan, execute)
 *                  and the prompts for calls that wait for the person */
#ifndef DEXA_EXAMPLE_CHAT_H
#define DEXA_EXAMPLE_CHAT_H

#include <dexagents/dexagents.h>
#include <stddef.h>

/* What the renderer remembers while one turn streams. */
typedef struct chat_render {
  int line_open;      /* a "dex> " line is open (no newline printed yet) */
  size_t delta_bytes; /* text_delta bytes not yet matched by a model message's text */
  int turn_done;      /* turn_finished or turn_failed was seen */
} chat_render;

/* Prints one event document ({"type":..}) of the session's stream. */
void chat_render_event(chat_render *r, const char *event_json, size_t len);

/* Closes an open answer line. */
void chat_render_end_line(chat_render *r);

/* Prints one stored message (as in the snapshot) on its own line. */
void chat_render_message(const char *message_json, size_t len);

/* Creates the "host" tool source: clock (READ) and note (WRITE, appends a
 * line to notes_path). notes_path must outlive the source. */
int chat_tools_new(dexa_tool_source **out, const char *notes_path);

/* Prints what waits for the person (approvals, questions) and timers.
 * Returns 1 when an approval or a question waits (the person must act),
 * 0 when only timers wait, -1 when nothing waits. */
int chat_show_pending(dexa_runtime *rt, const char *session_id, int *timer_said);

/* Runs a ":" command line; returns 1 when the session moves (follow the
 * turn), 0 when there is nothing to follow. */
int chat_command(dexa_runtime *rt, const char *session_id, const char *line);

#endif
