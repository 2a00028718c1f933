/* model_lightgbm_json.c: loader for LightGBM dump_model() JSON, translated to LightGBM model text and read by the text loader. */
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "io/json.h"
#include "io/limits.h"
#include "io/loaders.h"
#include "io/text.h"
#include "model/forest.h"

/*
 * Input (LightGBM Booster.dump_model(), the JSON Vespa imports):
 *   {"name": "tree", "version": "v4", "num_class": 1, "num_tree_per_iteration": 1,
 *    "max_feature_idx": 39, "objective": "lambdarank", "average_output": false,
 *    "feature_names": [...], "tree_info": [{"tree_index": 0, "num_leaves": 31,
 *    "tree_structure": NODE}, ...], ...}
 *   NODE = {"split_index": i, "split_feature": f, "threshold": t, "decision_type": "<=",
 *           "default_left": b, "missing_type": "None"|"Zero"|"NaN",
 *           "left_child": NODE, "right_child": NODE, ...}
 *        | {"leaf_index": j, "leaf_value": v, ...}      (a one-leaf tree: no leaf_index)
 *   A categorical node has "decision_type": "==" and "threshold": "1||3||5", the
 *   categories that go left.
 *
 * Semantics: those of the text model (model_lightgbm.c), exactly: split_index and
 * leaf_index are the indices of LightGBM's own arrays, so each tree is written back as
 * the "Tree=" block LightGBM's save_model would write (split_feature, threshold,
 * decision_type, left_child, right_child, leaf_value, and cat_boundaries/cat_threshold
 * bitsets for categorical nodes), with every number copied as the JSON token text, and
 * the text loader reads that. LightGBM prints the JSON numbers with 17 significant
 * digits and Python's json module with the shortest round-trip repr, so the thresholds
 * and leaf values are the very doubles of the text model, except the infinite
 * thresholds that LightGBM prints as +-1e300 (see read_threshold).
 *
 * Errors are reported at the JSON's lines: structure errors by this file, and the text
 * loader's ("tree 3: ...") relocated to the line of tree 3 in the JSON.
 * Recursion over NODEs is bounded by the JSON parser's nesting limit (TSJ_MAX_DEPTH).
 */

/* Largest category value in a categorical split: its bitset (one bit per category up to
 * the largest) must stay small; LightGBM's own category values are small integers. */
#define LJ_MAX_CATEGORY ((1u << 24) - 1)

/* A growing text buffer; `oom` is sticky. */
typedef struct sbuf {
    char *p;
    size_t n, cap;
    int oom;
} sbuf;

/* An internal node, stored at its split_index. */
typedef struct lj_node {
    int present;
    long long feature;
    const char *thr;       /* numerical: the threshold's token text */
    size_t thr_n;
    int categorical;
    size_t cat_first, cat_n; /* categorical: its categories in lj_ctx.cats */
    int default_left, missing_type;
    long long left, right; /* LightGBM encoding: >= 0 split index, < 0 leaf ~c */
} lj_node;

typedef struct lj_leaf {
    int present;
    const char *v;         /* the leaf value's token text */
    size_t n;
} lj_leaf;

typedef struct lj_ctx {
    tsj_parser p;
    const char *data;
    size_t size;
    const char *name;
    ts_error *err;
    sbuf head, trees;
    /* the tree being read: nodes[0 .. nodes_cap) and leaves[0 .. leaves_cap), `present`
     * marks the indices seen; n_nodes/n_leaves count them */
    lj_node *nodes;
    size_t nodes_cap, n_nodes;
    lj_leaf *leaves;
    size_t leaves_cap, n_leaves;
    uint32_t *cats;        /* categories of the current tree's categorical nodes */
    size_t n_cats, cats_cap;
    char *scratch;         /* decoded category strings */
    size_t scratch_cap;
    size_t *tree_byte;     /* where each tree's object starts, for error locations */
    size_t n_trees, tree_byte_cap;
    /* header */
    int has_num_class, has_max_feature, has_tree_info, average_output;
    long long num_class, per_iter, max_feature;
    int has_per_iter;
    char version[16], objective[64];
    sbuf names;            /* "a b c" when every feature name is a plain token */
    int names_ok;
} lj_ctx;

/* ---- text buffer ------------------------------------------------------------------- */

