/* json.c: a small bounds-checked JSON pull parser (no DOM) for the XGBoost model loader. */
#include "io/json.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "common/error.h"
#include "io/limits.h"
#include "io/num.h"
#include "io/text.h"

void tsj_init(tsj_parser *p, const char *data, size_t size, size_t start, const char *name, ts_error *err) {
    memset(p, 0, sizeof *p);
    p->data = data;
    p->size = size;
    p->pos = start;
    p->name = name;
    p->err = err;
    p->status = TS_OK;
}

static ts_status vfail(tsj_parser *p, ts_status status, size_t byte, const char *fmt, va_list ap) {
    char what[TS_ERROR_MESSAGE_SIZE];
    if (p->status != TS_OK) return p->status; /* keep the first error */
    vsnprintf(what, sizeof what, fmt, ap);
    p->status = status;
    return tsio_fail(p->err, status, p->name, tsio_line_at(p->data, p->size, byte), byte, "%s", what);
}

ts_status tsj_fail(tsj_parser *p, ts_status status, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    ts_status st = vfail(p, status, p->pos, fmt, ap);
    va_end(ap);
    return st;
}

ts_status tsj_fail_at(tsj_parser *p, ts_status status, size_t byte, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    ts_status st = vfail(p, status, byte, fmt, ap);
    va_end(ap);
    return st;
}

static void skip_ws(tsj_parser *p) {
    while (p->pos < p->size) {
        char c = p->data[p->pos];
        if (c != ' ' && c != '\t' && c != '\n' && c != '\r') break;
        p->pos++;
    }
}

size_t tsj_offset(tsj_parser *p) {
    skip_ws(p);
    return p->pos;
}

static ts_status unexpected(tsj_parser *p, const char *expected) {
    if (p->pos >= p->size)
        return tsj_fail(p, TS_ERR_PARSE, "unexpected end of input, expected %s: truncated?", expected);
    unsigned char c = (unsigned char)p->data[p->pos];
    if (c >= 0x20 && c < 0x7f) return tsj_fail(p, TS_ERR_PARSE, "unexpected '%c', expected %s", c, expected);
    return tsj_fail(p, TS_ERR_PARSE, "unexpected byte 0x%02x, expected %s", c, expected);
}

ts_status tsj_peek(tsj_parser *p, tsj_type *type) {
    if (p->status != TS_OK) return p->status;
    skip_ws(p);
    if (p->pos >= p->size) return unexpected(p, "a value");
    switch (p->data[p->pos]) {
    case '{': *type = TSJ_OBJECT; return TS_OK;
    case '[': *type = TSJ_ARRAY; return TS_OK;
    case '"': *type = TSJ_STRING; return TS_OK;
    case 't': *type = TSJ_TRUE; return TS_OK;
    case 'f': *type = TSJ_FALSE; return TS_OK;
    case 'n': *type = TSJ_NULL; return TS_OK;
    case '-': case 'N': case 'I':
    case '0': case '1': case '2': case '3': case '4': case '5': case '6': case '7': case '8': case '9':
        *type = TSJ_NUMBER;
        return TS_OK;
    default: return unexpected(p, "a value");
    }
}

static ts_status open_container(tsj_parser *p, char open, int is_object) {
    if (p->status != TS_OK) return p->status;
    skip_ws(p);
    if (p->pos >= p->size || p->data[p->pos] != open) return unexpected(p, is_object ? "an object" : "an array");
    if (p->depth >= TSJ_MAX_DEPTH) return tsj_fail(p, TS_ERR_LIMIT, "JSON nested deeper than %d levels", TSJ_MAX_DEPTH);
    p->pos++;
    p->first[p->depth] = 1;
    p->is_object[p->depth] = (unsigned char)is_object;
    p->depth++;
    return TS_OK;
}

ts_status tsj_object_begin(tsj_parser *p) { return open_container(p, '{', 1); }
ts_status tsj_array_begin(tsj_parser *p) { return open_container(p, '[', 0); }

