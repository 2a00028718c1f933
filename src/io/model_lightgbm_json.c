/* model_lightgbm_json.c: loader for LightGBM dump_model() JSON: LightGBM's tree arrays built from the JSON, mapped to the IR by io/lightgbm_tree.h. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "io/json.h"
#include "io/lightgbm_tree.h"
#include "io/limits.h"
#include "io/loaders.h"
#include "io/text.h"
#include "model/forest.h"
#include "platform/notes.h"

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
 * Semantics: those of the text model, exactly: split_index and leaf_index are the
 * indices of LightGBM's own arrays, so each tree becomes the arrays LightGBM's
 * save_model would write (split_feature, threshold, decision_type, left_child,
 * right_child, leaf_value, and cat_boundaries/cat_threshold bitsets for categorical
 * nodes), every number parsed from its JSON token as the text loader parses its
 * tokens, and io/lightgbm_tree.h maps them to the IR, as it does for the text model
 * (model_lightgbm.c). LightGBM prints the JSON numbers with 17 significant digits and
 * Python's json module with the shortest round-trip repr, so the thresholds and leaf
 * values are the very doubles of the text model, except the infinite thresholds that
 * LightGBM prints as +-1e300 (see read_threshold).
 *
 * The whole document is read first (its keys come in any order: "tree_info" may precede
 * "max_feature_idx"), keeping every tree's nodes; then the header is checked and the
 * trees are added. Errors are reported at the JSON's lines: structure errors where they
 * are, the semantic checks' ("tree 3: ...") at the line of tree 3's object.
 * Recursion over NODEs is bounded by the JSON parser's nesting limit (TSJ_MAX_DEPTH).
 */

/* Largest category value in a categorical split: its bitset (one bit per category up to
 * the largest) must stay small; LightGBM's own category values are small integers. */
#define LJ_MAX_CATEGORY ((1u << 24) - 1)

/* A growing text buffer (the feature names); `oom` is sticky. */
typedef struct sbuf {
    char *p;
    size_t n, cap;
    int oom;
} sbuf;

/* An internal node, stored at its split_index. */
typedef struct lj_node {
    int present;
    long long feature;
    double thr;            /* numerical: the threshold */
    int categorical;
    size_t cat_first, cat_n; /* categorical: its categories in lj_ctx.cats */
    int default_left, missing_type;
    long long left, right; /* LightGBM encoding: >= 0 split index, < 0 leaf ~c */
} lj_node;

typedef struct lj_leaf {
    int present;
    double v;
} lj_leaf;

/* A tree read: its nodes and leaves in lj_ctx's all_nodes and all_leaves, in index order. */
typedef struct lj_tree {
    size_t node0, n_nodes, leaf0, n_leaves;
} lj_tree;

typedef struct lj_ctx {
    tsj_parser p;
    const char *data;
    size_t size;
    const char *name;
    ts_error *err;
    /* the tree being read: nodes[0 .. nodes_cap) and leaves[0 .. leaves_cap), `present`
     * marks the indices seen; n_nodes/n_leaves count them */
    lj_node *nodes;
    size_t nodes_cap, n_nodes;
    lj_leaf *leaves;
    size_t leaves_cap, n_leaves;
    uint32_t *cats;        /* categories of the categorical nodes of every tree */
    size_t n_cats, cats_cap;
    char *scratch;         /* decoded category strings */
    size_t scratch_cap;
    size_t *tree_byte;     /* where each tree's object starts, for error locations */
    size_t n_trees, tree_byte_cap;
    lj_tree *trees;        /* every tree read (n_trees once the document is read) */
    size_t trees_cap;
    lj_node *all_nodes;
    size_t n_all_nodes, all_nodes_cap;
    lj_leaf *all_leaves;
    size_t n_all_leaves, all_leaves_cap;
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
    return tsj_read_int(&c->p, key, lo, hi, out);
}