static void sb_put(sbuf *b, const char *s, size_t n) {
    if (b->oom) return;
    if (b->n + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 4096;
        while (cap < b->n + n + 1) cap *= 2;
        char *q = realloc(b->p, cap);
        if (!q) {
            b->oom = 1;
            return;
        }
        b->p = q;
        b->cap = cap;
    }
    memcpy(b->p + b->n, s, n);
    b->n += n;
    b->p[b->n] = '\0';
}

static void sb_printf(sbuf *b, const char *fmt, ...) TS_PRINTF(2, 3);
static void sb_printf(sbuf *b, const char *fmt, ...) {
    char tmp[128];
    va_list ap;
    va_start(ap, fmt);
    int k = vsnprintf(tmp, sizeof tmp, fmt, ap);
    va_end(ap);
    if (k > 0) sb_put(b, tmp, (size_t)k < sizeof tmp ? (size_t)k : sizeof tmp - 1);
}

/* ---- errors and small readers ------------------------------------------------------ */

static ts_status oom(lj_ctx *c) { return tsj_fail(&c->p, TS_ERR_NO_MEMORY, "out of memory"); }

static ts_status grow(lj_ctx *c, void **p, size_t *cap, size_t need, size_t elem) {
    if (need <= *cap) return TS_OK;
    size_t n = *cap ? *cap : 64;
    while (n < need) n *= 2;
    void *q = realloc(*p, n * elem);
    if (!q) return oom(c);
    memset((char *)q + *cap * elem, 0, (n - *cap) * elem);
    *p = q;
    *cap = n;
    return TS_OK;
}

static ts_status read_int(lj_ctx *c, const char *key, long long lo, long long hi, long long *out) {
    const char *tok;
    size_t n, at = tsj_offset(&c->p);
    TS_TRY(tsj_number(&c->p, &tok, &n));
    if (tsio_parse_int(tok, n, lo, hi, out) == 0) return TS_OK;
    char ex[64];
    tsio_excerpt(ex, sizeof ex, tok, n);
    if (tsio_int_above(tok, n, hi)) /* a claimed size past the limit: nothing of it is allocated */
        return tsj_fail_at(&c->p, TS_ERR_LIMIT, at, "\"%s\" %s is above the limit %lld", key, ex, hi);
    return tsj_fail_at(&c->p, TS_ERR_PARSE, at, "bad \"%s\" %s (expected an integer from %lld to %lld)", key, ex,
                       lo, hi);
}

/* A number whose token text is kept (it is copied into the model text as it is). */
static ts_status read_number(lj_ctx *c, const char *key, const char **tok, size_t *n) {
    size_t at = tsj_offset(&c->p);
    double d;
    TS_TRY(tsj_number(&c->p, tok, n));
    if (tsio_parse_double(*tok, *n, &d) == 0 && d == d) return TS_OK;
    char ex[64];
    tsio_excerpt(ex, sizeof ex, *tok, *n);
    return tsj_fail_at(&c->p, TS_ERR_PARSE, at, "bad \"%s\" %s", key, ex);
}

/* A numerical threshold. LightGBM writes it through Common::AvoidInf, which prints +-inf
 * (the threshold of its "x <= inf" splits, which separate +inf from NaN) as +-1e300: turn
 * those back into +-inf, which the text model holds. A finite threshold of 1e300 or more
 * cannot come from float data, nor from any feature value LightGBM saw short of 1e300. */
static ts_status read_threshold(lj_ctx *c, lj_node *nd) {
    double d;
    TS_TRY(read_number(c, "threshold", &nd->thr, &nd->thr_n));
    if (tsio_parse_double(nd->thr, nd->thr_n, &d) != 0) return TS_OK; /* cannot fail: read_number checked */
    if (d >= 1e300 || d <= -1e300) {
        nd->thr = d > 0 ? "inf" : "-inf";
        nd->thr_n = strlen(nd->thr);
    }
    return TS_OK;
}

/* A string of printable characters (it goes into a line of the model text). */
static ts_status read_line_string(lj_ctx *c, const char *key, char *buf, size_t cap) {
    size_t at = tsj_offset(&c->p);
    TS_TRY(tsj_string(&c->p, buf, cap));
    for (const char *s = buf; *s; s++)
        if ((unsigned char)*s < 0x20 || *s == 0x7f)
            return tsj_fail_at(&c->p, TS_ERR_PARSE, at, "\"%s\" holds a control character", key);
    return TS_OK;
}

