/* model_lightgbm.c: loader for LightGBM text models (save_model / model.txt, format v2 to v4). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "io/lightgbm_tree.h"
#include "io/limits.h"
#include "io/loaders.h"
#include "io/text.h"
#include "model/forest.h"
#include "platform/notes.h"

/*
 * File layout (what is read; everything else is skipped):
 *   header: "tree", version=v2|v3|v4, num_class, num_tree_per_iteration, max_feature_idx,
 *           objective, average_output, tree_sizes, ... (key=value or bare key lines)
 *   trees:  "Tree=N" then key=value lines up to a blank line, for each tree
 *   end:    "end of trees" (v2 files without a version line end with "feature importances:")
 * One pass over the input, line by line; per-tree scratch arrays are reused, so the
 * cost is linear in the file size.
 *
 * This file reads the text into LightGBM's arrays; what they mean (split semantics,
 * categorical sets: num_cat + 1 cat_boundaries offsets into the cat_threshold bitset
 * words, multiclass) is io/lightgbm_tree.h's, shared with the dump_model() JSON.
 */

/* A value in the input with its location (p == NULL: absent). */
typedef struct lgb_span {
    const char *p;
    size_t n;
    size_t byte;
    unsigned long long line;
} lgb_span;

typedef struct lgb_reader {
    const char *data;
    size_t size;
    const char *name;
    ts_error *err;
    size_t pos;                    /* start of the next unread line */
    unsigned long long next_line;  /* its 1-based number */
    int have;                      /* a current line is loaded */
    const char *line;              /* current line without its CR/LF */
    size_t len;
    size_t line_byte;
    unsigned long long line_no;
} lgb_reader;

enum {
    F_NUM_LEAVES,
    F_NUM_CAT,
    F_SPLIT_FEATURE,
    F_THRESHOLD,
    F_DECISION_TYPE,
    F_LEFT_CHILD,
    F_RIGHT_CHILD,
    F_LEAF_VALUE,
    F_IS_LINEAR,
    F_HAS_CATEGORICAL,
    F_CAT_BOUNDARIES,
    F_CAT_THRESHOLD,
    F_COUNT
};
static const char *const field_names[F_COUNT] = {
    "num_leaves", "num_cat",     "split_feature", "threshold",       "decision_type",  "left_child",
    "right_child", "leaf_value", "is_linear",     "has_categorical", "cat_boundaries", "cat_threshold"};

typedef struct lgb_header {
    lgb_span version, num_class, num_tree_per_iteration, max_feature_idx, objective, tree_sizes, feature_names;
    int average_output;
    long long max_feature;         /* max_feature_idx */
} lgb_header;

/* Reusable per-tree arrays. */
typedef struct lgb_scratch {
    uint32_t cap;                  /* leaves they can hold */
    long long *ints;               /* parse target for integer fields, cap */
    int32_t *feature, *left, *right, *dtype;
    double *threshold, *leaf;
    tsm_node *nodes;
} lgb_scratch;

typedef struct lgb_tree_loc {
    unsigned long long line;
    size_t byte;
} lgb_tree_loc;

typedef struct lgb_ctx {
    lgb_reader r;
    lgb_header h;
    lgb_scratch s;
    ts_model *m;
    lgb_tree_loc *locs;            /* where each tree starts (for error messages) */
    uint32_t locs_cap;
} lgb_ctx;

/* ---- lines ------------------------------------------------------------------------ */

/* Load the next line as the current one, without its line end and trailing blanks; 0 at end of input. */
static int next_line(lgb_reader *r) {
    r->have = 0;
    if (r->pos >= r->size) return 0;
    const char *start = r->data + r->pos;
    size_t rest = r->size - r->pos;
    const char *nl = memchr(start, '\n', rest);
    size_t len = nl ? (size_t)(nl - start) : rest;
    r->line = start;
    r->line_byte = r->pos;
    r->line_no = r->next_line++;
    r->pos += len + (nl ? 1 : 0);
    /* CR, and blanks an editor left at the end of a line: "end of trees  " is the end
     * marker, "objective=regression " the objective "regression" */
    while (len > 0 && (start[len - 1] == '\r' || start[len - 1] == ' ' || start[len - 1] == '\t')) len--;
    r->len = len;
    r->have = 1;
    return 1;
}

