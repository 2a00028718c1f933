/* data_svmlight.c: the SVMlight / LETOR line parser (label [qid:Q] id:v ... [# comment]). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/error.h"
#include "data/data_svmlight.h"

/* Largest id value tracked exactly; larger ids saturate (they are past any column). */
#define SVM_ID_SATURATE ((uint64_t)1 << 40)

/* The SVMlight state (r->fmt): seen[col] == stamp marks the columns set on the current row. */
typedef struct svm_state {
    uint32_t *seen;             /* id_cols stamps */
    uint32_t stamp;
    uint32_t id_cols;           /* columns ids may name: opts.n_cols */
    uint32_t *keep;             /* opts.keep copied (n_keep = r->n_cols), or NULL */
} svm_state;

static svm_state *svm_of(const tsio_reader *r) { return r->fmt; }

static int is_sep(char c) { return c == ' ' || c == '\t'; }

static char *skip_sep(char *p, const char *e) {
    while (p < e && is_sep(*p)) p++;
    return p;
}

static char *token_end(char *p, const char *e) {
    while (p < e && !is_sep(*p)) p++;
    return p;
}

static ts_status svm_init(tsio_reader *r, ts_error *err) {
    svm_state *v;
    if (r->opts.n_cols == 0)
        return ts_fail(err, TS_ERR_INVALID_ARGUMENT,
                       "%s: reading SVMlight data needs the number of columns (n_cols > 0, usually the model's features)",
                       r->name);
    r->n_cols = r->opts.keep ? r->opts.n_keep : r->opts.n_cols;
    v = calloc(1, sizeof *v);
    if (v) r->fmt = v;
    if (v) v->id_cols = r->opts.n_cols;
    if (v) v->seen = calloc(v->id_cols, sizeof *v->seen);
    if (v && r->opts.keep && (v->keep = malloc(((size_t)r->n_cols + 1) * sizeof *v->keep)) != NULL)
        memcpy(v->keep, r->opts.keep, (size_t)r->n_cols * sizeof *v->keep);
    if (!v || !v->seen || (r->opts.keep && !v->keep)) return ts_fail(err, TS_ERR_NO_MEMORY, "%s: out of memory", r->name);
    for (uint32_t j = 0; v->keep && j < r->n_cols; j++)
        if (v->keep[j] >= v->id_cols || (j && v->keep[j] <= v->keep[j - 1]))
            return ts_fail(err, TS_ERR_INVALID_ARGUMENT, "%s: the columns to keep must ascend below %u", r->name,
                           v->id_cols);
    r->opts.keep = NULL; /* the caller's array is not kept */
    return TS_OK;
}

/* A fresh stamp for a new row: seen[col] == stamp marks the columns set on it. */
static uint32_t next_stamp(tsio_reader *r) {
    svm_state *v = svm_of(r);
    if (++v->stamp == 0) {
        memset(v->seen, 0, (size_t)v->id_cols * sizeof *v->seen);
        v->stamp = 1;
    }
    return v->stamp;
}

/* "qid:Q" at [p, t): Q a non-negative integer. */
static ts_status parse_qid(tsio_reader *r, const tsio_line *ln, char *p, char *t, int64_t *qid, ts_error *err) {
    const char *q = p + 4;
    uint64_t v = 0;
    if (q == t) return tsio_fail_token(r, ln, p, (size_t)(t - p), "bad qid", err);
    for (; q < t; q++) {
        if (*q < '0' || *q > '9' || v > (uint64_t)(INT64_MAX - 9) / 10)
            return tsio_fail_token(r, ln, p, (size_t)(t - p), "bad qid (expected a non-negative integer)", err);
        v = v * 10 + (uint64_t)(*q - '0');
    }
    *qid = (int64_t)v;
    return TS_OK;
}