/* ---- categorical thresholds -------------------------------------------------------- */

/* Decode the next string into c->scratch, whatever its length. */
static ts_status read_long_string(lj_ctx *c) {
    tsj_parser saved = c->p;
    int truncated = 0;
    if (c->scratch_cap < 4096) TS_TRY(grow(c, (void **)&c->scratch, &c->scratch_cap, 4096, 1));
    TS_TRY(tsj_string_prefix(&c->p, c->scratch, c->scratch_cap, &truncated));
    if (!truncated) return TS_OK;
    c->p = saved; /* the decoded text is never longer than its JSON source: measure that */
    size_t i = tsj_offset(&c->p) + 1;
    while (i < c->size && c->data[i] != '"') i += c->data[i] == '\\' ? 2 : 1;
    TS_TRY(grow(c, (void **)&c->scratch, &c->scratch_cap, i - tsj_offset(&c->p) + 1, 1));
    return tsj_string(&c->p, c->scratch, c->scratch_cap);
}

/* "1||3||5": the categories that go left, appended to c->cats. */
static ts_status read_categories(lj_ctx *c, lj_node *nd) {
    size_t at = tsj_offset(&c->p);
    TS_TRY(read_long_string(c));
    nd->cat_first = c->n_cats;
    const char *s = c->scratch, *end = s + strlen(s);
    while (s < end) {
        const char *bar = strstr(s, "||");
        const char *stop = bar ? bar : end;
        long long v;
        char ex[64];
        tsio_excerpt(ex, sizeof ex, s, (size_t)(stop - s));
        if (tsio_parse_int(s, (size_t)(stop - s), 0, INT32_MAX, &v) != 0)
            return tsj_fail_at(&c->p, TS_ERR_PARSE, at,
                               "bad category '%s' in a categorical threshold (expected integers from 0 joined by "
                               "'||')",
                               ex);
        if (v > LJ_MAX_CATEGORY)
            return tsj_fail_at(&c->p, TS_ERR_LIMIT, at, "category %s in a categorical threshold is above %u", ex,
                               LJ_MAX_CATEGORY);
        TS_TRY(grow(c, (void **)&c->cats, &c->cats_cap, c->n_cats + 1, sizeof *c->cats));
        c->cats[c->n_cats++] = (uint32_t)v;
        s = bar ? bar + 2 : end;
    }
    nd->cat_n = c->n_cats - nd->cat_first;
    if (nd->cat_n == 0) return tsj_fail_at(&c->p, TS_ERR_PARSE, at, "empty categorical threshold");
    return TS_OK;
}

/* ---- nodes ------------------------------------------------------------------------- */

/* What one NODE object holds, before it is stored. */
typedef struct lj_fields {
    int has_split, has_feature, has_thr, has_left, has_right, has_leaf_index, has_leaf_value, decision_eq;
    int linear;
    long long split, leaf_index;
    lj_node nd;
    const char *leaf_v;
    size_t leaf_n;
} lj_fields;

static ts_status parse_node(lj_ctx *c, size_t tree, long long *ref);

