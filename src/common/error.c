/* error.c: filling ts_error structs, status names, version calls. */
#include "common/error.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static void set_message(ts_error *err, const char *fmt, va_list ap) {
    vsnprintf(err->message, sizeof err->message, fmt, ap);
}

ts_status ts_fail(ts_error *err, ts_status status, const char *fmt, ...) {
    if (err) {
        va_list ap;
        err->status = status;
        err->line = 0;
        err->byte = 0;
        va_start(ap, fmt);
        set_message(err, fmt, ap);
        va_end(ap);
    }
    return status;
}

ts_status ts_fail_at(ts_error *err, ts_status status, unsigned long long line, unsigned long long byte,
                     const char *fmt, ...) {
    if (err) {
        va_list ap;
        err->status = status;
        err->line = line;
        err->byte = byte;
        va_start(ap, fmt);
        set_message(err, fmt, ap);
        va_end(ap);
    }
    return status;
}

void ts_error_prefix(ts_error *err, const char *fmt, ...) {
    char prefix[TS_ERROR_MESSAGE_SIZE];
    char old[TS_ERROR_MESSAGE_SIZE];
    va_list ap;
    if (!err) return;
    va_start(ap, fmt);
    vsnprintf(prefix, sizeof prefix, fmt, ap);
    va_end(ap);
    memcpy(old, err->message, sizeof old);
    old[sizeof old - 1] = '\0';
    /* "prefix: old", truncated to the message size (snprintf of both would warn). */
    size_t used = strlen(prefix);
    if (used > sizeof err->message - 3) used = sizeof err->message - 3;
    memcpy(err->message, prefix, used);
    memcpy(err->message + used, ": ", 2);
    used += 2;
    size_t len = strlen(old);
    if (len > sizeof err->message - 1 - used) len = sizeof err->message - 1 - used;
    memcpy(err->message + used, old, len);
    err->message[used + len] = '\0';
}

void ts_error_clear(ts_error *err) {
    if (!err) return;
    err->status = TS_OK;
    err->line = 0;
    err->byte = 0;
    err->message[0] = '\0';
}

const char *ts_status_name(ts_status status) {
    switch (status) {
    case TS_OK: return "TS_OK";
    case TS_ERR_GENERIC: return "TS_ERR_GENERIC";
    case TS_ERR_IO: return "TS_ERR_IO";
    case TS_ERR_NO_MEMORY: return "TS_ERR_NO_MEMORY";
    case TS_ERR_INVALID_ARGUMENT: return "TS_ERR_INVALID_ARGUMENT";
    case TS_ERR_PARSE: return "TS_ERR_PARSE";
    case TS_ERR_UNSUPPORTED: return "TS_ERR_UNSUPPORTED";
    case TS_ERR_INVALID_MODEL: return "TS_ERR_INVALID_MODEL";
    case TS_ERR_SHAPE: return "TS_ERR_SHAPE";
    case TS_ERR_ENGINE_UNAVAILABLE: return "TS_ERR_ENGINE_UNAVAILABLE";
    case TS_ERR_LIMIT: return "TS_ERR_LIMIT";
    }
    return "TS_ERR_UNKNOWN";
}

unsigned ts_version_number(void) { return TS_VERSION_NUMBER; }
const char *ts_version_string(void) { return TS_VERSION_STRING; }
