/* notes.h: what the library has to say besides errors (warnings, cache reports): to the plan report and an optional sink, never to stderr. */
#ifndef TS_PLATFORM_NOTES_H
#define TS_PLATFORM_NOTES_H

#include <stdatomic.h>
#include <stddef.h>

#include "common/error.h"

/*
 * The library never prints. A note is one line of text (no trailing newline) of one of
 * two kinds:
 *   TSR_NOTE_WARN  something the user should know (an environment variable ignored, a
 *                  cache directory not trusted): the CLI always prints these;
 *   TSR_NOTE_INFO  a report (ifelse cache hit, compile cost): the CLI prints these when
 *                  TREESCORE_VERBOSE is set.
 * Each note goes (1) to the sink, when one is installed (the CLI installs one that
 * prints to stderr), and (2) to the calling thread's capture, when one is open (the
 * planner and the scorer open one around engine preparation and put the text in the
 * plan report). Warnings are also kept process-wide (bounded) so that a report made
 * later still mentions them (tsr_notes_warnings).
 */
typedef enum tsr_note_kind { TSR_NOTE_INFO = 0, TSR_NOTE_WARN = 1 } tsr_note_kind;

typedef void (*tsr_note_sink)(tsr_note_kind kind, const char *line, void *ctx);

/* Install (or with NULL remove) the process-wide sink. Not thread-safe against notes
 * being emitted at the same time: install it at program start. */
void tsr_notes_set_sink(tsr_note_sink sink, void *ctx);

void tsr_note(tsr_note_kind kind, const char *fmt, ...) TS_PRINTF(2, 3);

/* Warn at most once per process for `flag` (a static atomic_int, initially 0). */
void tsr_note_once(atomic_int *flag, const char *fmt, ...) TS_PRINTF(2, 3);

/* Open a capture on this thread (nesting: an inner begin continues the outer capture).
 * tsr_notes_end closes it and returns the captured lines, each ending in '\n', as
 * malloc'd text, or NULL when nothing was said (or memory ran out). */
void tsr_notes_begin(void);
char *tsr_notes_end(void);

/* The warnings said so far in this process (each line ending in '\n'), copied into buf
 * (truncated to size); returns the length. */
size_t tsr_notes_warnings(char *buf, size_t size);

#endif /* TS_PLATFORM_NOTES_H */