/* A number, parsed from its token as the text loader parses the same token. */
static ts_status read_number(lj_ctx *c, const char *key, double *d) {
    size_t at = tsj_offset(&c->p), n;
    const char *tok;
    TS_TRY(tsj_number(&c->p, &tok, &n));
    if (tsio_parse_double(tok, n, d) == 0 && *d == *d) return TS_OK;
    char ex[64];
    tsio_excerpt(ex, sizeof ex, tok, n);
    return tsj_fail_at(&c->p, TS_ERR_PARSE, at, "bad \"%s\" %s", key, ex);
}

/* A numerical threshold. LightGBM writes it through Common::AvoidInf, which prints +-inf
 * (the threshold of its "x <= inf" splits, which separate +inf from NaN) as +-1e300: turn
 * those back into +-inf, which the text model holds. A finite threshold of 1e300 or more
 * cannot come from float data, nor from any feature value LightGBM saw short of 1e300. */
static ts_status read_threshold(lj_ctx *c, lj_node *nd) {
    TS_TRY(read_number(c, "threshold", &nd->thr));
    if (nd->thr >= 1e300 || nd->thr <= -1e300) nd->thr = nd->thr > 0 ? INFINITY : -INFINITY;
    return TS_OK;
}

/* A string of printable characters (as a line of the text model holds). */
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
    double leaf_v;
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
        return read_number(c, key, &f->leaf_v);
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
    c->leaves[j] = (lj_leaf){1, f->leaf_v};
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
    c->n_nodes = c->n_leaves = 0; /* the categories stay: all_nodes refer to them */
}