static ts_status fail_shape(tsio_reader *r, const tsio_line *ln, const char *tok, const char *colon, ts_error *err) {
    unsigned long long lo = r->opts.one_based ? 1 : 0;
    uint32_t n_cols = svm_of(r)->id_cols;
    int nd = colon - tok > 40 ? 40 : (int)(colon - tok);
    /* One past the end, reading ids from 0: most likely a file counting from 1 for a model
     * counting from 0. */
    int hint = !r->opts.one_based && (uint64_t)(colon - tok) < 12 && strtoull(tok, NULL, 10) == n_cols;
    unsigned long long id = strtoull(tok, NULL, 10); /* saturates past 2^64 */
    if (id >= lo && id - lo >= TSIO_MAX_COLS) /* an id no model has */
        return ts_fail_at(err, TS_ERR_LIMIT, ln->line_no, ln->byte + (uint64_t)(tok - ln->p),
                          "%s:%llu: feature id %.*s%s is above the limit %u (and past the model's %u features)",
                          r->name, (unsigned long long)ln->line_no, nd, tok, colon - tok > 40 ? "..." : "",
                          TSIO_MAX_COLS - 1 + (unsigned)lo, n_cols);
    return ts_fail_at(err, TS_ERR_SHAPE, ln->line_no, ln->byte + (uint64_t)(tok - ln->p),
                      "%s:%llu: feature id %.*s%s is past the model's %u features (%llu..%llu)%s", r->name,
                      (unsigned long long)ln->line_no, nd, tok, colon - tok > 40 ? "..." : "", n_cols, lo,
                      lo + n_cols - 1,
                      hint ? "; if the file's ids start at 1 for the model's column 0, use --one-based" : "");
}

/* The "id:value" token at p, whose id digits end at the ':' at `colon`; *t gets its end.
 * The value goes to row (floats) or, with double_values, to rowd. */
static ts_status set_feature(tsio_reader *r, const tsio_line *ln, float *row, double *rowd, uint32_t stamp, char *p,
                             char *colon, const char *e, char **t, uint64_t id, ts_error *err) {
    float v = 0.0f;
    double vd = 0.0;
    uint64_t col;
    int st = rowd ? tsio_parse_f64_field(colon + 1, e, &vd, t) : tsio_parse_f32_field(colon + 1, e, &v, t);
    if (st == TSIO_NUM_BAD) return tsio_fail_token(r, ln, p, (size_t)(*t - p), "bad feature value in", err);
    if (st == TSIO_NUM_RANGE)
        return tsio_fail_token(r, ln, p, (size_t)(*t - p), rowd ? "value out of double range in" : "value out of float range in",
                               err);
    if (r->opts.one_based) {
        if (id == 0) return tsio_fail_token(r, ln, p, (size_t)(*t - p), "feature id 0 with one-based ids in", err);
        col = id - 1;
    } else {
        col = id;
    }
    svm_state *sv = svm_of(r);
    if (col >= sv->id_cols) {
        if (r->opts.strict_cols) return fail_shape(r, ln, p, colon, err);
        return TS_OK;
    }
    uint32_t *seen = sv->seen;
    if (seen[col] == stamp) {
        char msg[64];
        snprintf(msg, sizeof msg, "duplicate feature id %llu in", (unsigned long long)id);
        return tsio_fail_token(r, ln, p, (size_t)(*t - p), msg, err);
    }
    seen[col] = stamp;
    if (sv->keep) { /* only the kept columns: find col among them */
        uint32_t lo = 0, hi = r->n_cols;
        while (lo < hi) {
            uint32_t mid = lo + (hi - lo) / 2;
            if (sv->keep[mid] < col) lo = mid + 1;
            else hi = mid;
        }
        if (lo == r->n_cols || sv->keep[lo] != col) return TS_OK;
        col = lo;
    }
    if (rowd)
        rowd[col] = vd;
    else
        row[col] = v;
    return TS_OK;
}

/* A token that is not "id:value": "qid:Q" or an error. */
static ts_status other_token(tsio_reader *r, const tsio_line *ln, char *p, char *t, int64_t *qid, int *has_qid,
                             ts_error *err) {
    if (t - p >= 4 && memcmp(p, "qid:", 4) == 0) {
        if (*has_qid) return tsio_fail_token(r, ln, p, (size_t)(t - p), "second qid", err);
        if (r->has_query)
            return tsio_fail_token(r, ln, p, (size_t)(t - p), "qid given in the line and by a query file:", err);
        TS_TRY(parse_qid(r, ln, p, t, qid, err));
        *has_qid = 1;
        return TS_OK;
    }
    return tsio_fail_token(r, ln, p, (size_t)(t - p), "expected ID:VALUE, got", err);
}

