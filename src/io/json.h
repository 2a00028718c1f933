/* json.h: a small bounds-checked JSON pull parser (no DOM) for the XGBoost model loader. */
#ifndef TS_IO_JSON_H
#define TS_IO_JSON_H

#include <stddef.h>

#include "treescore.h"

/*
 * The parser walks the input once, front to back, and the caller pulls values in
 * document order: open an object, iterate its keys, read or skip each value. It keeps
 * no tree of values, so a 1 GB model costs no more memory than what the caller keeps.
 *
 * Invariants: the parser never reads at or past data + size; nesting deeper than
 * TSJ_MAX_DEPTH is an error (and nothing recurses on the C stack: tsj_skip is
 * iterative); numbers are handed out as the exact token text, to be converted from a
 * bounded copy (tsio_parse_*). Every error sets err to "NAME:LINE: what" with line and
 * byte filled, and the parser stays failed (later calls return the same status).
 *
 * Accepted beyond RFC 8259: the number tokens NaN, Infinity and -Infinity (XGBoost
 * writes them for non-finite floats).
 */

/* 512 levels: a tree dumped as nested JSON objects (XGBoost dumps: two levels per tree
 * level; LightGBM JSON: one) loads up to depth ~255 / ~511, and the loaders that
 * recurse over those nodes (about 250 bytes of stack per level) stay within 128 KiB. */
#define TSJ_MAX_DEPTH 512
#define TSJ_KEY_MAX 64

typedef enum tsj_type {
    TSJ_NULL,
    TSJ_FALSE,
    TSJ_TRUE,
    TSJ_NUMBER,
    TSJ_STRING,
    TSJ_ARRAY,
    TSJ_OBJECT
} tsj_type;

typedef struct tsj_parser {
    const char *data;
    size_t size;
    size_t pos;
    const char *name;
    ts_error *err;
    ts_status status;                  /* first failure, sticky */
    unsigned depth;
    unsigned char first[TSJ_MAX_DEPTH]; /* per open container: no element read yet */
    unsigned char is_object[TSJ_MAX_DEPTH]; /* per open container: object (1) or array (0) */
} tsj_parser;

void tsj_init(tsj_parser *p, const char *data, size_t size, size_t start, const char *name, ts_error *err);

/* Fail at the current position (or at `byte`) with "NAME:LINE: what". */
ts_status tsj_fail(tsj_parser *p, ts_status status, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;
ts_status tsj_fail_at(tsj_parser *p, ts_status status, size_t byte, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 4, 5)))
#endif
    ;

/* Type of the next value (skips whitespace, consumes nothing). */
ts_status tsj_peek(tsj_parser *p, tsj_type *type);
/* Byte offset of the next value (after whitespace). */
size_t tsj_offset(tsj_parser *p);

/* Objects: tsj_object_begin, then while (tsj_object_next(p, key, &has) == TS_OK && has)
 * { read or skip the value }. `key` (TSJ_KEY_MAX bytes) receives the decoded key; a
 * key too long for it is returned as "" (no caller looks for ""). has == 0 after the
 * closing brace. */
ts_status tsj_object_begin(tsj_parser *p);
ts_status tsj_object_next(tsj_parser *p, char key[TSJ_KEY_MAX], int *has);

/* Arrays: tsj_array_begin, then while (tsj_array_next(p, &has) == TS_OK && has) { value }. */
ts_status tsj_array_begin(tsj_parser *p);
ts_status tsj_array_next(tsj_parser *p, int *has);

/* A string value decoded into buf (NUL-terminated); TS_ERR_PARSE if it needs more than
 * cap - 1 bytes. Escapes are decoded; \u escapes become UTF-8. */
ts_status tsj_string(tsj_parser *p, char *buf, size_t cap);
/* The same, but a string too long for buf is not an error: *truncated is set and buf
 * holds its first bytes. */
ts_status tsj_string_prefix(tsj_parser *p, char *buf, size_t cap, int *truncated);
/* A number value: *tok and *n receive its text in the input. */
ts_status tsj_number(tsj_parser *p, const char **tok, size_t *n);
/* An integer value of `key` in [lo, hi], parsed as the text loaders parse one; a value
 * above hi is TS_ERR_LIMIT (a claimed size: nothing of it is allocated), anything else
 * out of range or not an integer TS_ERR_PARSE, either at the value's byte. */
ts_status tsj_read_int(tsj_parser *p, const char *key, long long lo, long long hi, long long *out);
/* true/false, or the numbers 0/1 when accept_int. */
ts_status tsj_bool(tsj_parser *p, int accept_int, int *out);
/* Skip any value. */
ts_status tsj_skip(tsj_parser *p);
/* After the top-level value: only whitespace may follow. */
ts_status tsj_end(tsj_parser *p);

#endif /* TS_IO_JSON_H */