/* Append the tree just read (checked: indices 0 .. n-1) to all_nodes and all_leaves. */
static ts_status keep_tree(lj_ctx *c, size_t tree) {
    TS_TRY(grow(c, (void **)&c->trees, &c->trees_cap, tree + 1, sizeof *c->trees));
    TS_TRY(grow(c, (void **)&c->all_nodes, &c->all_nodes_cap, c->n_all_nodes + c->n_nodes, sizeof *c->all_nodes));
    TS_TRY(grow(c, (void **)&c->all_leaves, &c->all_leaves_cap, c->n_all_leaves + c->n_leaves,
                sizeof *c->all_leaves));
    c->trees[tree] = (lj_tree){c->n_all_nodes, c->n_nodes, c->n_all_leaves, c->n_leaves};
    if (c->n_nodes) memcpy(c->all_nodes + c->n_all_nodes, c->nodes, c->n_nodes * sizeof *c->nodes);
    memcpy(c->all_leaves + c->n_all_leaves, c->leaves, c->n_leaves * sizeof *c->leaves);
    c->n_all_nodes += c->n_nodes;
    c->n_all_leaves += c->n_leaves;
    return TS_OK;
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
    return keep_tree(c, tree);
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

/* ---- the model: LightGBM's arrays, mapped by io/lightgbm_tree.h ------------------- */

/* An error of the shared semantics: at the tree's object when it is about tree `tree`,
 * else at no line (the header, or the model layer's own message). */
static ts_status locate(lj_ctx *c, ts_status st, tslg_at at, size_t tree) {
    if (at == TSLG_AT_NONE || tree >= c->n_trees) return tsio_locate(c->err, st, c->name, 0, 0);
    size_t byte = c->tree_byte[tree];
    return tsio_locate(c->err, st, c->name, tsio_line_at(c->data, c->size, byte), byte);
}

/* The header's values, checked as the text model's header is. */
static ts_status build_header(lj_ctx *c, ts_model *m) {
    tslg_at at;
    if (c->version[0] && !tslg_version_supported(c->version, strlen(c->version))) {
        const char *p = c->version;
        size_t n = strlen(p);
        char ex[64];
        tsio_trim(&p, &n);
        tsio_excerpt(ex, sizeof ex, p, n);
        return tsio_fail(c->err, TS_ERR_UNSUPPORTED, c->name, 0, 0,
                         "LightGBM model version '%s' is not supported (v2, v3 and v4 are)", ex);
    }
    ts_status st = tslg_set_outputs(m, c->num_class, c->has_per_iter ? c->per_iter : c->num_class, &at, c->err);
    if (st != TS_OK) return locate(c, st, TSLG_AT_NONE, 0);
    m->n_features_declared = (uint32_t)c->max_feature + 1;
    if (c->objective[0]) tslg_set_objective(m, c->objective, strlen(c->objective));
    if (!c->names_ok || !c->names.n) return TS_OK;
    size_t count = 1; /* names_ok: plain tokens joined by one space */
    for (size_t i = 0; i < c->names.n; i++) count += c->names.p[i] == ' ';
    if (count != m->n_features_declared) { /* names are information: dropped, said (see model_lightgbm.c) */
        tsr_note(TSR_NOTE_WARN,
                 "treescore: warning: %s: feature_names lists %zu names but max_feature_idx=%u declares %u "
                 "features: the names are ignored (no header check); LightGBM refuses such a model",
                 c->name, count, m->n_features_declared - 1, m->n_features_declared);
        return TS_OK;
    }
    for (size_t i = 0; i < c->names.n;) {
        size_t k = i;
        while (k < c->names.n && c->names.p[k] != ' ') k++;
        st = tsm_model_add_feature_name(m, c->names.p + i, k - i, c->err);
        if (st != TS_OK) return locate(c, st, TSLG_AT_NONE, 0);
        i = k + 1;
    }
    return TS_OK;
}

/* Bitset words a categorical node needs: one bit per category up to its largest. */
static size_t cat_words(const lj_ctx *c, const lj_node *nd) {
    uint32_t top = 0;
    for (size_t k = 0; k < nd->cat_n; k++)
        if (c->cats[nd->cat_first + k] > top) top = c->cats[nd->cat_first + k];
    return top / 32 + 1;
}

/* Scratch arrays of one tree, sized for the largest. */
typedef struct lj_arrays {
    int32_t *feature, *left, *right, *dtype;
    double *threshold, *leaf;
    tsm_node *nodes;
    long long *bounds;
    uint32_t *words;
} lj_arrays;

/* Tree `tree` as LightGBM's arrays in a (categorical node i, in split order, owns words
 * bounds[i] .. bounds[i+1]-1; bit v%32 of word v/32 is set for each category v that goes
 * left), then added through io/lightgbm_tree.h. */
static ts_status build_tree(lj_ctx *c, ts_model *m, uint32_t tree, lj_arrays *a) {
    const lj_tree *t = &c->trees[tree];
    const lj_node *nodes = t->n_nodes ? c->all_nodes + t->node0 : NULL; /* a one-leaf tree has none */
    size_t n_cat = 0, n_words = 0;
    for (size_t i = 0; i < t->n_nodes; i++) {
        ts_status st = tslg_check_feature(tree, nodes[i].feature, c->max_feature, c->err);
        if (st != TS_OK) return locate(c, st, TSLG_AT_TREE, tree);
    }
    for (size_t i = 0; i < t->n_nodes; i++)
        if (nodes[i].categorical) n_words += cat_words(c, &nodes[i]);
    free(a->words);
    a->words = calloc(n_words + 1, sizeof *a->words);
    if (!a->words) return ts_fail(c->err, TS_ERR_NO_MEMORY, "%s: out of memory", c->name);
    a->bounds[0] = 0;
    for (size_t i = 0; i < t->n_nodes; i++) {
        const lj_node *nd = &nodes[i];
        a->feature[i] = (int32_t)nd->feature;
        a->left[i] = (int32_t)nd->left;
        a->right[i] = (int32_t)nd->right;
        a->dtype[i] = (nd->categorical ? TSLG_CATEGORICAL_MASK : 0) | (nd->default_left ? TSLG_DEFAULT_LEFT_MASK : 0) |
                      (nd->missing_type << 2);
        if (!nd->categorical) {
            a->threshold[i] = nd->thr;
            continue;
        }
        uint32_t *w = a->words + a->bounds[n_cat];
        for (size_t k = 0; k < nd->cat_n; k++) {
            uint32_t v = c->cats[nd->cat_first + k];
            w[v / 32] |= 1u << (v % 32);
        }
        a->threshold[i] = (double)n_cat;
        a->bounds[n_cat + 1] = a->bounds[n_cat] + (long long)cat_words(c, nd);
        n_cat++;
    }
    for (size_t j = 0; j < t->n_leaves; j++) a->leaf[j] = c->all_leaves[t->leaf0 + j].v;
    tslg_tree lt = {(uint32_t)t->n_leaves, a->feature, a->left, a->right, a->dtype, a->threshold, a->leaf,
                    (long long)n_cat, a->bounds, a->words};
    tslg_at at;
    ts_status st = tslg_add_tree(m, tree, &lt, a->nodes, &at, c->err);
    return st == TS_OK ? TS_OK : locate(c, st, at, tree);
}

static ts_status build_trees(lj_ctx *c, ts_model *m) {
    size_t most = 1;
    for (size_t t = 0; t < c->n_trees; t++)
        if (c->trees[t].n_leaves > most) most = c->trees[t].n_leaves;
    lj_arrays a = {malloc(most * sizeof *a.feature), malloc(most * sizeof *a.left),
                   malloc(most * sizeof *a.right),   malloc(most * sizeof *a.dtype),
                   malloc(most * sizeof *a.threshold), malloc(most * sizeof *a.leaf),
                   malloc(most * sizeof *a.nodes),   malloc((most + 1) * sizeof *a.bounds), NULL};
    ts_status st = TS_OK;
    if (!a.feature || !a.left || !a.right || !a.dtype || !a.threshold || !a.leaf || !a.nodes || !a.bounds)
        st = ts_fail(c->err, TS_ERR_NO_MEMORY, "%s: out of memory", c->name);
    for (size_t t = 0; st == TS_OK && t < c->n_trees; t++) st = build_tree(c, m, (uint32_t)t, &a);
    free(a.feature);
    free(a.left);
    free(a.right);
    free(a.dtype);
    free(a.threshold);
    free(a.leaf);
    free(a.nodes);
    free(a.bounds);
    free(a.words);
    return st;
}

/* The model from the document read: header, trees, then tsm_model_finish located at the
 * tree its message names. LightGBM's semantics are the text model's, doubles compared
 * included (the model is made as TS_FORMAT_LIGHTGBM, then named lightgbm-json). */
static ts_status build(lj_ctx *c, ts_model **out) {
    ts_model *m = tsm_model_new(TS_FORMAT_LIGHTGBM);
    if (!m) return ts_fail(c->err, TS_ERR_NO_MEMORY, "%s: out of memory", c->name);
    ts_status st = build_header(c, m);
    if (st == TS_OK) st = build_trees(c, m);
    if (st == TS_OK) {
        tslg_at at;
        st = tslg_check_iterations(m, &at, c->err);
        if (st != TS_OK) st = locate(c, st, TSLG_AT_NONE, 0);
    }
    if (st == TS_OK) {
        /* LightGBM's raw_score of a random forest is the plain sum (see model_lightgbm.c). */
        m->average_output = (uint32_t)c->average_output;
        st = tsio_finish_located(m, c->name, c->data, c->size, c->tree_byte, c->err);
    }
    if (st != TS_OK) {
        ts_model_free(m);
        return st;
    }
    m->format = TS_FORMAT_LIGHTGBM_JSON;
    *out = m;
    return TS_OK;
}

static void free_ctx(lj_ctx *c) {
    free(c->names.p);
    free(c->nodes);
    free(c->leaves);
    free(c->cats);
    free(c->scratch);
    free(c->tree_byte);
    free(c->trees);
    free(c->all_nodes);
    free(c->all_leaves);
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
    if (st == TS_OK) st = build(&c, out);
    free_ctx(&c);
    return st;
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