static ts_status node_key(lj_ctx *c, size_t tree, const char *key, lj_fields *f) {
    char s[16];
    size_t at = tsj_offset(&c->p);
    if (!strcmp(key, "split_index")) {
        f->has_split = 1;
        return read_int(c, key, 0, (long long)TSM_MAX_LEAVES - 2, &f->split);
    }
    if (!strcmp(key, "split_feature")) {
        f->has_feature = 1;
        return read_int(c, key, 0, (long long)TSM_MAX_FEATURES - 1, &f->nd.feature);
    }
    if (!strcmp(key, "threshold")) {
        tsj_type t;
        TS_TRY(tsj_peek(&c->p, &t));
        f->has_thr = 1;
        if (t != TSJ_STRING) return read_threshold(c, &f->nd);
        f->nd.categorical = 1;
        return read_categories(c, &f->nd);
    }
    if (!strcmp(key, "decision_type")) {
        TS_TRY(tsj_string(&c->p, s, sizeof s));
        if (strcmp(s, "<=") && strcmp(s, "=="))
            return tsj_fail_at(&c->p, TS_ERR_PARSE, at, "bad \"decision_type\" (expected \"<=\" or \"==\")");
        f->decision_eq = !strcmp(s, "==");
        return TS_OK;
    }
    if (!strcmp(key, "default_left")) return tsj_bool(&c->p, 1, &f->nd.default_left);
    if (!strcmp(key, "missing_type")) {
        TS_TRY(tsj_string(&c->p, s, sizeof s));
        f->nd.missing_type = !strcmp(s, "None") ? 0 : !strcmp(s, "Zero") ? 1 : !strcmp(s, "NaN") ? 2 : -1;
        if (f->nd.missing_type < 0)
            return tsj_fail_at(&c->p, TS_ERR_PARSE, at, "bad \"missing_type\" (expected \"None\", \"Zero\" or \"NaN\")");
        return TS_OK;
    }
    if (!strcmp(key, "left_child") || !strcmp(key, "right_child")) {
        int left = key[0] == 'l';
        int *has = left ? &f->has_left : &f->has_right;
        if (*has) return tsj_fail_at(&c->p, TS_ERR_PARSE, at, "tree %zu: \"%s\" appears twice", tree, key);
        *has = 1;
        return parse_node(c, tree, left ? &f->nd.left : &f->nd.right);
    }
    if (!strcmp(key, "leaf_index")) {
        f->has_leaf_index = 1;
        return read_int(c, key, 0, (long long)TSM_MAX_LEAVES - 1, &f->leaf_index);
    }
    if (!strcmp(key, "leaf_value")) {
        f->has_leaf_value = 1;
        return read_number(c, key, &f->leaf_v, &f->leaf_n);
    }
    if (!strcmp(key, "leaf_const") || !strcmp(key, "leaf_coeff") || !strcmp(key, "leaf_features")) f->linear = 1;
    return tsj_skip(&c->p);
}

static ts_status store_split(lj_ctx *c, size_t tree, lj_fields *f, size_t at, long long *ref) {
    if (!f->has_feature || !f->has_thr || !f->has_left || !f->has_right)
        return tsj_fail_at(&c->p, TS_ERR_PARSE, at,
                           "tree %zu: split %lld needs \"split_feature\", \"threshold\", \"left_child\" and "
                           "\"right_child\"",
                           tree, f->split);
    if (f->decision_eq != f->nd.categorical)
        return tsj_fail_at(&c->p, TS_ERR_PARSE, at,
                           "tree %zu: split %lld: decision_type \"%s\" with a %s threshold", tree, f->split,
                           f->decision_eq ? "==" : "<=", f->nd.categorical ? "categorical (string)" : "numerical");
    TS_TRY(grow(c, (void **)&c->nodes, &c->nodes_cap, (size_t)f->split + 1, sizeof *c->nodes));
    if (c->nodes[f->split].present)
        return tsj_fail_at(&c->p, TS_ERR_PARSE, at, "tree %zu: split_index %lld appears twice", tree, f->split);
    f->nd.present = 1;
    c->nodes[f->split] = f->nd;
    c->n_nodes++;
    *ref = f->split;
    return TS_OK;
}

static ts_status store_leaf(lj_ctx *c, size_t tree, lj_fields *f, size_t at, long long *ref) {
    if (f->linear)
        return tsj_fail_at(&c->p, TS_ERR_UNSUPPORTED, at,
                           "tree %zu: linear trees (leaf_const, leaf_coeff) are not supported: the leaves' "
                           "linear models are not scored",
                           tree);
    if (!f->has_leaf_value)
        return tsj_fail_at(&c->p, TS_ERR_PARSE, at, "tree %zu: a node with neither \"split_index\" nor \"leaf_value\"",
                           tree);
    long long j = f->has_leaf_index ? f->leaf_index : 0;
    TS_TRY(grow(c, (void **)&c->leaves, &c->leaves_cap, (size_t)j + 1, sizeof *c->leaves));
    if (c->leaves[j].present)
        return tsj_fail_at(&c->p, TS_ERR_PARSE, at, "tree %zu: leaf_index %lld appears twice", tree, j);
    c->leaves[j] = (lj_leaf){1, f->leaf_v, f->leaf_n};
    c->n_leaves++;
    *ref = -j - 1;
    return TS_OK;
}