static int line_blank(const lgb_reader *r) {
    for (size_t i = 0; i < r->len; i++)
        if (r->line[i] != ' ' && r->line[i] != '\t') return 0;
    return 1;
}

static int line_starts(const lgb_reader *r, const char *prefix) {
    size_t n = strlen(prefix);
    return r->len >= n && memcmp(r->line, prefix, n) == 0;
}

static int line_is(const lgb_reader *r, const char *s) {
    return r->len == strlen(s) && memcmp(r->line, s, r->len) == 0;
}

/* A line that ends the tree section. */
static int line_ends_trees(const lgb_reader *r) {
    return line_is(r, "end of trees") || line_is(r, "feature importances:") || line_is(r, "feature_importances:") ||
           line_is(r, "parameters:") || line_starts(r, "pandas_categorical:");
}

/* Skip blank lines; 0 at end of input. */
static int next_nonblank(lgb_reader *r) {
    while (next_line(r))
        if (!line_blank(r)) return 1;
    return 0;
}

/* Split the current line at its first '=' into key and value spans. 0 when there is no '='. */
static int split_kv(const lgb_reader *r, const char **key, size_t *key_n, lgb_span *val) {
    const char *eq = memchr(r->line, '=', r->len);
    if (!eq) return 0;
    *key = r->line;
    *key_n = (size_t)(eq - r->line);
    val->p = eq + 1;
    val->n = r->len - *key_n - 1;
    val->byte = r->line_byte + *key_n + 1;
    val->line = r->line_no;
    return 1;
}

static int key_is(const char *key, size_t n, const char *want) {
    return n == strlen(want) && memcmp(key, want, n) == 0;
}

/* ---- errors ----------------------------------------------------------------------- */

static ts_status fail_span(lgb_ctx *c, ts_status st, const lgb_span *v, const char *what) {
    return tsio_fail(c->r.err, st, c->r.name, v->line, v->byte, "%s", what);
}

static ts_status fail_line(lgb_ctx *c, ts_status st, const char *what) {
    return tsio_fail(c->r.err, st, c->r.name, c->r.line_no, c->r.line_byte, "%s", what);
}

/* Locate an error of the shared LightGBM semantics (io/lightgbm_tree.h) at the field it
 * names: a header line, or a line of the current tree (f, its fields). */
static ts_status locate(lgb_ctx *c, ts_status st, tslg_at at, const lgb_span *f);

/* ---- tokens ----------------------------------------------------------------------- */

static int is_sep(char ch) { return ch == ' ' || ch == '\t'; }

static size_t count_tokens(const lgb_span *v) {
    size_t count = 0;
    for (size_t i = 0; i < v->n; i++)
        if (!is_sep(v->p[i]) && (i == 0 || is_sep(v->p[i - 1]))) count++;
    return count;
}

/* Next whitespace-separated token at or after *i; 0 when none is left. */
static int next_token(const lgb_span *v, size_t *i, const char **tok, size_t *n) {
    while (*i < v->n && is_sep(v->p[*i])) (*i)++;
    if (*i >= v->n) return 0;
    size_t start = *i;
    while (*i < v->n && !is_sep(v->p[*i])) (*i)++;
    *tok = v->p + start;
    *n = *i - start;
    return 1;
}

static ts_status bad_token(lgb_ctx *c, uint32_t tree, const lgb_span *v, const char *field, const char *tok,
                           size_t n, const char *why) {
    char ex[64];
    tsio_excerpt(ex, sizeof ex, tok, n);
    return tsio_fail(c->r.err, TS_ERR_PARSE, c->r.name, v->line, v->byte + (size_t)(tok - v->p),
                     "tree %u: bad %s '%s'%s", tree, field, ex, why);
}

static ts_status check_count(lgb_ctx *c, uint32_t tree, const lgb_span *v, const char *field, size_t want,
                             const char *what) {
    size_t have = count_tokens(v);
    if (have == want) return TS_OK;
    return tsio_fail(c->r.err, TS_ERR_PARSE, c->r.name, v->line, v->byte,
                     "tree %u: %s has %zu values, expected %zu (%s)", tree, field, have, want, what);
}

/* An integer token outside [lo, hi]: TS_ERR_LIMIT naming the limit when it is a whole
 * number above hi (a claimed size), else TS_ERR_PARSE. */
