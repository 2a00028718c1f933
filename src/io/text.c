/* text.c: reader core for the in-memory model loaders: spans, lines, located error messages. */
#include "io/text.h"

#include "model/forest.h"

#include <stdarg.h>
#include <stdio.h>
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

void tsio_token_text(const char *s, size_t n, char *out, size_t out_size) {
    static const char hex[] = "0123456789abcdef";
    size_t i, k = 0, shown = n > 40 ? 40 : n;
    for (i = 0; i < shown && k + 5 < out_size; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c >= 0x20 && c < 0x7f) {
            out[k++] = (char)c;
        } else {
            out[k++] = '\\';
            out[k++] = 'x';
            out[k++] = hex[c >> 4];
            out[k++] = hex[c & 15];
        }
    }
    if (i < n && k + 4 <= out_size) {
        memcpy(out + k, "...", 3);
        k += 3;
    }
    out[k] = '\0';
}

static int ascii_lower(int c) { return c >= 'A' && c <= 'Z' ? c + ('a' - 'A') : c; }

int tsio_same_ci(const char *s, size_t n, const char *word) {
    size_t i;
    for (i = 0; i < n; i++)
        if (word[i] == '\0' || ascii_lower((unsigned char)s[i]) != word[i]) return 0;
    return word[n] == '\0';
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

ts_status tsio_relocate_byte(ts_error *err, ts_status st, const char *name, size_t byte) {
    if (!err) return st;
    char what[TS_ERROR_MESSAGE_SIZE];
    const char *m = err->message;
    size_t k = strlen(name);
    if (strncmp(m, name, k) == 0 && m[k] == ':') { /* the prefix tsio_fail / tsio_locate wrote */
        m += k + 1;
        while (*m >= '0' && *m <= '9') m++;
        if (*m == ':') m++;
        if (*m == ' ') m++;
    }
    snprintf(what, sizeof what, "%s", m);
    if (err->byte == 0) return ts_fail(err, st, "%s: %s", name, what);
    return ts_fail_at(err, st, 0, byte, "%s: byte %zu: %s", name, byte, what);
}

ts_status tsio_finish_located(ts_model *m, const char *name, const char *data, size_t size, const size_t *tree_byte,
                              ts_error *err) {
    ts_status st = tsm_model_finish(m, err);
    if (st == TS_OK) return TS_OK;
    unsigned tree;
    if (err && sscanf(err->message, "tree %u", &tree) == 1 && tree < m->n_trees)
        return tsio_locate(err, st, name, tsio_line_at(data, size, tree_byte[tree]), tree_byte[tree]);
    return tsio_locate(err, st, name, 0, 0);
}