/* One NODE object; *ref receives its reference in LightGBM's child encoding. */
static ts_status parse_node(lj_ctx *c, size_t tree, long long *ref) {
    lj_fields f;
    char key[TSJ_KEY_MAX];
    int has;
    size_t at = tsj_offset(&c->p);
    memset(&f, 0, sizeof f);
    TS_TRY(tsj_object_begin(&c->p));
    while (tsj_object_next(&c->p, key, &has) == TS_OK && has) TS_TRY(node_key(c, tree, key, &f));
    TS_TRY(c->p.status);
    if (f.has_split) {
        if (f.linear || f.has_leaf_value)
            return tsj_fail_at(&c->p, TS_ERR_PARSE, at, "tree %zu: a node with both \"split_index\" and leaf keys",
                               tree);
        return store_split(c, tree, &f, at, ref);
    }
    if (f.has_feature || f.has_left || f.has_right)
        return tsj_fail_at(&c->p, TS_ERR_PARSE, at, "tree %zu: a split node without \"split_index\"", tree);
    return store_leaf(c, tree, &f, at, ref);
}

/* ---- trees ------------------------------------------------------------------------- */

/* Bitset words a categorical node needs: one bit per category up to its largest. */
static size_t cat_words(const lj_ctx *c, const lj_node *nd) {
    uint32_t top = 0;
    for (size_t k = 0; k < nd->cat_n; k++)
        if (c->cats[nd->cat_first + k] > top) top = c->cats[nd->cat_first + k];
    return top / 32 + 1;
}

/* cat_boundaries and cat_threshold (LightGBM's layout: categorical node i, in split
 * order, owns words cat_boundaries[i] .. cat_boundaries[i+1]-1; bit v%32 of word v/32
 * is set for each category v that goes left). */
static ts_status write_categorical(lj_ctx *c, size_t n) {
    size_t max_words = 0, total = 0;
    int any = 0;
    for (size_t i = 0; i < n; i++) {
        if (!c->nodes[i].categorical) continue;
        size_t w = cat_words(c, &c->nodes[i]);
        if (w > max_words) max_words = w;
        any = 1;
    }
    if (!any) return TS_OK;
    uint32_t *words = malloc(max_words * sizeof *words);
    if (!words) return oom(c);
    sb_put(&c->trees, "cat_boundaries=0", 16);
    for (size_t i = 0; i < n; i++) {
        if (!c->nodes[i].categorical) continue;
        total += cat_words(c, &c->nodes[i]);
        sb_printf(&c->trees, " %zu", total);
    }
    sb_put(&c->trees, "\ncat_threshold=", 15);
    int first = 1;
    for (size_t i = 0; i < n; i++) {
        const lj_node *nd = &c->nodes[i];
        if (!nd->categorical) continue;
        size_t nw = cat_words(c, nd);
        memset(words, 0, nw * sizeof *words);
        for (size_t k = 0; k < nd->cat_n; k++) {
            uint32_t v = c->cats[nd->cat_first + k];
            words[v / 32] |= 1u << (v % 32);
        }
        for (size_t w = 0; w < nw; w++) sb_printf(&c->trees, "%s%u", first && w == 0 ? "" : " ", words[w]);
        first = 0;
    }
    sb_put(&c->trees, "\n", 1);
    free(words);
    return TS_OK;
}

