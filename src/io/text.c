/* text.c: shared helpers of the model loaders: lines, bounded number parsing, located error messages. */
#include "io/text.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

size_t tsio_skip_bom(const char *data, size_t size) {
    if (size >= 3 && (unsigned char)data[0] == 0xEF && (unsigned char)data[1] == 0xBB &&
        (unsigned char)data[2] == 0xBF)
        return 3;
    return 0;
}

unsigned long long tsio_line_at(const char *data, size_t size, size_t byte) {
    unsigned long long line = 1;
    const char *p = data, *end = data + (byte < size ? byte : size);
    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        if (!nl) break;
        line++;
        p = nl + 1;
    }
    return line;
}

static int is_space(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n'; }

void tsio_trim(const char **s, size_t *n) {
    while (*n > 0 && is_space((*s)[0])) {
        (*s)++;
        (*n)--;
    }
    while (*n > 0 && is_space((*s)[*n - 1])) (*n)--;
}

static int lower(char c) { return (c >= 'A' && c <= 'Z') ? c - 'A' + 'a' : c; }

static int word_is(const char *s, size_t n, const char *word) {
    size_t len = strlen(word);
    if (n != len) return 0;
    for (size_t i = 0; i < n; i++)
        if (lower(s[i]) != word[i]) return 0;
    return 1;
}

/* True when [s, s+n) is a decimal float (no hex, no spaces) or inf/infinity/nan. */
static int looks_like_number(const char *s, size_t n) {
    size_t i = 0, digits = 0;
    if (i < n && (s[i] == '+' || s[i] == '-')) i++;
    if (word_is(s + i, n - i, "inf") || word_is(s + i, n - i, "infinity") || word_is(s + i, n - i, "nan"))
        return 1;
    while (i < n && s[i] >= '0' && s[i] <= '9') i++, digits++;
    if (i < n && s[i] == '.') {
        i++;
        while (i < n && s[i] >= '0' && s[i] <= '9') i++, digits++;
    }
    if (digits == 0) return 0;
    if (i < n && (s[i] == 'e' || s[i] == 'E')) {
        size_t exp_digits = 0;
        i++;
        if (i < n && (s[i] == '+' || s[i] == '-')) i++;
        while (i < n && s[i] >= '0' && s[i] <= '9') i++, exp_digits++;
        if (exp_digits == 0) return 0;
    }
    return i == n;
}

/* Copy a candidate number token into buf (NUL-terminated). 0 or -1. */
static int copy_token(const char *s, size_t n, char buf[TSIO_NUMBER_MAX + 1]) {
    if (n == 0 || n > TSIO_NUMBER_MAX || !looks_like_number(s, n)) return -1;
    memcpy(buf, s, n);
    buf[n] = '\0';
    return 0;
}

int tsio_parse_double(const char *s, size_t n, double *out) {
    char buf[TSIO_NUMBER_MAX + 1];
    char *end;
    if (copy_token(s, n, buf) != 0) return -1;
    *out = strtod(buf, &end);
    return end == buf + n ? 0 : -1;
}

int tsio_parse_float(const char *s, size_t n, float *out) {
    char buf[TSIO_NUMBER_MAX + 1];
    char *end;
    if (copy_token(s, n, buf) != 0) return -1;
    *out = strtof(buf, &end);
    return end == buf + n ? 0 : -1;
}

int tsio_parse_int(const char *s, size_t n, long long lo, long long hi, long long *out) {
    size_t i = 0;
    int neg = 0;
    unsigned long long v = 0;
    if (n > 0 && (s[0] == '+' || s[0] == '-')) {
        neg = s[0] == '-';
        i = 1;
    }
    if (i == n) return -1;
    if (n - i > 18) return -1; /* 18 digits fit a long long; no bound used here is larger */
    for (; i < n; i++) {
        if (s[i] < '0' || s[i] > '9') return -1;
        v = v * 10 + (unsigned)(s[i] - '0');
    }
    long long x = neg ? -(long long)v : (long long)v;
    if (x < lo || x > hi) return -1;
    *out = x;
    return 0;
}

void tsio_excerpt(char *buf, size_t cap, const char *s, size_t n) {
    size_t k = 0, limit = n > 40 ? 40 : n;
    if (cap == 0) return;
    for (size_t i = 0; i < limit && k + 1 < cap; i++) {
        unsigned char c = (unsigned char)s[i];
        buf[k++] = (c >= 0x20 && c < 0x7f) ? (char)c : '?';
    }
    if (n > limit)
        for (int j = 0; j < 3 && k + 1 < cap; j++) buf[k++] = '.';
    buf[k] = '\0';
}

ts_status tsio_fail(ts_error *err, ts_status status, const char *name, unsigned long long line, size_t byte,
                    const char *fmt, ...) {
    char what[TS_ERROR_MESSAGE_SIZE];
    va_list ap;
    if (!err) return status;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    if (line)
        return ts_fail_at(err, status, line, byte, "%s:%llu: %s", name, line, what);
    return ts_fail_at(err, status, 0, byte, "%s: %s", name, what);
}

ts_status tsio_locate(ts_error *err, ts_status status, const char *name, unsigned long long line, size_t byte) {
    if (!err) return status;
    if (line)
        ts_error_prefix(err, "%s:%llu", name, line);
    else
        ts_error_prefix(err, "%s", name);
    err->line = line;
    err->byte = byte;
    return err->status;
}
