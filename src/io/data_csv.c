/* data_csv.c: CSV/TSV reader: header detection, quoted fields, missing markers, a label column. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/error.h"
#include "io/data_internal.h"

/* Spaces around a field are ignored (tabs too, in CSV). */
static int is_pad(char c, char sep) { return c == ' ' || (c == '\t' && sep != '\t'); }

/* Blank: only padding (a TSV line of tabs is a row of missing values, not blank). */
static int line_is_blank(const tsio_line *ln, char sep) {
    size_t i;
    for (i = 0; i < ln->len; i++)
        if (!is_pad(ln->p[i], sep) && ln->p[i] != '\r') return 0;
    return 1;
}

/* A quoted field starting at *pp (just after the opening quote): its content up to the
 * closing quote ("" inside stays as is: such a field is never a number). */
static ts_status split_quoted(tsio_reader *r, const tsio_line *ln, char **pp, char *e, tsio_span *f, ts_error *err) {
    char *p = *pp, *open = p - 1;
    for (;;) {
        char *q = memchr(p, '"', (size_t)(e - p));
        if (!q) return tsio_fail_token(r, ln, open, (size_t)(e - open), "unterminated quoted field", err);
        if (q + 1 < e && q[1] == '"') {
            p = q + 2;
            continue;
        }
        f->p = *pp;
        f->n = (size_t)(q - *pp);
        p = q + 1;
        break;
    }
    while (p < e && is_pad(*p, r->sep)) p++;
    if (p < e && *p != r->sep) return tsio_fail_token(r, ln, open, (size_t)(p + 1 - open), "text after a quoted field:", err);
    *pp = p;
    return TS_OK;
}

/* Split a line into fields: the first `cap` go to f[]; *count gets the total. */
static ts_status split_fields(tsio_reader *r, const tsio_line *ln, tsio_span *f, size_t cap, size_t *count,
                              ts_error *err) {
    char *p = ln->p, *e = ln->p + ln->len;
    size_t k = 0;
    for (;;) {
        tsio_span span;
        while (p < e && is_pad(*p, r->sep)) p++;
        if (p < e && *p == '"') {
            p++;
            TS_TRY(split_quoted(r, ln, &p, e, &span, err));
        } else {
            char *q = p < e ? memchr(p, r->sep, (size_t)(e - p)) : NULL;
            char *fe = q ? q : e;
            span.p = p;
            p = fe;
            while (fe > span.p && is_pad(fe[-1], r->sep)) fe--;
            span.n = (size_t)(fe - span.p);
        }
        if (k < cap) f[k] = span;
        k++;
        if (p >= e) break;
        p++; /* the separator */
    }
    *count = k;
    return TS_OK;
}

static int field_is_value(tsio_span f) {
    float v;
    return tsio_parse_f32(f.p, f.n, &v) != TSIO_NUM_BAD || tsio_is_missing_marker(f.p, f.n);
}

/* The first non-blank line; *got = 0 for an input with none. */
static ts_status first_line(tsio_reader *r, tsio_line *ln, int *got, ts_error *err) {
    for (;;) {
        TS_TRY(tsio_src_next_line(&r->src, ln, got, err));
        if (!*got || !line_is_blank(ln, r->sep)) return TS_OK;
    }
}

/* Fix the column layout from the first line's field count. */
static ts_status set_layout(tsio_reader *r, size_t n_fields, ts_error *err) {
    size_t features;
    if (r->opts.csv_label_column >= 0) {
        if ((size_t)r->opts.csv_label_column >= n_fields)
            return ts_fail(err, TS_ERR_INVALID_ARGUMENT, "%s: label column %d, but the lines have %zu fields (0..%zu)",
                           r->name, r->opts.csv_label_column, n_fields, n_fields - 1);
        r->label_col = (size_t)r->opts.csv_label_column;
    }
    features = n_fields - (r->label_col != SIZE_MAX);
    if (features == 0) return ts_fail(err, TS_ERR_SHAPE, "%s: no feature columns", r->name);
    if (features > UINT32_MAX) return ts_fail(err, TS_ERR_LIMIT, "%s: %zu columns is too many", r->name, features);
    if (r->opts.n_cols > 0 && features != r->opts.n_cols)
        return ts_fail(err, TS_ERR_SHAPE, "%s: %zu feature columns, expected %u", r->name, features, r->opts.n_cols);
    r->n_fields = n_fields;
    r->n_cols = (uint32_t)features;
    r->fields = malloc(n_fields * sizeof *r->fields);
    if (!r->fields) return ts_fail(err, TS_ERR_NO_MEMORY, "%s: out of memory", r->name);
    return TS_OK;
}