static ts_status bad_int(lgb_ctx *c, uint32_t tree, const lgb_span *v, const char *field, const char *tok, size_t n,
                         long long lo, long long hi) {
    char ex[64], why[96];
    if (tsio_int_above(tok, n, hi)) {
        tsio_excerpt(ex, sizeof ex, tok, n);
        return tsio_fail(c->r.err, TS_ERR_LIMIT, c->r.name, v->line, v->byte + (size_t)(tok - v->p),
                         "tree %u: %s %s is above the limit %lld", tree, field, ex, hi);
    }
    snprintf(why, sizeof why, " (expected an integer from %lld to %lld)", lo, hi);
    return bad_token(c, tree, v, field, tok, n, why);
}

static ts_status parse_ints(lgb_ctx *c, uint32_t tree, const lgb_span *v, const char *field, size_t want,
                            const char *what, long long lo, long long hi, long long *out) {
    const char *tok;
    size_t n, i = 0, k = 0;
    TS_TRY(check_count(c, tree, v, field, want, what));
    while (next_token(v, &i, &tok, &n)) {
        if (tsio_parse_int(tok, n, lo, hi, &out[k]) != 0) return bad_int(c, tree, v, field, tok, n, lo, hi);
        k++;
    }
    return TS_OK;
}

static ts_status parse_doubles(lgb_ctx *c, uint32_t tree, const lgb_span *v, const char *field, size_t want,
                               const char *what, double *out) {
    const char *tok;
    size_t n, i = 0, k = 0;
    TS_TRY(check_count(c, tree, v, field, want, what));
    while (next_token(v, &i, &tok, &n)) {
        if (tsio_parse_double(tok, n, &out[k]) != 0) return bad_token(c, tree, v, field, tok, n, "");
        if (isnan(out[k])) return bad_token(c, tree, v, field, tok, n, " (NaN)");
        k++;
    }
    return TS_OK;
}

/* A single integer field value. */
static ts_status parse_one(lgb_ctx *c, uint32_t tree, const lgb_span *v, const char *field, long long lo,
                           long long hi, long long *out) {
    const char *p = v->p;
    size_t n = v->n;
    tsio_trim(&p, &n);
    if (tsio_parse_int(p, n, lo, hi, out) == 0) return TS_OK;
    return bad_int(c, tree, v, field, p, n, lo, hi);
}

/* ---- header ----------------------------------------------------------------------- */

static ts_status header_key(lgb_ctx *c, const char *key, size_t key_n, const lgb_span *val) {
    static const char *const keys[] = {"version", "num_class", "num_tree_per_iteration", "max_feature_idx",
                                       "objective", "tree_sizes", "feature_names"};
    lgb_span *slots[] = {&c->h.version,   &c->h.num_class,  &c->h.num_tree_per_iteration, &c->h.max_feature_idx,
                         &c->h.objective, &c->h.tree_sizes, &c->h.feature_names};
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) {
        if (!key_is(key, key_n, keys[i])) continue;
        if (slots[i]->p)
            return tsio_fail(c->r.err, TS_ERR_PARSE, c->r.name, c->r.line_no, c->r.line_byte,
                             "'%s' appears twice in the header", keys[i]);
        *slots[i] = *val;
    }
    return TS_OK;
}

/* Read header lines up to the first "Tree=" line or the end of the tree section. */
static ts_status read_header(lgb_ctx *c) {
    while (next_nonblank(&c->r)) {
        if (line_starts(&c->r, "Tree=") || line_ends_trees(&c->r)) return TS_OK;
        const char *key;
        size_t key_n;
        lgb_span val;
        if (!split_kv(&c->r, &key, &key_n, &val)) {
            if (line_is(&c->r, "average_output")) c->h.average_output = 1;
            continue;
        }
        if (key_is(key, key_n, "average_output")) c->h.average_output = 1;
        TS_TRY(header_key(c, key, key_n, &val));
    }
    if (!c->h.version.p && !c->h.num_class.p && !c->h.max_feature_idx.p) /* another format (--model-format lightgbm) */
        return tsio_fail(c->r.err, TS_ERR_PARSE, c->r.name, c->r.next_line > 1 ? c->r.next_line - 1 : 0, c->r.size,
                         "not a LightGBM text model (no version=, num_class= or max_feature_idx= line, no 'Tree=' "
                         "line)");
    return tsio_fail(c->r.err, TS_ERR_PARSE, c->r.name, c->r.next_line > 1 ? c->r.next_line - 1 : 0, c->r.size,
                     "unexpected end of file in the header (no 'Tree=' or 'end of trees' line): truncated?");
}