/* One "Tree=" block of the model text, from the arrays of the tree just read. */
static ts_status write_tree(lj_ctx *c, size_t tree) {
    size_t n = c->n_nodes, cat = 0;
    sbuf *b = &c->trees;
    size_t n_cat = 0;
    for (size_t i = 0; i < n; i++) n_cat += c->nodes[i].categorical != 0;
    sb_printf(b, "Tree=%zu\nnum_leaves=%zu\nnum_cat=%zu\n", tree, c->n_leaves, n_cat);
    if (n > 0) {
        sb_put(b, "split_feature=", 14);
        for (size_t i = 0; i < n; i++) sb_printf(b, "%s%lld", i ? " " : "", c->nodes[i].feature);
        sb_put(b, "\nthreshold=", 11);
        for (size_t i = 0; i < n; i++) {
            if (i) sb_put(b, " ", 1);
            if (c->nodes[i].categorical)
                sb_printf(b, "%zu", cat++);
            else
                sb_put(b, c->nodes[i].thr, c->nodes[i].thr_n);
        }
        sb_put(b, "\ndecision_type=", 15);
        for (size_t i = 0; i < n; i++) {
            const lj_node *nd = &c->nodes[i];
            sb_printf(b, "%s%d", i ? " " : "", (nd->categorical ? 1 : 0) | (nd->default_left ? 2 : 0) |
                                                     (nd->missing_type << 2));
        }
        sb_put(b, "\nleft_child=", 12);
        for (size_t i = 0; i < n; i++) sb_printf(b, "%s%lld", i ? " " : "", c->nodes[i].left);
        sb_put(b, "\nright_child=", 13);
        for (size_t i = 0; i < n; i++) sb_printf(b, "%s%lld", i ? " " : "", c->nodes[i].right);
        sb_put(b, "\n", 1);
    }
    sb_put(b, "leaf_value=", 11);
    for (size_t j = 0; j < c->n_leaves; j++) {
        if (j) sb_put(b, " ", 1);
        sb_put(b, c->leaves[j].v, c->leaves[j].n);
    }
    sb_put(b, "\n", 1);
    TS_TRY(write_categorical(c, n));
    sb_put(b, "is_linear=0\nshrinkage=1\n\n", 25);
    return b->oom ? oom(c) : TS_OK;
}

/* The indices must be 0 .. n-1 each once, with one more leaf than splits. */
static ts_status check_tree(lj_ctx *c, size_t tree, size_t at, long long root, long long num_leaves) {
    for (size_t i = 0; i < c->n_nodes; i++)
        if (i >= c->nodes_cap || !c->nodes[i].present)
            return tsj_fail_at(&c->p, TS_ERR_PARSE, at, "tree %zu: split_index %zu is missing", tree, i);
    for (size_t j = 0; j < c->n_leaves; j++)
        if (j >= c->leaves_cap || !c->leaves[j].present)
            return tsj_fail_at(&c->p, TS_ERR_PARSE, at, "tree %zu: leaf_index %zu is missing", tree, j);
    if (c->n_leaves != c->n_nodes + 1)
        return tsj_fail_at(&c->p, TS_ERR_PARSE, at, "tree %zu: %zu leaves for %zu splits (expected one more)", tree,
                           c->n_leaves, c->n_nodes);
    if (num_leaves >= 0 && (size_t)num_leaves != c->n_leaves)
        return tsj_fail_at(&c->p, TS_ERR_PARSE, at, "tree %zu: num_leaves is %lld but the tree has %zu leaves", tree,
                           num_leaves, c->n_leaves);
    if (c->n_nodes > 0 && root != 0)
        return tsj_fail_at(&c->p, TS_ERR_PARSE, at, "tree %zu: the root is not split_index 0", tree);
    return TS_OK;
}

static void reset_tree(lj_ctx *c) {
    if (c->nodes) memset(c->nodes, 0, c->nodes_cap * sizeof *c->nodes);
    if (c->leaves) memset(c->leaves, 0, c->leaves_cap * sizeof *c->leaves);
    c->n_nodes = c->n_leaves = c->n_cats = 0;
}

static ts_status parse_tree(lj_ctx *c) {
    char key[TSJ_KEY_MAX];
    int has, has_structure = 0;
    long long num_leaves = -1, root = 0;
    size_t tree = c->n_trees, at = tsj_offset(&c->p);
    TS_TRY(grow(c, (void **)&c->tree_byte, &c->tree_byte_cap, tree + 1, sizeof *c->tree_byte));
    c->tree_byte[c->n_trees++] = at;
    if (tree >= TSM_MAX_TREES) return tsj_fail(&c->p, TS_ERR_LIMIT, "more than %u trees", TSM_MAX_TREES);
    reset_tree(c);
    TS_TRY(tsj_object_begin(&c->p));
    while (tsj_object_next(&c->p, key, &has) == TS_OK && has) {
        if (!strcmp(key, "num_leaves")) {
            TS_TRY(read_int(c, key, 1, TSM_MAX_LEAVES, &num_leaves));
        } else if (!strcmp(key, "tree_structure")) {
            if (has_structure) return tsj_fail(&c->p, TS_ERR_PARSE, "tree %zu: \"tree_structure\" appears twice", tree);
            has_structure = 1;
            TS_TRY(parse_node(c, tree, &root));
        } else {
            TS_TRY(tsj_skip(&c->p));
        }
    }
    TS_TRY(c->p.status);
    if (!has_structure) return tsj_fail_at(&c->p, TS_ERR_PARSE, at, "tree %zu: no \"tree_structure\"", tree);
    TS_TRY(check_tree(c, tree, at, root, num_leaves));
    return write_tree(c, tree);
}

