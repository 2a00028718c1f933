/* data_core.c: reader core of the data readers: the query file, comments and token errors. */
#include "data/data_core.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/error.h"

static char *copy_string(const char *s) {
    size_t n = strlen(s) + 1;
    char *c = malloc(n);
    if (c) memcpy(c, s, n);
    return c;
}

ts_status tsio_query_open(tsio_reader *r, ts_error *err) {
    if (!r->opts.query_file) return TS_OK;
    r->query_name = copy_string(r->opts.query_file);
    if (!r->query_name) return ts_fail(err, TS_ERR_NO_MEMORY, "out of memory");
    TS_TRY(tsio_src_open(&r->qsrc, r->query_name, r->query_name, r->opts.max_line_bytes, err));
    r->has_query = 1;
    r->q_index = -1;
    return TS_OK;
}

/* ---- Query file ---------------------------------------------------------------------- */

/* The next group size from the query file; *got = 0 at its end. */
static ts_status query_next_size(tsio_reader *r, uint64_t *size, int *got, ts_error *err) {
    tsio_line ln;
    for (;;) {
        size_t i = 0, n;
        uint64_t v = 0;
        TS_TRY(tsio_src_next_line(&r->qsrc, &ln, got, err));
        if (!*got) return TS_OK;
        n = ln.len;
        if (ln.line_no == 1 && n >= 3 && memcmp(ln.p, "\xEF\xBB\xBF", 3) == 0) { /* a UTF-8 byte order mark */
            ln.p += 3;
            ln.len -= 3;
            ln.byte += 3;
            n -= 3;
        }
        while (n > 0 && (ln.p[n - 1] == ' ' || ln.p[n - 1] == '\t')) n--;
        while (i < n && (ln.p[i] == ' ' || ln.p[i] == '\t')) i++;
        if (i == n) continue;
        for (; i < n && (unsigned)(ln.p[i] - '0') < 10u && v <= UINT64_MAX / 20; i++) v = v * 10 + (uint64_t)(ln.p[i] - '0');
        if (i != n || v == 0) {
            char tok[TSIO_TOKEN_TEXT_SIZE];
            tsio_token_text(ln.p, n, tok, sizeof tok);
            return ts_fail_at(err, TS_ERR_PARSE, ln.line_no, ln.byte,
                              "%s:%llu: query size '%s' is not a positive integer", r->query_name,
                              (unsigned long long)ln.line_no, tok);
        }
        *size = v;
        return TS_OK;
    }
}

ts_status tsio_row_query(tsio_reader *r, const tsio_line *ln, int64_t *qid, ts_error *err) {
    *qid = -1;
    if (!r->has_query) return TS_OK;
    while (r->q_left == 0) {
        uint64_t size;
        int got;
        TS_TRY(query_next_size(r, &size, &got, err));
        if (!got) {
            char where[64] = "";
            if (ln) snprintf(where, sizeof where, " is on line %llu", (unsigned long long)ln->line_no);
            return ts_fail_at(err, TS_ERR_PARSE, ln ? ln->line_no : 0, ln ? ln->byte : 0,
                              "%s: query sizes add up to %llu rows but %s has more (row %llu%s)", r->query_name,
                              (unsigned long long)r->q_sum, r->name, (unsigned long long)r->q_sum + 1, where);
        }
        r->q_left = size;
        r->q_sum = size > UINT64_MAX - r->q_sum ? UINT64_MAX : r->q_sum + size; /* no wrap back to the rows */
        r->q_index++;
    }
    r->q_left--;
    *qid = r->q_index;
    return TS_OK;
}

ts_status tsio_query_check_end(tsio_reader *r, ts_error *err) {
    uint64_t total, size;
    int got = 1;
    if (!r->has_query) return TS_OK;
    total = r->q_sum;
    while (got) {
        TS_TRY(query_next_size(r, &size, &got, err));
        if (got) total = size > UINT64_MAX - total ? UINT64_MAX : total + size; /* 2^63 + 2^63 wrapped to 0 */
    }
    if (total != r->rows_total || r->q_left != 0)
        return ts_fail(err, TS_ERR_PARSE, "%s: query sizes add up to %llu rows but %s has %llu", r->query_name,
                       (unsigned long long)total, r->name, (unsigned long long)r->rows_total);
    return TS_OK;
}

/* ---- Comments and errors ------------------------------------------------------------- */

ts_status tsio_set_comment(tsio_reader *r, size_t row, const char *s, size_t n, ts_error *err) {
    if (r->arena_cap - r->arena_len < n + 1) {
        size_t cap = r->arena_cap ? r->arena_cap : 4096;
        char *na;
        while (cap - r->arena_len < n + 1) cap *= 2;
        na = realloc(r->arena, cap);
        if (!na) return ts_fail(err, TS_ERR_NO_MEMORY, "%s: out of memory for comments", r->name);
        r->arena = na;
        r->arena_cap = cap;
    }
    memcpy(r->arena + r->arena_len, s, n);
    r->arena[r->arena_len + n] = '\0';
    r->comment_off[row] = r->arena_len;
    r->arena_len += n + 1;
    return TS_OK;
}

ts_status tsio_fail_token(tsio_reader *r, const tsio_line *ln, const char *tok, size_t n, const char *what,
                          ts_error *err) {
    char text[TSIO_TOKEN_TEXT_SIZE];
    tsio_token_text(tok, n, text, sizeof text);
    return ts_fail_at(err, TS_ERR_PARSE, ln->line_no, ln->byte + (uint64_t)(tok - ln->p), "%s:%llu: %s '%s'", r->name,
                      (unsigned long long)ln->line_no, what, text);
}

ts_status tsio_check_text_line(const tsio_reader *r, const tsio_line *ln, ts_error *err) {
    if (memchr(ln->p, '\0', ln->len))
        return ts_fail_at(err, TS_ERR_PARSE, ln->line_no, ln->byte, "%s:%llu: NUL byte in a text line (binary data?)",
                          r->name, (unsigned long long)ln->line_no);
    /* A CR inside the line (CRLF's CR ends it): a file of CR-only line endings is one
     * line, which a CSV reader took for a header and scored no rows (and before that
     * crashed); quoted CSV fields may hold one. */
    const char *cr = ln->len > 1 ? memchr(ln->p, '\r', ln->len - 1) : NULL;
    if (cr && !memchr(ln->p, '"', ln->len))
        return ts_fail_at(err, TS_ERR_PARSE, ln->line_no, ln->byte + (uint64_t)(cr - ln->p),
                          "%s:%llu: a carriage return (\\r) inside the line: CR-only (old Mac) line endings? "
                          "Lines must end with LF or CRLF", r->name, (unsigned long long)ln->line_no);
    return TS_OK;
}