static ts_status header_int(lgb_ctx *c, const lgb_span *v, const char *key, long long lo, long long hi,
                            long long *out) {
    const char *p = v->p;
    size_t n = v->n;
    tsio_trim(&p, &n);
    if (tsio_parse_int(p, n, lo, hi, out) == 0) return TS_OK;
    char ex[64];
    tsio_excerpt(ex, sizeof ex, p, n);
    if (tsio_int_above(p, n, hi)) /* a claimed size past the limit: nothing of it is allocated */
        return tsio_fail(c->r.err, TS_ERR_LIMIT, c->r.name, v->line, v->byte, "%s %s is above the limit %lld", key,
                         ex, hi);
    return tsio_fail(c->r.err, TS_ERR_PARSE, c->r.name, v->line, v->byte,
                     "bad %s '%s' (expected an integer from %lld to %lld)", key, ex, lo, hi);
}

static ts_status check_version(lgb_ctx *c) {
    const lgb_span *v = &c->h.version;
    if (!v->p) return TS_OK;
    const char *p = v->p;
    size_t n = v->n;
    if (tslg_version_supported(p, n)) return TS_OK;
    tsio_trim(&p, &n);
    char ex[64];
    tsio_excerpt(ex, sizeof ex, p, n);
    return tsio_fail(c->r.err, TS_ERR_UNSUPPORTED, c->r.name, v->line, v->byte,
                     "LightGBM model version '%s' is not supported (v2, v3 and v4 are)", ex);
}

/* feature_names=a b c: kept when there is one per feature (else ignored, with a warning:
 * names are information, not needed to score, but without them no CSV header is checked;
 * LightGBM refuses such a file, "Wrong size of feature_names"). */
static ts_status read_feature_names(lgb_ctx *c) {
    const lgb_span *v = &c->h.feature_names;
    if (!v->p) return TS_OK;
    size_t count = count_tokens(v);
    if (count != (size_t)c->m->n_features_declared) {
        tsr_note(TSR_NOTE_WARN,
                 "treescore: warning: %s:%llu: feature_names lists %zu names but max_feature_idx=%u declares %u "
                 "features: the names are ignored (no header check); LightGBM refuses this file",
                 c->r.name, v->line, count, c->m->n_features_declared - 1, c->m->n_features_declared);
        return TS_OK;
    }
    for (size_t i = 0; i < v->n;) {
        while (i < v->n && is_sep(v->p[i])) i++;
        size_t start = i;
        while (i < v->n && !is_sep(v->p[i])) i++;
        if (i > start) TS_TRY(tsm_model_add_feature_name(c->m, v->p + start, i - start, c->r.err));
    }
    return TS_OK;
}

static ts_status check_header(lgb_ctx *c) {
    long long num_class, per_iter, max_feature;
    TS_TRY(check_version(c));
    if (!c->h.num_class.p)
        return tsio_fail(c->r.err, TS_ERR_PARSE, c->r.name, 0, 0, "the header has no num_class line");
    TS_TRY(header_int(c, &c->h.num_class, "num_class", 1, 1 << 30, &num_class));
    per_iter = num_class;
    if (c->h.num_tree_per_iteration.p)
        TS_TRY(header_int(c, &c->h.num_tree_per_iteration, "num_tree_per_iteration", 1, 1 << 30, &per_iter));
    tslg_at at;
    ts_status st = tslg_set_outputs(c->m, num_class, per_iter, &at, c->r.err);
    if (st != TS_OK) return locate(c, st, at, NULL);
    if (!c->h.max_feature_idx.p)
        return tsio_fail(c->r.err, TS_ERR_PARSE, c->r.name, 0, 0, "the header has no max_feature_idx line");
    TS_TRY(header_int(c, &c->h.max_feature_idx, "max_feature_idx", 0, (long long)TSM_MAX_FEATURES - 1,
                      &max_feature));
    c->h.max_feature = max_feature;
    c->m->n_features_declared = (uint32_t)max_feature + 1;
    if (c->h.objective.p) tslg_set_objective(c->m, c->h.objective.p, c->h.objective.n);
    return read_feature_names(c);
}

/* ---- trees ------------------------------------------------------------------------ */