/* ---- header ------------------------------------------------------------------------ */

static int plain_token(const char *s) {
    if (!*s) return 0;
    for (; *s; s++)
        if ((unsigned char)*s <= 0x20 || *s == 0x7f) return 0;
    return 1;
}

static ts_status read_feature_names(lj_ctx *c) {
    char name[256];
    int has, first = 1;
    c->names_ok = 1;
    TS_TRY(tsj_array_begin(&c->p));
    while (tsj_array_next(&c->p, &has) == TS_OK && has) {
        int truncated = 0;
        TS_TRY(tsj_string_prefix(&c->p, name, sizeof name, &truncated));
        if (truncated || !plain_token(name)) c->names_ok = 0; /* names are information: dropped, not an error */
        if (!first) sb_put(&c->names, " ", 1);
        first = 0;
        sb_put(&c->names, name, strlen(name));
    }
    TS_TRY(c->p.status);
    return c->names.oom ? oom(c) : TS_OK;
}

static ts_status top_key(lj_ctx *c, const char *key) {
    int has;
    if (!strcmp(key, "num_class")) {
        c->has_num_class = 1;
        return read_int(c, key, 1, 1 << 30, &c->num_class);
    }
    if (!strcmp(key, "num_tree_per_iteration")) {
        c->has_per_iter = 1;
        return read_int(c, key, 1, 1 << 30, &c->per_iter);
    }
    if (!strcmp(key, "max_feature_idx")) {
        c->has_max_feature = 1;
        return read_int(c, key, 0, (long long)TSM_MAX_FEATURES - 1, &c->max_feature);
    }
    if (!strcmp(key, "version")) return read_line_string(c, key, c->version, sizeof c->version);
    if (!strcmp(key, "objective")) {
        int truncated;
        TS_TRY(tsj_string_prefix(&c->p, c->objective, sizeof c->objective, &truncated));
        for (char *s = c->objective; *s; s++)
            if ((unsigned char)*s < 0x20 || *s == 0x7f) *s = '?';
        return TS_OK;
    }
    if (!strcmp(key, "average_output")) return tsj_bool(&c->p, 1, &c->average_output);
    if (!strcmp(key, "feature_names")) return read_feature_names(c);
    if (!strcmp(key, "tree_info")) {
        c->has_tree_info = 1;
        TS_TRY(tsj_array_begin(&c->p));
        while (tsj_array_next(&c->p, &has) == TS_OK && has) TS_TRY(parse_tree(c));
        return c->p.status;
    }
    return tsj_skip(&c->p);
}

static ts_status parse_document(lj_ctx *c) {
    char key[TSJ_KEY_MAX];
    int has;
    tsj_type t;
    TS_TRY(tsj_peek(&c->p, &t));
    if (t != TSJ_OBJECT)
        return tsj_fail(&c->p, TS_ERR_PARSE, "expected a JSON object (LightGBM dump_model()), found something else");
    TS_TRY(tsj_object_begin(&c->p));
    while (tsj_object_next(&c->p, key, &has) == TS_OK && has) TS_TRY(top_key(c, key));
    TS_TRY(c->p.status);
    TS_TRY(tsj_end(&c->p));
    static const char *const need[] = {"tree_info", "num_class", "max_feature_idx"};
    int got[] = {c->has_tree_info, c->has_num_class, c->has_max_feature};
    for (size_t i = 0; i < 3; i++)
        if (!got[i])
            return tsio_fail(c->err, TS_ERR_PARSE, c->name, 0, 0, "no \"%s\" key: not a LightGBM dump_model() JSON",
                             need[i]);
    return TS_OK;
}

