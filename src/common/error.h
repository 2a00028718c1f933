/* error.h: internal helpers to fill a caller's ts_error and propagate statuses. */
#ifndef TS_COMMON_ERROR_H
#define TS_COMMON_ERROR_H

#include "common/generic.h"
#include "treescore.h"

#if defined(__GNUC__)
#define TS_PRINTF(fmt_idx, arg_idx) __attribute__((format(printf, fmt_idx, arg_idx)))
#else
#define TS_PRINTF(fmt_idx, arg_idx)
#endif

/* Set `err` (may be NULL) and return `status`, so callers write
 *     return ts_fail(err, TS_ERR_PARSE, "%s:%llu: bad number '%s'", name, line, tok);
 * The message is truncated to TS_ERROR_MESSAGE_SIZE - 1 bytes. line and byte are reset to 0. */
ts_status ts_fail(ts_error *err, ts_status status, const char *fmt, ...) TS_PRINTF(3, 4);

/* Same, recording where in the input the problem is (line 1-based, byte 0-based). The
 * message should already name the input and line; these fields are for programs. */
ts_status ts_fail_at(ts_error *err, ts_status status, unsigned long long line, unsigned long long byte,
                     const char *fmt, ...) TS_PRINTF(5, 6);

/* Prepend "prefix: " to an error's message (for example the file name), keeping status,
 * line and byte. No-op when err is NULL. */
void ts_error_prefix(ts_error *err, const char *fmt, ...) TS_PRINTF(2, 3);

/* Clear an error to TS_OK with an empty message (err may be NULL). */
void ts_error_clear(ts_error *err);

/* Propagate a failing status: TS_TRY(f(x, err)); */
#define TS_TRY(expr)                                                                        \
    do {                                                                                    \
        ts_status ts_try_status_ = (expr);                                                  \
        if (ts_try_status_ != TS_OK) return ts_try_status_;                                 \
    } while (0)

#endif /* TS_COMMON_ERROR_H */