static ts_status grow_scratch(lgb_ctx *c, uint32_t leaves) {
    lgb_scratch *s = &c->s;
    if (leaves <= s->cap) return TS_OK;
    uint32_t cap = s->cap ? s->cap : 64;
    while (cap < leaves) cap *= 2;
    void *p[8];
    p[0] = realloc(s->ints, (size_t)cap * sizeof *s->ints);
    if (p[0]) s->ints = p[0];
    p[1] = realloc(s->feature, (size_t)cap * sizeof *s->feature);
    if (p[1]) s->feature = p[1];
    p[2] = realloc(s->left, (size_t)cap * sizeof *s->left);
    if (p[2]) s->left = p[2];
    p[3] = realloc(s->right, (size_t)cap * sizeof *s->right);
    if (p[3]) s->right = p[3];
    p[4] = realloc(s->dtype, (size_t)cap * sizeof *s->dtype);
    if (p[4]) s->dtype = p[4];
    p[5] = realloc(s->threshold, (size_t)cap * sizeof *s->threshold);
    if (p[5]) s->threshold = p[5];
    p[6] = realloc(s->leaf, (size_t)cap * sizeof *s->leaf);
    if (p[6]) s->leaf = p[6];
    p[7] = realloc(s->nodes, (size_t)cap * sizeof *s->nodes);
    if (p[7]) s->nodes = p[7];
    for (int i = 0; i < 8; i++)
        if (!p[i]) return ts_fail(c->r.err, TS_ERR_NO_MEMORY, "%s: out of memory for a tree of %u leaves",
                                  c->r.name, leaves);
    s->cap = cap;
    return TS_OK;
}

static void free_scratch(lgb_scratch *s) {
    free(s->ints);
    free(s->feature);
    free(s->left);
    free(s->right);
    free(s->dtype);
    free(s->threshold);
    free(s->leaf);
    free(s->nodes);
}

/* Read the key=value lines of one tree (after its "Tree=" line) up to a blank line, the
 * next "Tree=" line, the end of the tree section or the end of input. */
static ts_status read_tree_fields(lgb_ctx *c, uint32_t tree, lgb_span f[F_COUNT]) {
    memset(f, 0, F_COUNT * sizeof *f);
    while (next_line(&c->r)) {
        if (line_blank(&c->r)) return TS_OK;
        if (line_starts(&c->r, "Tree=") || line_ends_trees(&c->r)) return TS_OK;
        const char *key;
        size_t key_n;
        lgb_span val;
        if (!split_kv(&c->r, &key, &key_n, &val)) {
            char ex[64], what[160];
            tsio_excerpt(ex, sizeof ex, c->r.line, c->r.len);
            snprintf(what, sizeof what, "tree %u: expected key=value, found '%s'", tree, ex);
            return fail_line(c, TS_ERR_PARSE, what);
        }
        for (int i = 0; i < F_COUNT; i++) {
            if (!key_is(key, key_n, field_names[i])) continue;
            if (f[i].p)
                return tsio_fail(c->r.err, TS_ERR_PARSE, c->r.name, c->r.line_no, c->r.line_byte,
                                 "tree %u: '%s' appears twice", tree, field_names[i]);
            f[i] = val;
        }
    }
    return TS_OK;
}

static ts_status missing_field(lgb_ctx *c, uint32_t tree, const char *field) {
    const lgb_tree_loc *loc = &c->locs[tree];
    return tsio_fail(c->r.err, TS_ERR_PARSE, c->r.name, loc->line, loc->byte, "tree %u: no %s line%s", tree, field,
                     c->r.have ? "" : " (the file ends here: truncated?)");
}

/* Reject trees using features treescore cannot evaluate yet. */
static ts_status check_tree_kind(lgb_ctx *c, uint32_t tree, const lgb_span f[F_COUNT]) {
    static const struct { int field; long long hi; const char *what; } kinds[] = {
        {F_IS_LINEAR, 1,
         "linear trees (is_linear=1: each leaf is a linear model of the features, from linear_tree=true) are not "
         "supported; retrain without linear_tree"},
    };
    for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++) {
        const lgb_span *v = &f[kinds[i].field];
        long long x;
        if (!v->p) continue;
        TS_TRY(parse_one(c, tree, v, field_names[kinds[i].field], 0, kinds[i].hi, &x));
        if (x) {
            char msg[256];
            snprintf(msg, sizeof msg, "tree %u: %s", tree, kinds[i].what);
            return fail_span(c, TS_ERR_UNSUPPORTED, v, msg);
        }
    }
    return TS_OK;
}

