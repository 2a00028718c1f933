/* num.h: the one decimal number parser of io/, shared by the model loaders and the data readers. */
#ifndef TS_IO_NUM_H
#define TS_IO_NUM_H

#include <stddef.h>

/*
 * Grammar (the whole token must match, no spaces): [+-]digits[.digits][(e|E)[+-]digits]
 * with digits on at least one side of the '.', or [+-]nan / inf / infinity in any case.
 * Hex floats, "nan(...)" and locale decimal separators are not numbers.
 *
 * Results are the correctly rounded value of the decimal text, the one strtof / strtod
 * give in the "C" locale: floats are rounded from the text directly (never through a
 * double, which could round twice). Common tokens (at most 19 significant digits and a
 * small exponent) take an exact fast path (one IEEE multiply or divide of exact values);
 * the rest go to strtof / strtod in the "C" locale (strtod_l, or uselocale around the
 * call where there is no strtod_l), so the caller's LC_NUMERIC ("de_DE" with its ',')
 * never changes a result.
 */

/* ---- Data reader form: status codes, tokens inside a writable buffer ------------------
 * [s, s + n) with s[n] writable (it is restored): the slow path NUL-terminates in place.
 * A NaN comes out as the positive quiet NaN whatever its sign; a finite text that rounds
 * past the largest float/double is TSIO_NUM_RANGE (*out then holds the infinity). */
enum { TSIO_NUM_OK = 0, TSIO_NUM_BAD = 1, TSIO_NUM_RANGE = 2 };
int tsio_parse_f32(char *s, size_t n, float *out);
int tsio_parse_f64(char *s, size_t n, double *out);
/* The token starting at s and ending at the first space or tab (or at e): *end is set
 * to that end whatever the result. The SVMlight hot path. */
int tsio_parse_f32_field(char *s, const char *e, float *out, char **end);
int tsio_parse_f64_field(char *s, const char *e, double *out, char **end);

/* ---- Model loader form: 0 or -1, read-only tokens --------------------------------------
 * Tokens longer than TSIO_NUMBER_MAX bytes are -1. Overflow gives +-infinity (as strtod
 * does) and "-nan" a NaN with the sign bit set: exactly what strtod / strtof return. */
#define TSIO_NUMBER_MAX 255
/* The double nearest to the token. */
int tsio_parse_double(const char *s, size_t n, double *out);
/* The float nearest to the token (rounded from the text, not through a double). */
int tsio_parse_float(const char *s, size_t n, float *out);
/* A whole token as a decimal integer with optional sign, in [lo, hi]. */
int tsio_parse_int(const char *s, size_t n, long long lo, long long hi, long long *out);

#endif /* TS_IO_NUM_H */
