/* text.h: shared helpers of the model loaders: lines, bounded number parsing, located error messages. */
#ifndef TS_IO_TEXT_H
#define TS_IO_TEXT_H

#include <stddef.h>
#include <stdint.h>

#include "common/error.h"
#include "treescore.h"

/*
 * Every helper here works on (pointer, length) spans of the loader's input and never
 * reads outside them. Numbers are parsed from a bounded NUL-terminated copy of the
 * token (the input itself is not NUL-terminated), and the whole token must be a
 * number: "1.5x" and "" are errors, not 1.5 and 0.
 */

/* Longest number token accepted (longer tokens are reported as bad numbers). */
#define TSIO_NUMBER_MAX 255

/* 3 when the input starts with a UTF-8 byte order mark, else 0. */
size_t tsio_skip_bom(const char *data, size_t size);

/* 1-based line number of byte offset `byte` (counts '\n' before it; O(byte), so only
 * for error paths or offsets visited once). */
unsigned long long tsio_line_at(const char *data, size_t size, size_t byte);

/* Strip leading and trailing spaces, tabs, CR and LF from a span. */
void tsio_trim(const char **s, size_t *n);

/* Parse a whole token as a decimal floating-point number: optional sign, digits with an
 * optional point and exponent, or inf/infinity/nan (any case). Returns 0 on success,
 * -1 on a malformed or too long token. Correctly rounded (glibc strtod/strtof). */
int tsio_parse_double(const char *s, size_t n, double *out);
/* The same, rounding the decimal text directly to float (strtof, no double rounding). */
int tsio_parse_float(const char *s, size_t n, float *out);
/* Parse a whole token as a decimal integer with optional sign, in [lo, hi]. 0 or -1. */
int tsio_parse_int(const char *s, size_t n, long long lo, long long hi, long long *out);

/* Copy a printable excerpt of a token into buf for an error message: at most 40 bytes
 * of it (then "..."), control and non-ASCII bytes shown as '?'. */
void tsio_excerpt(char *buf, size_t cap, const char *s, size_t n);

/* Fail with a message "NAME:LINE: what" (or "NAME: what" when line is 0), recording line
 * and byte in err. Returns `status`. */
ts_status tsio_fail(ts_error *err, ts_status status, const char *name, unsigned long long line, size_t byte,
                    const char *fmt, ...) TS_PRINTF(6, 7);

/* Prefix an error produced by the forest builder ("tree 3: ...") with "NAME:LINE" and
 * record line and byte. Returns err's status (or `status` when err is NULL). */
ts_status tsio_locate(ts_error *err, ts_status status, const char *name, unsigned long long line, size_t byte);

#endif /* TS_IO_TEXT_H */