/* Parse the split arrays of a tree with n internal nodes into the scratch arrays. */
static ts_status parse_splits(lgb_ctx *c, uint32_t tree, const lgb_span f[F_COUNT], uint32_t n) {
    static const int required[] = {F_SPLIT_FEATURE, F_THRESHOLD, F_LEFT_CHILD, F_RIGHT_CHILD};
    lgb_scratch *s = &c->s;
    const char *what = "num_leaves - 1";
    for (size_t i = 0; i < sizeof required / sizeof required[0]; i++)
        if (!f[required[i]].p) return missing_field(c, tree, field_names[required[i]]);
    TS_TRY(parse_ints(c, tree, &f[F_SPLIT_FEATURE], "split_feature", n, what, 0, (long long)TSM_MAX_FEATURES - 1,
                      s->ints));
    for (uint32_t i = 0; i < n; i++) {
        ts_status st = tslg_check_feature(tree, s->ints[i], c->h.max_feature, c->r.err);
        if (st != TS_OK) return tsio_locate(c->r.err, st, c->r.name, f[F_SPLIT_FEATURE].line, f[F_SPLIT_FEATURE].byte);
        s->feature[i] = (int32_t)s->ints[i];
    }
    TS_TRY(parse_doubles(c, tree, &f[F_THRESHOLD], "threshold", n, what, s->threshold));
    TS_TRY(parse_ints(c, tree, &f[F_LEFT_CHILD], "left_child", n, what, INT32_MIN, INT32_MAX, s->ints));
    for (uint32_t i = 0; i < n; i++) s->left[i] = (int32_t)s->ints[i];
    TS_TRY(parse_ints(c, tree, &f[F_RIGHT_CHILD], "right_child", n, what, INT32_MIN, INT32_MAX, s->ints));
    for (uint32_t i = 0; i < n; i++) s->right[i] = (int32_t)s->ints[i];
    if (f[F_DECISION_TYPE].p) {
        TS_TRY(parse_ints(c, tree, &f[F_DECISION_TYPE], "decision_type", n, what, -128, 255, s->ints));
        for (uint32_t i = 0; i < n; i++) s->dtype[i] = (int32_t)(s->ints[i] & 0xff);
    } else {
        for (uint32_t i = 0; i < n; i++) s->dtype[i] = 0; /* LightGBM's default */
    }
    return TS_OK;
}

/* The category sets of one tree: num_cat, cat_boundaries and cat_threshold, checked. */
typedef struct lgb_cats {
    long long n;                   /* num_cat */
    long long *bounds;             /* n + 1 offsets into words, from 0, non-decreasing */
    uint32_t *words;
    size_t n_words;
} lgb_cats;

static ts_status read_cats(lgb_ctx *c, uint32_t tree, const lgb_span f[F_COUNT], lgb_cats *k) {
    memset(k, 0, sizeof *k);
    if (f[F_NUM_CAT].p) TS_TRY(parse_one(c, tree, &f[F_NUM_CAT], "num_cat", 0, TSM_MAX_LEAVES, &k->n));
    if (k->n == 0) return TS_OK;
    if (!f[F_CAT_BOUNDARIES].p) return missing_field(c, tree, "cat_boundaries");
    if (!f[F_CAT_THRESHOLD].p) return missing_field(c, tree, "cat_threshold");
    TS_TRY(check_count(c, tree, &f[F_CAT_BOUNDARIES], "cat_boundaries", (size_t)k->n + 1, "num_cat + 1"));
    k->n_words = count_tokens(&f[F_CAT_THRESHOLD]);
    k->bounds = malloc(((size_t)k->n + 1) * sizeof *k->bounds);
    long long *w = malloc((k->n_words + 1) * sizeof *w);
    k->words = malloc((k->n_words + 1) * sizeof *k->words);
    ts_status st = TS_OK;
    if (!k->bounds || !w || !k->words) st = ts_fail(c->r.err, TS_ERR_NO_MEMORY, "%s: out of memory", c->r.name);
    if (st == TS_OK)
        st = parse_ints(c, tree, &f[F_CAT_BOUNDARIES], "cat_boundaries", (size_t)k->n + 1, "num_cat + 1", 0,
                        (long long)k->n_words, k->bounds);
    if (st == TS_OK)
        st = parse_ints(c, tree, &f[F_CAT_THRESHOLD], "cat_threshold", k->n_words, "its own count", 0, UINT32_MAX, w);
    for (size_t i = 0; st == TS_OK && i < k->n_words; i++) k->words[i] = (uint32_t)w[i];
    free(w);
    if (st != TS_OK) return st;
    for (long long i = 0; i < k->n; i++)
        if (k->bounds[i] > k->bounds[i + 1])
            return fail_span(c, TS_ERR_INVALID_MODEL, &f[F_CAT_BOUNDARIES],
                             "cat_boundaries must not decrease");
    if (k->bounds[0] != 0 || k->bounds[k->n] != (long long)k->n_words) {
        char msg[200];
        snprintf(msg, sizeof msg, "tree %u: cat_boundaries must run from 0 to the %zu values of cat_threshold", tree,
                 k->n_words);
        return fail_span(c, TS_ERR_INVALID_MODEL, &f[F_CAT_BOUNDARIES], msg);
    }
    return TS_OK;
}

