/* data_csv.c: CSV/TSV reader: header detection, quoted fields, missing markers, a label column, text columns. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/error.h"
#include "data/data_csv.h"

/* The CSV/TSV state (r->fmt). */
typedef struct csv_state {
    char sep;                   /* ',' or '\t' */
    size_t n_fields;            /* fields per line, label column included */
    size_t label_col;           /* SIZE_MAX: none */
    tsio_span *fields;          /* n_fields spans of the current line */
    unsigned char *text;        /* per field: read as text (opts.text_columns), or NULL: none is */
} csv_state;

static csv_state *csv_of(const tsio_reader *r) { return r->fmt; }

/* CSV missing markers: "", nan (any case), NA, N/A (any case). */
static int is_missing_marker(const char *s, size_t n) {
    return n == 0 || tsio_same_ci(s, n, "nan") || tsio_same_ci(s, n, "na") || tsio_same_ci(s, n, "n/a");
}

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
    while (p < e && is_pad(*p, csv_of(r)->sep)) p++;
    if (p < e && *p != csv_of(r)->sep) return tsio_fail_token(r, ln, open, (size_t)(p + 1 - open), "text after a quoted field:", err);
    *pp = p;
    return TS_OK;
}

/* Split a line into fields: the first `cap` go to f[]; *count gets the total. */
static ts_status split_fields(tsio_reader *r, const tsio_line *ln, tsio_span *f, size_t cap, size_t *count,
                              ts_error *err) {
    char *p = ln->p, *e = ln->p + ln->len;
    const char sep = csv_of(r)->sep;
    size_t k = 0;
    for (;;) {
        tsio_span span;
        while (p < e && is_pad(*p, sep)) p++;
        if (p < e && *p == '"') {
            p++;
            TS_TRY(split_quoted(r, ln, &p, e, &span, err));
        } else {
            char *q = p < e ? memchr(p, sep, (size_t)(e - p)) : NULL;
            char *fe = q ? q : e;
            span.p = p;
            p = fe;
            while (fe > span.p && is_pad(fe[-1], sep)) fe--;
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
    return tsio_parse_f32(f.p, f.n, &v) != TSIO_NUM_BAD || is_missing_marker(f.p, f.n);
}

/* The first non-blank line; *got = 0 for an input with none. */
static ts_status first_line(tsio_reader *r, tsio_line *ln, int *got, ts_error *err) {
    for (;;) {
        TS_TRY(tsio_src_next_line(&r->src, ln, got, err));
        if (!*got || !line_is_blank(ln, csv_of(r)->sep)) return TS_OK;
    }
}

/* The feature column of field i (the label column's field is none). */
static uint32_t feature_of(const csv_state *c, size_t i) { return (uint32_t)(i - (c->label_col < i)); }

/* Which fields are text (opts.text_columns, by feature column; copied: the caller's
 * array is not kept). No text column: c->text stays NULL and rows take the number path. */
static ts_status set_text_fields(tsio_reader *r, ts_error *err) {
    csv_state *c = csv_of(r);
    if (r->opts.text_columns && !r->opts.text_value)
        return ts_fail(err, TS_ERR_INVALID_ARGUMENT, "%s: text columns without a text_value function", r->name);
    for (size_t i = 0; r->opts.text_columns && i < c->n_fields; i++) {
        uint32_t j = feature_of(c, i);
        if (i != c->label_col && j < r->opts.n_text_columns && r->opts.text_columns[j]) {
            if (!c->text && !(c->text = calloc(c->n_fields, 1)))
                return ts_fail(err, TS_ERR_NO_MEMORY, "%s: out of memory", r->name);
            c->text[i] = 1;
        }
    }
    r->opts.text_columns = NULL;
    return TS_OK;
}

/* Fix the column layout from the first line's field count. */
static ts_status set_layout(tsio_reader *r, size_t n_fields, ts_error *err) {
    csv_state *c = csv_of(r);
    size_t features;
    if (r->opts.csv_label_column >= 0) {
        if ((size_t)r->opts.csv_label_column >= n_fields)
            return ts_fail(err, TS_ERR_INVALID_ARGUMENT, "%s: label column %d, but the lines have %zu fields (0..%zu)",
                           r->name, r->opts.csv_label_column, n_fields, n_fields - 1);
        c->label_col = (size_t)r->opts.csv_label_column;
    }
    features = n_fields - (c->label_col != SIZE_MAX);
    if (features == 0) return ts_fail(err, TS_ERR_SHAPE, "%s: no feature columns", r->name);
    if (features > UINT32_MAX) return ts_fail(err, TS_ERR_LIMIT, "%s: %zu columns is too many", r->name, features);
    if (r->opts.n_cols > 0 && features != r->opts.n_cols)
        return ts_fail(err, TS_ERR_SHAPE, "%s: %zu feature columns, expected %u", r->name, features, r->opts.n_cols);
    c->n_fields = n_fields;
    r->n_cols = (uint32_t)features;
    c->fields = malloc(n_fields * sizeof *c->fields);
    if (!c->fields) return ts_fail(err, TS_ERR_NO_MEMORY, "%s: out of memory", r->name);
    return set_text_fields(r, err);
}

/* Whether the fields are written 0, 1, 2, ..., n-1 (n >= 4): the column labels of
 * pandas' DataFrame(array).to_csv(index=False), a header; read as numbers, that line was
 * scored as one more row (n + 1 scores for n rows, silently). */
static int default_labels(const csv_state *c) {
    if (c->n_fields < 4) return 0;
    for (size_t i = 0; i < c->n_fields; i++) {
        char want[24];
        int k = snprintf(want, sizeof want, "%zu", i);
        const char *p = c->fields[i].p;
        size_t n = c->fields[i].n;
        while (n && (p[n - 1] == '\r' || p[n - 1] == ' ')) n--;
        if (k < 0 || (size_t)k != n || memcmp(want, p, n) != 0) return 0;
    }
    return 1;
}

/* Whether the first line (split into c->fields) is a header: a field that is not a
 * number, text columns aside, or pandas' default labels (default_labels); when every
 * field is text, whether they are the names opts.header_names expects. */
static int detect_header(const tsio_reader *r) {
    const csv_state *c = csv_of(r);
    int decided = 0;
    if (default_labels(c)) return 1;
    for (size_t i = 0; i < c->n_fields; i++) {
        if (c->text && c->text[i]) continue;
        decided = 1;
        if (!field_is_value(c->fields[i])) return 1;
    }
    if (decided || !r->opts.header_names || r->opts.n_header_names != r->n_cols) return 0;
    for (size_t i = 0; i < c->n_fields; i++) {
        const char *name = r->opts.header_names[feature_of(c, i)];
        if (!name || strlen(name) != c->fields[i].n || memcmp(name, c->fields[i].p, c->fields[i].n) != 0) return 0;
    }
    return 1;
}

/* What a bad field says of the file: ID:VALUE or qid: (SVMlight named .csv or .tsv);
 * ';' (a European spreadsheet's CSV), or a line of one field holding another separator
 * (',' of a CSV read as TSV, tabs, spaces): the file's separator is likely not the one
 * read. "" when nothing. */
static const char *separator_hint(const tsio_reader *r, tsio_span f) {
    const csv_state *c = csv_of(r);
    for (size_t k = 0; k < f.n; k++) { /* a word of digits then ':' (or qid:) */
        if (k > 0 && f.p[k - 1] != ' ' && f.p[k - 1] != '\t') continue;
        size_t d = k;
        while (d < f.n && f.p[d] >= '0' && f.p[d] <= '9') d++;
        if ((d > k && d < f.n && f.p[d] == ':') || (f.n - k > 4 && memcmp(f.p + k, "qid:", 4) == 0))
            return " (ID:VALUE fields: is the file SVMlight? --format svmlight)";
    }
    for (size_t k = 0; k < f.n; k++) {
        char ch = f.p[k];
        if (ch == ';' || (c->n_fields == 1 && (ch == ' ' || ch == '|' || (ch == ',' && c->sep != ',') ||
                                              (ch == '\t' && c->sep != '\t'))))
            return c->sep == ','
                       ? " (is the file's separator not ','? CSV fields are separated by "
                         "commas, TSV fields by tabs, and decimals take a point)"
                       : " (is the file's separator not a tab? TSV fields are separated by "
                         "tabs, CSV fields by commas (--format csv), and decimals take a point)";
    }
    return "";
}

/* A number field of a first line read as a header that no column names would hold: a
 * fraction ("0.25", "1e-3", "inf"), or a whole number out of the run 0, 1, 2, ... (or
 * 1, 2, ...) that pandas' integer column labels make ("0,1,2,3,4,y", "y,0,1,2"): the
 * values of a data row. SIZE_MAX: none. */
static size_t data_like_field(const csv_state *c) {
    unsigned long long next = 0;
    int seen = 0;
    for (size_t i = 0; i < c->n_fields; i++) {
        tsio_span f = c->fields[i];
        float v;
        if ((c->text && c->text[i]) || is_missing_marker(f.p, f.n) || tsio_parse_f32(f.p, f.n, &v) == TSIO_NUM_BAD)
            continue;
        unsigned long long w = 0;
        size_t k = 0;
        for (; k < f.n && f.p[k] >= '0' && f.p[k] <= '9' && w < 1000000000ull; k++) w = w * 10 + (unsigned)(f.p[k] - '0');
        if (k < f.n || (seen ? w != next : w > 1)) return i;
        seen = 1;
        next = w + 1;
    }
    return SIZE_MAX;
}

/* A first line taken for a header (a field that is not a number) that also holds a
 * data-like number (data_like_field) is more likely a data row with one bad value ("?",
 * "NULL", a typo): dropped as a header, every score would have landed on the line above
 * its row. Ask which. */
static ts_status check_detected_header(tsio_reader *r, const tsio_line *ln, ts_error *err) {
    const csv_state *c = csv_of(r);
    size_t num = data_like_field(c), text = SIZE_MAX;
    if (num == SIZE_MAX) return TS_OK;
    for (size_t i = 0; i < c->n_fields && text == SIZE_MAX; i++)
        if (!(c->text && c->text[i]) && !field_is_value(c->fields[i])) text = i;
    if (text == SIZE_MAX) return TS_OK;
    char a[TSIO_TOKEN_TEXT_SIZE], b[TSIO_TOKEN_TEXT_SIZE];
    tsio_token_text(c->fields[text].p, c->fields[text].n, a, sizeof a);
    tsio_token_text(c->fields[num].p, c->fields[num].n, b, sizeof b);
    return ts_fail_at(err, TS_ERR_PARSE, ln->line_no, ln->byte,
                      "%s:%llu: the first line mixes text ('%s', field %zu) with numbers ('%s', field %zu): a "
                      "header, or a row with a bad value? --header or --no-header says which%s",
                      r->name, (unsigned long long)ln->line_no, a, text, b, num, separator_hint(r, c->fields[text]));
}

static ts_status csv_init(tsio_reader *r, ts_error *err) {
    tsio_line ln;
    int got, header;
    size_t n_fields, i;
    csv_state *c = calloc(1, sizeof *c);
    if (!c) return ts_fail(err, TS_ERR_NO_MEMORY, "%s: out of memory", r->name);
    r->fmt = c;
    c->sep = r->format == TSIO_DATA_TSV ? '\t' : ',';
    c->label_col = SIZE_MAX;
    TS_TRY(first_line(r, &ln, &got, err));
    if (!got) { /* empty input: zero rows */
        r->n_cols = r->opts.n_cols;
        r->at_eof = 1;
        return TS_OK;
    }
    TS_TRY(tsio_check_text_line(r, &ln, err));
    TS_TRY(split_fields(r, &ln, NULL, 0, &n_fields, err));
    TS_TRY(set_layout(r, n_fields, err));
    TS_TRY(split_fields(r, &ln, c->fields, n_fields, &n_fields, err));
    header = r->opts.csv_header;
    if (header < 0 && (header = detect_header(r)) == 1 && !default_labels(c))
        TS_TRY(check_detected_header(r, &ln, err));
    r->opts.header_names = NULL; /* read during open only */
    if (!header) {
        tsio_src_unread_line(&r->src);
        return TS_OK;
    }
    /* Keep the feature columns' names (the label column's is not a feature). */
    r->col_names = calloc(r->n_cols ? r->n_cols : 1, sizeof *r->col_names);
    if (!r->col_names) return ts_fail(err, TS_ERR_NO_MEMORY, "%s: out of memory", r->name);
    size_t j = 0;
    for (i = 0; i < n_fields; i++) {
        if (i == c->label_col) continue;
        const char *p = c->fields[i].p;
        size_t n = c->fields[i].n;
        while (n && (*p == ' ' || *p == '"')) p++, n--;
        while (n && (p[n - 1] == ' ' || p[n - 1] == '"' || p[n - 1] == '\r')) n--;
        if (!(r->col_names[j] = malloc(n + 1))) return ts_fail(err, TS_ERR_NO_MEMORY, "%s: out of memory", r->name);
        memcpy(r->col_names[j], p, n);
        r->col_names[j++][n] = '\0';
    }
    return TS_OK;
}

/* " column J ('NAME')" of field i, for messages. */
static void column_text(const tsio_reader *r, size_t i, char *out, size_t cap) {
    uint32_t j = feature_of(csv_of(r), i);
    const char *name = r->col_names && j < r->n_cols ? r->col_names[j] : NULL;
    if (name) snprintf(out, cap, "column %u ('%.200s')", j, name);
    else snprintf(out, cap, "column %u", j);
}

/* A bad field: "NAME:LINE: what 'token' in column J ('NAME')". Out of line (and cold
 * where the compiler knows the word): the row loop stays as small as it was. */
#if defined(__GNUC__)
__attribute__((noinline, cold))
#endif
static ts_status fail_field(tsio_reader *r, const tsio_line *ln, size_t i, const char *what, ts_error *err) {
    char col[256], text[TSIO_TOKEN_TEXT_SIZE];
    tsio_span f = csv_of(r)->fields[i];
    column_text(r, i, col, sizeof col);
    tsio_token_text(f.p, f.n, text, sizeof text);
    return ts_fail_at(err, TS_ERR_PARSE, ln->line_no, ln->byte + (uint64_t)(f.p - ln->p), "%s:%llu: %s '%s' in %s%s",
                      r->name, (unsigned long long)ln->line_no, what, text, col, separator_hint(r, f));
}

/* The text of a text field: a quoted field (it follows its opening quote) has each ""
 * read as " (in place: the line is not read again). */
static tsio_span field_text(const tsio_line *ln, tsio_span f) {
    if (f.p == ln->p || f.p[-1] != '"') return f; /* unquoted: a field never starts after a quote */
    char *w = f.p, *end = f.p + f.n;
    for (char *p = f.p; p < end; p++) {
        *w++ = *p;
        if (*p == '"' && p + 1 < end && p[1] == '"') p++;
    }
    f.n = (size_t)(w - f.p);
    return f;
}

/* A text field's value, from opts.text_value; its errors name the file, line and column. */
#if defined(__GNUC__)
__attribute__((noinline))
#endif
static ts_status text_field(tsio_reader *r, const tsio_line *ln, size_t i, double *v, ts_error *err) {
    tsio_span f = field_text(ln, csv_of(r)->fields[i]);
    ts_error e;
    char col[256];
    ts_status st = r->opts.text_value(r->opts.text_ctx, feature_of(csv_of(r), i), f.p, f.n, v, &e);
    if (st == TS_OK) return TS_OK;
    column_text(r, i, col, sizeof col);
    return ts_fail_at(err, st, ln->line_no, ln->byte + (uint64_t)(f.p - ln->p), "%s:%llu: %s: %s", r->name,
                      (unsigned long long)ln->line_no, col, e.message);
}

/* Parse the fields of one line into chunk row `row` (hot: one call per line). Written
 * once, instantiated twice (parse_row): `with_text` is a constant, so the number-only
 * instance has no per-field test of c->text. */
static inline ts_status parse_fields(tsio_reader *r, const tsio_line *ln, size_t row, ts_error *err,
                                     const int with_text) {
    const csv_state *c = csv_of(r);
    float *xr = r->x ? r->x + row * r->n_cols : NULL;
    double *xd = r->xd ? r->xd + row * r->n_cols : NULL;
    double label = NAN;
    size_t i;
    for (i = 0; i < c->n_fields; i++) {
        tsio_span f = c->fields[i];
        int st;
        if (i == c->label_col) {
            st = tsio_parse_f64(f.p, f.n, &label);
            if (st == TSIO_NUM_BAD && is_missing_marker(f.p, f.n)) {
                st = TSIO_NUM_OK;
                label = NAN;
            }
            if (st != TSIO_NUM_OK) return tsio_fail_token(r, ln, f.p, f.n, "bad label", err);
            continue;
        }
        if (with_text && c->text[i]) {
            double v;
            TS_TRY(text_field(r, ln, i, &v, err));
            if (xd) *xd++ = v;
            else *xr++ = (float)v;
            continue;
        }
        if (xd) {
            st = tsio_parse_f64(f.p, f.n, xd);
            if (st == TSIO_NUM_BAD && is_missing_marker(f.p, f.n)) {
                st = TSIO_NUM_OK;
                *xd = NAN;
            }
            xd++;
        } else {
            st = tsio_parse_f32(f.p, f.n, xr);
            if (st == TSIO_NUM_BAD && is_missing_marker(f.p, f.n)) {
                st = TSIO_NUM_OK;
                *xr = NAN;
            }
            xr++;
        }
        if (st == TSIO_NUM_RANGE)
            return fail_field(r, ln, i, xd ? "value out of double range" : "value out of float range", err);
        if (st != TSIO_NUM_OK) return fail_field(r, ln, i, "bad value", err);
    }
    r->labels[row] = label;
    return tsio_row_query(r, ln, &r->qids[row], err);
}

/* The instance with text columns, out of line: the number-only one stays as it was. */
#if defined(__GNUC__)
__attribute__((noinline))
#endif
static ts_status parse_row_text(tsio_reader *r, const tsio_line *ln, size_t row, ts_error *err) {
    return parse_fields(r, ln, row, err, 1);
}

static ts_status parse_row(tsio_reader *r, const tsio_line *ln, size_t row, ts_error *err) {
    if (csv_of(r)->text) return parse_row_text(r, ln, row, err);
    return parse_fields(r, ln, row, err, 0);
}

static ts_status csv_fill(tsio_reader *r, size_t *rows, ts_error *err) {
    csv_state *c = csv_of(r);
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
        if (line_is_blank(&ln, c->sep)) continue;
        TS_TRY(tsio_check_text_line(r, &ln, err));
        TS_TRY(split_fields(r, &ln, c->fields, c->n_fields, &count, err));
        if (count != c->n_fields)
            return ts_fail_at(err, TS_ERR_PARSE, ln.line_no, ln.byte, "%s:%llu: %zu fields, expected %zu", r->name,
                              (unsigned long long)ln.line_no, count, c->n_fields);
        TS_TRY(parse_row(r, &ln, row, err));
        if (row == 0) r->chunk_first_line = ln.line_no;
        row++;
    }
    *rows = row;
    return TS_OK;
}

static void csv_close(tsio_reader *r) {
    csv_state *c = csv_of(r);
    if (!c) return;
    free(c->fields);
    free(c->text);
    free(c);
    r->fmt = NULL;
}

const tsio_format_ops tsio_csv_ops = {csv_init, csv_fill, csv_close};