static void write_header(lj_ctx *c) {
    sbuf *b = &c->head;
    sb_put(b, "tree\n", 5);
    if (c->version[0]) sb_printf(b, "version=%s\n", c->version);
    sb_printf(b, "num_class=%lld\n", c->num_class);
    if (c->has_per_iter) sb_printf(b, "num_tree_per_iteration=%lld\n", c->per_iter);
    sb_printf(b, "max_feature_idx=%lld\n", c->max_feature);
    if (c->objective[0]) {
        sb_put(b, "objective=", 10);
        sb_put(b, c->objective, strlen(c->objective));
        sb_put(b, "\n", 1);
    }
    if (c->average_output) sb_put(b, "average_output\n", 15);
    if (c->names_ok && c->names.n) {
        sb_put(b, "feature_names=", 14);
        sb_put(b, c->names.p, c->names.n);
        sb_put(b, "\n", 1);
    }
    sb_put(b, "\n", 1);
    sb_put(b, c->trees.p ? c->trees.p : "", c->trees.n);
    sb_put(b, "end of trees\n", 13);
}

/* The text loader's messages read "NAME:LINE: tree K: ..." with LINE in the generated
 * text: point them at tree K's line in the JSON instead (or at no line). */
static ts_status relocate(lj_ctx *c, ts_status st) {
    if (!c->err) return st;
    char rest[TS_ERROR_MESSAGE_SIZE];
    const char *m = c->err->message;
    size_t k = strlen(c->name);
    if (strncmp(m, c->name, k) == 0 && m[k] == ':') {
        m += k + 1;
        while (*m >= '0' && *m <= '9') m++;
        if (*m == ':') m++;
        while (*m == ' ') m++;
    }
    snprintf(rest, sizeof rest, "%s", m);
    unsigned tree;
    if (sscanf(rest, "tree %u", &tree) == 1 && tree < c->n_trees) {
        size_t at = c->tree_byte[tree];
        return tsio_fail(c->err, st, c->name, tsio_line_at(c->data, c->size, at), at, "%s", rest);
    }
    return tsio_fail(c->err, st, c->name, 0, 0, "%s", rest);
}

static void free_ctx(lj_ctx *c) {
    free(c->head.p);
    free(c->trees.p);
    free(c->names.p);
    free(c->nodes);
    free(c->leaves);
    free(c->cats);
    free(c->scratch);
    free(c->tree_byte);
}

ts_status tsio_load_lightgbm_json(const char *data, size_t size, const char *name, ts_model **out, ts_error *err) {
    lj_ctx c;
    memset(&c, 0, sizeof c);
    *out = NULL;
    if (!name) name = "<buffer>";
    c.data = data;
    c.size = size;
    c.name = name;
    c.err = err;
    tsj_init(&c.p, data, size, tsio_skip_bom(data, size), name, err);
    ts_status st = parse_document(&c);
    if (st == TS_OK) {
        write_header(&c);
        if (c.head.oom)
            st = ts_fail(err, TS_ERR_NO_MEMORY, "%s: out of memory", name);
        else
            st = tsio_load_lightgbm(c.head.p, c.head.n, name, out, err);
        if (st != TS_OK) st = relocate(&c, st);
    }
    free_ctx(&c);
    if (st != TS_OK) return st;
    (*out)->format = TS_FORMAT_LIGHTGBM_JSON;
    return TS_OK;
}

/* ---- detection --------------------------------------------------------------------- */

#define LJ_DETECT_WINDOW ((size_t)1 << 20)

int tsio_is_lightgbm_json(const char *data, size_t size) {
    tsj_parser p;
    char key[TSJ_KEY_MAX], value[16];
    int has;
    tsj_init(&p, data, size < LJ_DETECT_WINDOW ? size : LJ_DETECT_WINDOW, 0, "", NULL);
    if (tsj_object_begin(&p) != TS_OK) return 0;
    while (tsj_object_next(&p, key, &has) == TS_OK && has) {
        if (!strcmp(key, "tree_info")) return 1;
        if (!strcmp(key, "learner")) return 0;
        tsj_type t;
        if (!strcmp(key, "name") && tsj_peek(&p, &t) == TS_OK && t == TSJ_STRING) {
            int truncated;
            if (tsj_string_prefix(&p, value, sizeof value, &truncated) != TS_OK) return 0;
            if (!truncated && !strcmp(value, "tree")) return 1;
            continue;
        }
        if (tsj_skip(&p) != TS_OK) return 0;
    }
    return 0;
}