static void free_cats(lgb_cats *k) {
    free(k->bounds);
    free(k->words);
}

static ts_status add_loc(lgb_ctx *c, unsigned long long line, size_t byte) {
    uint32_t idx = c->m->n_trees;
    if (idx >= c->locs_cap) {
        if (idx >= TSM_MAX_TREES)
            return tsio_fail(c->r.err, TS_ERR_LIMIT, c->r.name, line, byte, "more than %u trees", TSM_MAX_TREES);
        uint32_t cap = c->locs_cap ? c->locs_cap * 2 : 64;
        lgb_tree_loc *p = realloc(c->locs, (size_t)cap * sizeof *p);
        if (!p) return ts_fail(c->r.err, TS_ERR_NO_MEMORY, "%s: out of memory", c->r.name);
        c->locs = p;
        c->locs_cap = cap;
    }
    c->locs[idx].line = line;
    c->locs[idx].byte = byte;
    return TS_OK;
}

static ts_status locate(lgb_ctx *c, ts_status st, tslg_at at, const lgb_span *f) {
    const lgb_span *v = NULL;
    uint32_t tree = c->m->n_trees;
    switch (at) {
    case TSLG_AT_NONE: return st; /* the model layer's message, as it is */
    case TSLG_AT_NUM_CLASS: v = &c->h.num_class; break;
    case TSLG_AT_PER_ITERATION: v = &c->h.num_tree_per_iteration; break;
    case TSLG_AT_THRESHOLD: v = &f[F_THRESHOLD]; break;
    case TSLG_AT_DECISION_TYPE: v = &f[F_DECISION_TYPE]; break;
    case TSLG_AT_TREE: return tsio_locate(c->r.err, st, c->r.name, c->locs[tree].line, c->locs[tree].byte);
    }
    return tsio_locate(c->r.err, st, c->r.name, v->line, v->byte);
}

/* The current line is "Tree=N": read and add that tree. */
static ts_status read_tree(lgb_ctx *c) {
    uint32_t tree = c->m->n_trees;
    lgb_span f[F_COUNT];
    long long v;
    {
        const char *p = c->r.line + 5;
        size_t n = c->r.len - 5;
        tsio_trim(&p, &n);
        if (tsio_parse_int(p, n, 0, INT32_MAX, &v) != 0) return fail_line(c, TS_ERR_PARSE, "bad 'Tree=' line");
    }
    TS_TRY(add_loc(c, c->r.line_no, c->r.line_byte));
    TS_TRY(read_tree_fields(c, tree, f));
    if (!f[F_NUM_LEAVES].p) return missing_field(c, tree, "num_leaves");
    TS_TRY(parse_one(c, tree, &f[F_NUM_LEAVES], "num_leaves", 1, (long long)TSM_MAX_LEAVES, &v));
    uint32_t leaves = (uint32_t)v, nodes = leaves - 1;
    TS_TRY(check_tree_kind(c, tree, f));
    if (!f[F_LEAF_VALUE].p) return missing_field(c, tree, "leaf_value");
    /* Check the count before sizing anything from num_leaves (a 90-byte file must not
     * allocate for 2^24 leaves). */
    TS_TRY(check_count(c, tree, &f[F_LEAF_VALUE], "leaf_value", leaves, "num_leaves"));
    TS_TRY(grow_scratch(c, leaves));
    TS_TRY(parse_doubles(c, tree, &f[F_LEAF_VALUE], "leaf_value", leaves, "num_leaves", c->s.leaf));
    if (nodes > 0) TS_TRY(parse_splits(c, tree, f, nodes));
    lgb_cats k;
    ts_status st = read_cats(c, tree, f, &k);
    if (st == TS_OK) {
        tslg_tree t = {leaves, c->s.feature, c->s.left, c->s.right, c->s.dtype, c->s.threshold, c->s.leaf,
                       k.n, k.bounds, k.words};
        tslg_at at;
        st = tslg_add_tree(c->m, tree, &t, c->s.nodes, &at, c->r.err);
        if (st != TS_OK) st = locate(c, st, at, f);
    }
    free_cats(&k);
    return st;
}