/* The tokens after the label, up to `e` (the '#' or the line end). */
static ts_status parse_features(tsio_reader *r, const tsio_line *ln, char *p, const char *e, float *row,
                                double *rowd, int64_t *qid, int *has_qid, ts_error *err) {
    uint32_t stamp = next_stamp(r);
    for (;;) {
        char *q, *t;
        uint64_t id = 0;
        p = skip_sep(p, e);
        if (p >= e) return TS_OK;
        for (q = p; q < e && (unsigned)(*q - '0') < 10u; q++)
            id = id < SVM_ID_SATURATE ? id * 10 + (uint64_t)(*q - '0') : id;
        if (q < e && *q == ':' && q > p) {
            TS_TRY(set_feature(r, ln, row, rowd, stamp, p, q, e, &t, id, err));
        } else {
            t = token_end(q, e);
            TS_TRY(other_token(r, ln, p, t, qid, has_qid, err));
        }
        p = t;
    }
}

static void fill_row(float *row, uint32_t n, float v) {
    uint32_t i;
    for (i = 0; i < n; i++) row[i] = v;
}

/* Parse one line into chunk row `row`; *is_row = 0 for blank and comment lines. */
static ts_status parse_line(tsio_reader *r, const tsio_line *ln, size_t row, int *is_row, ts_error *err) {
    char *p = ln->p, *e = ln->p + ln->len, *hash, *t;
    float *xr;
    double label;
    int64_t qid = -1;
    int has_qid = 0, st;
    *is_row = 0;
    TS_TRY(tsio_check_text_line(r, ln, err));
    hash = memchr(p, '#', ln->len);
    if (hash) e = hash;
    p = skip_sep(p, e);
    if (p == e) return TS_OK;
    t = token_end(p, e);
    st = tsio_parse_f64(p, (size_t)(t - p), &label);
    if (st != TSIO_NUM_OK)
        return tsio_fail_token(r, ln, p, (size_t)(t - p), st == TSIO_NUM_RANGE ? "label out of range" : "bad label", err);
    xr = NULL;
    double *xd = NULL;
    if (r->xd) {
        xd = r->xd + row * r->n_cols;
        for (uint32_t i = 0; i < r->n_cols; i++) xd[i] = (double)r->opts.absent_value;
    } else {
        xr = r->x + row * r->n_cols;
        fill_row(xr, r->n_cols, r->opts.absent_value);
    }
    TS_TRY(parse_features(r, ln, t, e, xr, xd, &qid, &has_qid, err));
    if (!has_qid) TS_TRY(tsio_row_query(r, ln, &qid, err));
    if (hash) {
        char *c = hash + 1, *ce = ln->p + ln->len;
        c = skip_sep(c, ce);
        while (ce > c && is_sep(ce[-1])) ce--;
        TS_TRY(tsio_set_comment(r, row, c, (size_t)(ce - c), err));
    }
    r->labels[row] = label;
    r->qids[row] = qid;
    *is_row = 1;
    return TS_OK;
}

/* A line that SVMlight could not read but that looks like CSV or TSV (commas or tabs, no
 * ID:VALUE pair) in a file read as SVMlight only by default: say why it was read so. */
static ts_status explain_default_format(const tsio_reader *r, const tsio_line *ln, ts_status st, ts_error *err) {
    if (st != TS_ERR_PARSE || !err || r->opts.format != TSIO_DATA_AUTO || memchr(ln->p, ':', ln->len) ||
        !(memchr(ln->p, ',', ln->len) || memchr(ln->p, '\t', ln->len)))
        return st;
    size_t n = strlen(err->message);
    snprintf(err->message + n, sizeof err->message - n,
             " (read as SVMlight, the default for a file not named .csv or .tsv: CSV or TSV data needs --format "
             "csv or --format tsv)");
    return st;
}

static ts_status svm_fill(tsio_reader *r, size_t *rows, ts_error *err) {
    size_t row = *rows;
    while (row < r->chunk_rows) {
        tsio_line ln;
        int got, is_row;
        TS_TRY(tsio_src_next_line(&r->src, &ln, &got, err));
        if (!got) {
            r->at_eof = 1;
            break;
        }
        ts_status st = parse_line(r, &ln, row, &is_row, err);
        if (st != TS_OK) return explain_default_format(r, &ln, st, err);
        if (!is_row) continue;
        if (row == 0) r->chunk_first_line = ln.line_no;
        row++;
    }
    *rows = row;
    return TS_OK;
}

static void svm_close(tsio_reader *r) {
    svm_state *v = svm_of(r);
    if (!v) return;
    free(v->seen);
    free(v->keep);
    free(v);
    r->fmt = NULL;
}

const tsio_format_ops tsio_svmlight_ops = {svm_init, svm_fill, svm_close};