/* Before the next element of the innermost container: closes it (*has = 0) or
 * consumes the separating comma (*has = 1). */
static ts_status element_start(tsj_parser *p, int is_object, int *has) {
    char close = is_object ? '}' : ']';
    *has = 0;
    if (p->status != TS_OK) return p->status;
    if (p->depth == 0 || p->is_object[p->depth - 1] != is_object)
        return tsj_fail(p, TS_ERR_GENERIC, "internal error: JSON parser used out of order");
    skip_ws(p);
    if (p->pos >= p->size) return unexpected(p, is_object ? "',' or '}'" : "',' or ']'");
    if (p->data[p->pos] == close) {
        p->pos++;
        p->depth--;
        return TS_OK;
    }
    if (!p->first[p->depth - 1]) {
        if (p->data[p->pos] != ',') return unexpected(p, is_object ? "',' or '}'" : "',' or ']'");
        p->pos++;
        skip_ws(p);
    }
    p->first[p->depth - 1] = 0;
    *has = 1;
    return TS_OK;
}

static int hex_value(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

/* Read 4 hex digits at p->pos. */
static ts_status read_hex4(tsj_parser *p, unsigned *out) {
    unsigned v = 0;
    if (p->size - p->pos < 4) return tsj_fail(p, TS_ERR_PARSE, "truncated \\u escape");
    for (int i = 0; i < 4; i++) {
        int h = hex_value(p->data[p->pos + (size_t)i]);
        if (h < 0) return tsj_fail(p, TS_ERR_PARSE, "bad \\u escape");
        v = v * 16 + (unsigned)h;
    }
    p->pos += 4;
    *out = v;
    return TS_OK;
}

/* Append a code point as UTF-8; sets *overflow when buf is full. */
static void put_utf8(char *buf, size_t cap, size_t *len, unsigned cp, int *overflow) {
    char tmp[4];
    size_t n;
    if (cp < 0x80) {
        tmp[0] = (char)cp;
        n = 1;
    } else if (cp < 0x800) {
        tmp[0] = (char)(0xC0 | (cp >> 6));
        tmp[1] = (char)(0x80 | (cp & 0x3F));
        n = 2;
    } else if (cp < 0x10000) {
        tmp[0] = (char)(0xE0 | (cp >> 12));
        tmp[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
        tmp[2] = (char)(0x80 | (cp & 0x3F));
        n = 3;
    } else {
        tmp[0] = (char)(0xF0 | (cp >> 18));
        tmp[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
        tmp[2] = (char)(0x80 | ((cp >> 6) & 0x3F));
        tmp[3] = (char)(0x80 | (cp & 0x3F));
        n = 4;
    }
    if (*len + n + 1 > cap) {
        *overflow = 1;
        return;
    }
    memcpy(buf + *len, tmp, n);
    *len += n;
}

static ts_status read_escape(tsj_parser *p, char *buf, size_t cap, size_t *len, int *overflow) {
    static const char from[] = "\"\\/bfnrt", to[] = "\"\\/\b\f\n\r\t";
    if (p->pos >= p->size) return unexpected(p, "an escape");
    char e = p->data[p->pos++];
    const char *k = e ? strchr(from, e) : NULL;
    if (k) {
        put_utf8(buf, cap, len, (unsigned char)to[k - from], overflow);
        return TS_OK;
    }
    if (e != 'u') {
        p->pos--;
        return tsj_fail(p, TS_ERR_PARSE, "bad escape in a string");
    }
    unsigned cp, lo;
    TS_TRY(read_hex4(p, &cp));
    if (cp >= 0xD800 && cp < 0xDC00) {
        if (p->size - p->pos < 2 || p->data[p->pos] != '\\' || p->data[p->pos + 1] != 'u')
            return tsj_fail(p, TS_ERR_PARSE, "unpaired surrogate in a \\u escape");
        p->pos += 2;
        TS_TRY(read_hex4(p, &lo));
        if (lo < 0xDC00 || lo > 0xDFFF) return tsj_fail(p, TS_ERR_PARSE, "unpaired surrogate in a \\u escape");
        cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
    } else if (cp >= 0xDC00 && cp <= 0xDFFF) {
        return tsj_fail(p, TS_ERR_PARSE, "unpaired surrogate in a \\u escape");
    }
    put_utf8(buf, cap, len, cp, overflow);
    return TS_OK;
}

/* Decode the string at p->pos into buf (cap >= 1). *overflow set when it does not fit. */
static ts_status read_string(tsj_parser *p, char *buf, size_t cap, int *overflow) {
    size_t len = 0, start = p->pos;
    *overflow = 0;
    if (p->pos >= p->size || p->data[p->pos] != '"') return unexpected(p, "a string");
    p->pos++;
    for (;;) {
        if (p->pos >= p->size) return tsj_fail_at(p, TS_ERR_PARSE, start, "unterminated string: truncated?");
        unsigned char c = (unsigned char)p->data[p->pos];
        if (c == '"') {
            p->pos++;
            break;
        }
        if (c < 0x20) return tsj_fail(p, TS_ERR_PARSE, "control character 0x%02x in a string", c);
        p->pos++;
        if (c == '\\') {
            TS_TRY(read_escape(p, buf, cap, &len, overflow));
        } else if (len + 2 > cap) {
            *overflow = 1;
        } else {
            buf[len++] = (char)c;
        }
    }
    buf[len] = '\0';
    return TS_OK;
}

ts_status tsj_object_next(tsj_parser *p, char key[TSJ_KEY_MAX], int *has) {
    int overflow;
    TS_TRY(element_start(p, 1, has));
    if (!*has) return TS_OK;
    if (p->pos >= p->size || p->data[p->pos] != '"') return unexpected(p, "a key string");
    TS_TRY(read_string(p, key, TSJ_KEY_MAX, &overflow));
    if (overflow) key[0] = '\0';
    skip_ws(p);
    if (p->pos >= p->size || p->data[p->pos] != ':') return unexpected(p, "':'");
    p->pos++;
    return TS_OK;
}

ts_status tsj_array_next(tsj_parser *p, int *has) { return element_start(p, 0, has); }

ts_status tsj_string(tsj_parser *p, char *buf, size_t cap) {
    int overflow;
    size_t start;
    if (p->status != TS_OK) return p->status;
    start = tsj_offset(p);
    TS_TRY(read_string(p, buf, cap, &overflow));
    if (overflow) return tsj_fail_at(p, TS_ERR_PARSE, start, "string longer than %zu bytes", cap - 1);
    return TS_OK;
}

ts_status tsj_string_prefix(tsj_parser *p, char *buf, size_t cap, int *truncated) {
    if (p->status != TS_OK) return p->status;
    skip_ws(p);
    return read_string(p, buf, cap, truncated);
}

static size_t digits(tsj_parser *p) {
    size_t n = 0;
    while (p->pos < p->size && p->data[p->pos] >= '0' && p->data[p->pos] <= '9') p->pos++, n++;
    return n;
}

static int match_word(tsj_parser *p, const char *w) {
    size_t n = strlen(w);
    if (p->size - p->pos < n || memcmp(p->data + p->pos, w, n) != 0) return 0;
    p->pos += n;
    return 1;
}

ts_status tsj_number(tsj_parser *p, const char **tok, size_t *n) {
    if (p->status != TS_OK) return p->status;
    size_t start = tsj_offset(p);
    if (match_word(p, "NaN") || match_word(p, "Infinity") || match_word(p, "-Infinity")) goto done;
    if (p->pos < p->size && p->data[p->pos] == '-') p->pos++;
    if (p->pos < p->size && p->data[p->pos] == '0')
        p->pos++;
    else if (digits(p) == 0)
        return unexpected(p, "a number");
    if (p->pos < p->size && p->data[p->pos] == '.') {
        p->pos++;
        if (digits(p) == 0) return unexpected(p, "a digit");
    }
    if (p->pos < p->size && (p->data[p->pos] == 'e' || p->data[p->pos] == 'E')) {
        p->pos++;
        if (p->pos < p->size && (p->data[p->pos] == '+' || p->data[p->pos] == '-')) p->pos++;
        if (digits(p) == 0) return unexpected(p, "a digit");
    }
done:
    *tok = p->data + start;
    *n = p->pos - start;
    return TS_OK;
}

ts_status tsj_bool(tsj_parser *p, int accept_int, int *out) {
    tsj_type t;
    TS_TRY(tsj_peek(p, &t));
    if (match_word(p, "true")) {
        *out = 1;
        return TS_OK;
    }
    if (match_word(p, "false")) {
        *out = 0;
        return TS_OK;
    }
    if (accept_int && t == TSJ_NUMBER) {
        size_t start = p->pos;
        const char *tok;
        size_t n;
        TS_TRY(tsj_number(p, &tok, &n));
        if (n == 1 && (tok[0] == '0' || tok[0] == '1')) {
            *out = tok[0] == '1';
            return TS_OK;
        }
        return tsj_fail_at(p, TS_ERR_PARSE, start, "expected 0 or 1");
    }
    return unexpected(p, accept_int ? "true, false, 0 or 1" : "true or false");
}

static ts_status skip_scalar(tsj_parser *p, tsj_type t) {
    char buf[8];
    int overflow;
    const char *tok;
    size_t n;
    switch (t) {
    case TSJ_NULL: return match_word(p, "null") ? TS_OK : unexpected(p, "a value");
    case TSJ_TRUE: return match_word(p, "true") ? TS_OK : unexpected(p, "a value");
    case TSJ_FALSE: return match_word(p, "false") ? TS_OK : unexpected(p, "a value");
    case TSJ_NUMBER: return tsj_number(p, &tok, &n);
    case TSJ_STRING: return read_string(p, buf, sizeof buf, &overflow);
    default: return tsj_fail(p, TS_ERR_GENERIC, "internal error: not a scalar");
    }
}

ts_status tsj_skip(tsj_parser *p) {
    unsigned base = p->depth;
    char key[TSJ_KEY_MAX];
    for (;;) {
        tsj_type t;
        int has = 0;
        TS_TRY(tsj_peek(p, &t));
        if (t == TSJ_OBJECT)
            TS_TRY(tsj_object_begin(p));
        else if (t == TSJ_ARRAY)
            TS_TRY(tsj_array_begin(p));
        else
            TS_TRY(skip_scalar(p, t));
        /* Close finished containers until another value is due or the skipped one ended. */
        while (p->depth > base) {
            if (p->is_object[p->depth - 1])
                TS_TRY(tsj_object_next(p, key, &has));
            else
                TS_TRY(tsj_array_next(p, &has));
            if (has) break;
        }
        if (p->depth == base) return TS_OK;
    }
}

ts_status tsj_end(tsj_parser *p) {
    if (p->status != TS_OK) return p->status;
    skip_ws(p);
    if (p->pos != p->size) return unexpected(p, "the end of the input after the top-level value");
    return TS_OK;
}

ts_status tsj_read_int(tsj_parser *p, const char *key, long long lo, long long hi, long long *out) {
    const char *tok;
    size_t n, at = tsj_offset(p);
    TS_TRY(tsj_number(p, &tok, &n));
    if (tsio_parse_int(tok, n, lo, hi, out) == 0) return TS_OK;
    char ex[64];
    tsio_excerpt(ex, sizeof ex, tok, n);
    if (tsio_int_above(tok, n, hi))
        return tsj_fail_at(p, TS_ERR_LIMIT, at, "\"%s\" %s is above the limit %lld", key, ex, hi);
    return tsj_fail_at(p, TS_ERR_PARSE, at, "bad \"%s\" %s (expected an integer from %lld to %lld)", key, ex, lo, hi);
}