static ts_status read_trees(lgb_ctx *c) {
    /* read_header left the first "Tree=" line (or the end marker) as the current line. */
    while (c->r.have && line_starts(&c->r, "Tree=")) {
        TS_TRY(read_tree(c));
        if (!c->r.have || line_blank(&c->r)) next_nonblank(&c->r);
    }
    if (!c->r.have)
        return tsio_fail(c->r.err, TS_ERR_PARSE, c->r.name, c->r.next_line > 1 ? c->r.next_line - 1 : 0, c->r.size,
                         "unexpected end of file after tree %u (no 'end of trees' line): truncated?",
                         c->m->n_trees ? c->m->n_trees - 1 : 0);
    if (!line_ends_trees(&c->r)) {
        char ex[64], what[160];
        tsio_excerpt(ex, sizeof ex, c->r.line, c->r.len);
        snprintf(what, sizeof what, "expected 'Tree=' or 'end of trees', found '%s'", ex);
        return fail_line(c, TS_ERR_PARSE, what);
    }
    return TS_OK;
}

static ts_status check_tree_sizes(lgb_ctx *c) {
    if (!c->h.tree_sizes.p) return TS_OK;
    size_t listed = count_tokens(&c->h.tree_sizes);
    if (listed == c->m->n_trees) return TS_OK;
    return tsio_fail(c->r.err, TS_ERR_PARSE, c->r.name, c->h.tree_sizes.line, c->h.tree_sizes.byte,
                     "tree_sizes lists %zu trees but the file has %u: truncated or edited?", listed, c->m->n_trees);
}

/* tsm_model_finish names the tree in its message ("tree 3 node 2: ..."): add its location. */
static ts_status finish(lgb_ctx *c) {
    ts_status st = tsm_model_finish(c->m, c->r.err);
    if (st == TS_OK) return TS_OK;
    unsigned tree;
    if (c->r.err && sscanf(c->r.err->message, "tree %u", &tree) == 1 && tree < c->m->n_trees)
        return tsio_locate(c->r.err, st, c->r.name, c->locs[tree].line, c->locs[tree].byte);
    return tsio_locate(c->r.err, st, c->r.name, 0, 0);
}

static ts_status load(lgb_ctx *c) {
    TS_TRY(read_header(c));
    TS_TRY(check_header(c));
    TS_TRY(read_trees(c));
    TS_TRY(check_tree_sizes(c));
    tslg_at at;
    ts_status st = tslg_check_iterations(c->m, &at, c->r.err);
    if (st != TS_OK) return locate(c, st, at, NULL);
    /* LightGBM's raw_score of a random forest is the plain sum; only predict() divides
     * by the number of iterations. treescore returns the raw score, and says so in info. */
    c->m->average_output = c->h.average_output;
    return finish(c);
}

ts_status tsio_load_lightgbm(const char *data, size_t size, const char *name, ts_model **out, ts_error *err) {
    lgb_ctx c;
    memset(&c, 0, sizeof c);
    *out = NULL;
    if (!name) name = "<buffer>";
    c.r.data = data;
    c.r.size = size;
    c.r.name = name;
    c.r.err = err;
    c.r.pos = tsio_skip_bom(data, size);
    c.r.next_line = 1;
    c.m = tsm_model_new(TS_FORMAT_LIGHTGBM);
    if (!c.m) return ts_fail(err, TS_ERR_NO_MEMORY, "%s: out of memory", name);
    ts_status st = load(&c);
    free_scratch(&c.s);
    free(c.locs);
    if (st != TS_OK) {
        ts_model_free(c.m);
        return st;
    }
    *out = c.m;
    return TS_OK;
}
