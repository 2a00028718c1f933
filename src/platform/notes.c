/* notes.c: notes to a sink, a per-thread capture and a bounded process-wide list of warnings. */
#include "platform/notes.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NOTE_MAX 1024
#define CAPTURE_MAX 16384
#define WARNINGS_MAX 2048

static tsr_note_sink note_sink;
static void *note_ctx;

/* The thread's capture: open while depth > 0; text is malloc'd, len bytes used. */
static _Thread_local struct {
    int depth;
    char *text;
    size_t len;
} capture;

/* Every warning said, in order, until WARNINGS_MAX bytes; guarded by warnings_lock. */
static char warnings[WARNINGS_MAX];
static size_t warnings_len;
static pthread_mutex_t warnings_lock = PTHREAD_MUTEX_INITIALIZER;

void tsr_notes_set_sink(tsr_note_sink sink, void *ctx) {
    note_sink = sink;
    note_ctx = ctx;
}

static void append(char *dst, size_t *len, size_t cap, const char *line) {
    size_t n = strlen(line);
    if (*len + n + 2 > cap) return; /* full: later lines are dropped whole */
    memcpy(dst + *len, line, n);
    dst[*len + n] = '\n';
    *len += n + 1;
    dst[*len] = '\0';
}

static void emit(tsr_note_kind kind, const char *line) {
    if (note_sink) note_sink(kind, line, note_ctx);
    if (capture.depth > 0) {
        if (!capture.text) {
            capture.text = malloc(CAPTURE_MAX);
            capture.len = 0;
        }
        if (capture.text) append(capture.text, &capture.len, CAPTURE_MAX, line);
    }
    if (kind == TSR_NOTE_WARN) {
        pthread_mutex_lock(&warnings_lock);
        append(warnings, &warnings_len, sizeof warnings, line);
        pthread_mutex_unlock(&warnings_lock);
    }
}

void tsr_note(tsr_note_kind kind, const char *fmt, ...) {
    char line[NOTE_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    emit(kind, line);
}

void tsr_note_once(atomic_int *flag, const char *fmt, ...) {
    if (atomic_exchange(flag, 1)) return;
    char line[NOTE_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    emit(TSR_NOTE_WARN, line);
}

void tsr_notes_begin(void) { capture.depth++; }

char *tsr_notes_end(void) {
    if (capture.depth <= 0 || --capture.depth > 0) return NULL;
    char *t = capture.text;
    capture.text = NULL;
    capture.len = 0;
    return t;
}

size_t tsr_notes_warnings(char *buf, size_t size) {
    if (!size) return 0;
    pthread_mutex_lock(&warnings_lock);
    size_t n = warnings_len < size - 1 ? warnings_len : size - 1;
    memcpy(buf, warnings, n);
    pthread_mutex_unlock(&warnings_lock);
    buf[n] = '\0';
    return n;
}