ts_status tsio_csv_init(tsio_reader *r, ts_error *err) {
    tsio_line ln;
    int got, header;
    size_t n_fields, i;
    r->sep = r->format == TSIO_DATA_TSV ? '\t' : ',';
    TS_TRY(first_line(r, &ln, &got, err));
    if (!got) { /* empty input: zero rows */
        r->n_cols = r->opts.n_cols;
        r->at_eof = 1;
        return TS_OK;
    }
    if (memchr(ln.p, '\0', ln.len))
        return ts_fail_at(err, TS_ERR_PARSE, ln.line_no, ln.byte, "%s:%llu: NUL byte in a text line (binary data?)",
                          r->name, (unsigned long long)ln.line_no);
    TS_TRY(split_fields(r, &ln, NULL, 0, &n_fields, err));
    TS_TRY(set_layout(r, n_fields, err));
    TS_TRY(split_fields(r, &ln, r->fields, n_fields, &n_fields, err));
    header = r->opts.csv_header;
    if (header < 0) {
        header = 0;
        for (i = 0; i < n_fields && !header; i++) header = !field_is_value(r->fields[i]);
    }
    if (!header) {
        tsio_src_unread_line(&r->src);
        return TS_OK;
    }
    /* Keep the feature columns' names (the label column's is not a feature). */
    r->col_names = calloc(r->n_cols ? r->n_cols : 1, sizeof *r->col_names);
    if (!r->col_names) return ts_fail(err, TS_ERR_NO_MEMORY, "%s: out of memory", r->name);
    size_t j = 0;
    for (i = 0; i < n_fields; i++) {
        if (i == r->label_col) continue;
        const char *p = r->fields[i].p;
        size_t n = r->fields[i].n;
        while (n && (*p == ' ' || *p == '"')) p++, n--;
        while (n && (p[n - 1] == ' ' || p[n - 1] == '"' || p[n - 1] == '\r')) n--;
        if (!(r->col_names[j] = malloc(n + 1))) return ts_fail(err, TS_ERR_NO_MEMORY, "%s: out of memory", r->name);
        memcpy(r->col_names[j], p, n);
        r->col_names[j++][n] = '\0';
    }
    return TS_OK;
}

/* Parse the fields of one line into chunk row `row`. */
static ts_status parse_row(tsio_reader *r, const tsio_line *ln, size_t row, ts_error *err) {
    float *xr = r->x ? r->x + row * r->n_cols : NULL;
    double *xd = r->xd ? r->xd + row * r->n_cols : NULL;
    double label = NAN;
    size_t i;
    for (i = 0; i < r->n_fields; i++) {
        tsio_span f = r->fields[i];
        int st;
        if (i == r->label_col) {
            st = tsio_parse_f64(f.p, f.n, &label);
            if (st == TSIO_NUM_BAD && tsio_is_missing_marker(f.p, f.n)) {
                st = TSIO_NUM_OK;
                label = NAN;
            }
            if (st != TSIO_NUM_OK) return tsio_fail_token(r, ln, f.p, f.n, "bad label", err);
            continue;
        }
        if (xd) {
            st = tsio_parse_f64(f.p, f.n, xd);
            if (st == TSIO_NUM_BAD && tsio_is_missing_marker(f.p, f.n)) {
                st = TSIO_NUM_OK;
                *xd = NAN;
            }
            xd++;
        } else {
            st = tsio_parse_f32(f.p, f.n, xr);
            if (st == TSIO_NUM_BAD && tsio_is_missing_marker(f.p, f.n)) {
                st = TSIO_NUM_OK;
                *xr = NAN;
            }
            xr++;
        }
        if (st == TSIO_NUM_RANGE)
            return tsio_fail_token(r, ln, f.p, f.n, xd ? "value out of double range" : "value out of float range", err);
        if (st != TSIO_NUM_OK) return tsio_fail_token(r, ln, f.p, f.n, "bad value", err);
    }
    r->labels[row] = label;
    return tsio_row_query(r, ln, &r->qids[row], err);
}

ts_status tsio_csv_fill(tsio_reader *r, size_t *rows, ts_error *err) {
    size_t row = *rows;
    while (row < r->chunk_rows) {
        tsio_line ln;
        size_t count;
        int got;
        TS_TRY(tsio_src_next_line(&r->src, &ln, &got, err));
        if (!got) {
            r->at_eof = 1;
            break;
        }
        if (line_is_blank(&ln, r->sep)) continue;
        if (memchr(ln.p, '\0', ln.len))
            return ts_fail_at(err, TS_ERR_PARSE, ln.line_no, ln.byte, "%s:%llu: NUL byte in a text line (binary data?)",
                              r->name, (unsigned long long)ln.line_no);
        TS_TRY(split_fields(r, &ln, r->fields, r->n_fields, &count, err));
        if (count != r->n_fields)
            return ts_fail_at(err, TS_ERR_PARSE, ln.line_no, ln.byte, "%s:%llu: %zu fields, expected %zu", r->name,
                              (unsigned long long)ln.line_no, count, r->n_fields);
        TS_TRY(parse_row(r, &ln, row, err));
        if (row == 0) r->chunk_first_line = ln.line_no;
        row++;
    }
    *rows = row;
    return TS_OK;
}
