/* model_xgboost.c: loader for XGBoost JSON models (save_model("m.json"), versions 1.x to 3.x) and of their UBJSON form. */
#include <float.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "io/json.h"
#include "io/limits.h"
#include "io/loaders.h"
#include "io/text.h"
#include "io/ubjson.h"
#include "model/forest.h"
#include "platform/notes.h"

/*
 * What is read (everything else is skipped, keys may come in any order):
 *   version                                    [major, minor, patch]
 *   learner.learner_model_param                base_score ("5E-1" or "[5E-1]"), num_feature,
 *                                              num_class, num_target (strings)
 *   learner.objective.name
 *   learner.gradient_booster.name              "gbtree" | "dart" ("gblinear" is refused)
 *   learner.gradient_booster.model             gbtree: gbtree_model_param.num_trees, tree_info, trees
 *   learner.gradient_booster.gbtree.model      dart: the same
 *   learner.gradient_booster.weight_drop       dart: one weight per tree
 * Trees arrive before the learner parameters (XGBoost writes keys sorted), so each tree
 * is added as soon as it is read and the model-level checks run at the end.
 *
 * Split semantics (XGBoost RegTree::GetNext): a missing (NaN) value goes to the default
 * child, otherwise x < split_condition goes left, compared in float. split_condition is
 * a float written to round-trip, so it is parsed with strtof, and x < c is rewritten as
 * x <= nextafterf(c, -inf) (tsm_threshold_lt_float). Leaves hold their value in
 * split_conditions too. XGBoost numbers internal nodes and leaves together; they are
 * renumbered here (internal nodes and leaves each in id order; the root, id 0, becomes
 * internal node 0) and tsm_model_add_tree canonicalizes the rest.
 *
 * Categorical splits (split_type 1): categories_nodes lists the categorical nodes, and
 * node categories_nodes[i]'s set is categories[categories_segments[i] ..
 * + categories_sizes[i]), rule TSM_CAT_XGBOOST (in the set goes right). Several outputs
 * (num_class > 1: multi:softprob/softmax; num_target > 1 with one output per tree):
 * tree t adds to output tree_info[t], and base_score lists one value per output.
 */

typedef struct xgb_ints {
    int32_t *v;
    size_t n, cap;
    int present;
} xgb_ints;

typedef struct xgb_floats {
    float *v;
    size_t n, cap;
    int present;
} xgb_floats;

/* One tree as read from the file. */
typedef struct xgb_tree_in {
    xgb_ints left, right, split_index, split_type, default_left;
    xgb_ints cats, cat_nodes, cat_segments, cat_sizes; /* categorical splits */
    xgb_floats cond;
    long long num_nodes, size_leaf_vector, num_deleted;
    size_t byte;                   /* where the tree object starts */
} xgb_tree_in;

typedef struct xgb_ctx {
    tsj_parser p;
    const char *name;
    ts_error *err;
    ts_model *m;
    xgb_tree_in t;
    /* renumbering scratch, sized for the largest tree so far */
    size_t cap;
    int32_t *stack, *newref;
    unsigned char *seen;
    int32_t *cat_of;               /* per node: its position in categories_nodes, or -1 */
    uint32_t *words;               /* one category set's bitset */
    size_t words_cap;
    tsm_node *nodes;
    double *leaves;
    size_t *tree_byte;             /* start of each tree, for error messages */
    size_t tree_byte_cap;
    /* model level */
    int trees_read;                /* a "trees" array was read */
    size_t trees_byte;
    char booster[32];
    size_t booster_byte;
    char objective[64];
    char base_score[16384];
    int have_base_score, base_score_long;
    size_t base_score_byte;
    long long num_feature, num_class, num_target, num_trees_param;
    size_t num_feature_byte, num_class_byte, num_target_byte, num_trees_byte;
    xgb_ints tree_info;
    size_t tree_info_byte;
    xgb_floats weight_drop;
    size_t weight_drop_byte;
    long long version[3];
} xgb_ctx;

/* ---- growable arrays -------------------------------------------------------------- */

static ts_status push_int(xgb_ctx *c, xgb_ints *a, int32_t v) {
    if (a->n == a->cap) {
        size_t cap = a->cap ? a->cap * 2 : 64;
        int32_t *p = realloc(a->v, cap * sizeof *p);
        if (!p) return tsj_fail(&c->p, TS_ERR_NO_MEMORY, "out of memory");
        a->v = p;
        a->cap = cap;
    }
    a->v[a->n++] = v;
    return TS_OK;
}

static ts_status push_float(xgb_ctx *c, xgb_floats *a, float v) {
    if (a->n == a->cap) {
        size_t cap = a->cap ? a->cap * 2 : 64;
        float *p = realloc(a->v, cap * sizeof *p);
        if (!p) return tsj_fail(&c->p, TS_ERR_NO_MEMORY, "out of memory");
        a->v = p;
        a->cap = cap;
    }
    a->v[a->n++] = v;
    return TS_OK;
}

/* ---- values ----------------------------------------------------------------------- */

static ts_status bad_number(xgb_ctx *c, size_t byte, const char *tok, size_t n, const char *what) {
    char ex[64];
    tsio_excerpt(ex, sizeof ex, tok, n);
    return tsj_fail_at(&c->p, TS_ERR_PARSE, byte, "bad %s '%s'", what, ex);
}

/* An integer given as a JSON number or as a string holding one ("num_nodes": "7"). */
static ts_status read_int(xgb_ctx *c, const char *what, long long lo, long long hi, long long *out, size_t *byte) {
    tsj_type t;
    const char *tok;
    size_t n;
    char buf[64];
    TS_TRY(tsj_peek(&c->p, &t));
    size_t at = tsj_offset(&c->p);
    if (byte) *byte = at;
    if (t == TSJ_STRING) {
        TS_TRY(tsj_string(&c->p, buf, sizeof buf));
        tok = buf;
        n = strlen(buf);
    } else if (t == TSJ_NUMBER) {
        TS_TRY(tsj_number(&c->p, &tok, &n));
    } else {
        return tsj_fail(&c->p, TS_ERR_PARSE, "%s: expected an integer", what);
    }
    if (tsio_parse_int(tok, n, lo, hi, out) == 0) return TS_OK;
    if (tsio_int_above(tok, n, hi)) { /* a claimed size past the limit: nothing of it is allocated */
        char ex[64];
        tsio_excerpt(ex, sizeof ex, tok, n);
        return tsj_fail_at(&c->p, TS_ERR_LIMIT, at, "%s %s is above the limit %lld", what, ex, hi);
    }
    return bad_number(c, at, tok, n, what);
}

static ts_status read_string(xgb_ctx *c, char *buf, size_t cap, size_t *byte) {
    tsj_type t;
    TS_TRY(tsj_peek(&c->p, &t));
    if (byte) *byte = tsj_offset(&c->p);
    if (t != TSJ_STRING) return tsj_fail(&c->p, TS_ERR_PARSE, "expected a string");
    return tsj_string(&c->p, buf, cap);
}

static ts_status read_int_array(xgb_ctx *c, xgb_ints *a, const char *what, long long lo, long long hi) {
    int has;
    a->n = 0;
    a->present = 1;
    TS_TRY(tsj_array_begin(&c->p));
    while (tsj_array_next(&c->p, &has) == TS_OK && has) {
        const char *tok;
        size_t n, at = tsj_offset(&c->p);
        long long v;
        TS_TRY(tsj_number(&c->p, &tok, &n));
        if (tsio_parse_int(tok, n, lo, hi, &v) != 0) return bad_number(c, at, tok, n, what);
        TS_TRY(push_int(c, a, (int32_t)v));
    }
    return c->p.status;
}

static ts_status read_bool_array(xgb_ctx *c, xgb_ints *a) {
    int has;
    a->n = 0;
    a->present = 1;
    TS_TRY(tsj_array_begin(&c->p));
    while (tsj_array_next(&c->p, &has) == TS_OK && has) {
        int b;
        TS_TRY(tsj_bool(&c->p, 1, &b));
        TS_TRY(push_int(c, a, b));
    }
    return c->p.status;
}

static ts_status read_float_array(xgb_ctx *c, xgb_floats *a, const char *what) {
    int has;
    a->n = 0;
    a->present = 1;
    TS_TRY(tsj_array_begin(&c->p));
    while (tsj_array_next(&c->p, &has) == TS_OK && has) {
        const char *tok;
        size_t n, at = tsj_offset(&c->p);
        float v;
        TS_TRY(tsj_number(&c->p, &tok, &n));
        if (tsio_parse_float(tok, n, &v) != 0) return bad_number(c, at, tok, n, what);
        TS_TRY(push_float(c, a, v));
    }
    return c->p.status;
}

/* ---- one tree --------------------------------------------------------------------- */

static ts_status read_tree_param(xgb_ctx *c) {
    char key[TSJ_KEY_MAX];
    int has;
    TS_TRY(tsj_object_begin(&c->p));
    while (tsj_object_next(&c->p, key, &has) == TS_OK && has) {
        if (strcmp(key, "num_nodes") == 0)
            TS_TRY(read_int(c, "num_nodes", 0, 2LL * TSM_MAX_LEAVES - 1, &c->t.num_nodes, NULL));
        else if (strcmp(key, "size_leaf_vector") == 0)
            TS_TRY(read_int(c, "size_leaf_vector", 0, INT32_MAX, &c->t.size_leaf_vector, NULL));
        else if (strcmp(key, "num_deleted") == 0)
            TS_TRY(read_int(c, "num_deleted", 0, INT32_MAX, &c->t.num_deleted, NULL));
        else
            TS_TRY(tsj_skip(&c->p));
    }
    return c->p.status;
}

static ts_status read_tree_object(xgb_ctx *c) {
    char key[TSJ_KEY_MAX];
    int has;
    xgb_tree_in *t = &c->t;
    t->left.present = t->right.present = t->split_index.present = t->split_type.present = 0;
    t->default_left.present = t->cond.present = 0;
    t->cats.present = t->cat_nodes.present = t->cat_segments.present = t->cat_sizes.present = 0;
    t->cats.n = t->cat_nodes.n = t->cat_segments.n = t->cat_sizes.n = 0;
    t->num_nodes = -1;
    t->size_leaf_vector = 0;
    t->num_deleted = 0;
    t->byte = tsj_offset(&c->p);
    TS_TRY(tsj_object_begin(&c->p));
    while (tsj_object_next(&c->p, key, &has) == TS_OK && has) {
        if (strcmp(key, "left_children") == 0)
            TS_TRY(read_int_array(c, &t->left, "left_children", -1, INT32_MAX));
        else if (strcmp(key, "right_children") == 0)
            TS_TRY(read_int_array(c, &t->right, "right_children", -1, INT32_MAX));
        else if (strcmp(key, "split_indices") == 0)
            TS_TRY(read_int_array(c, &t->split_index, "split_indices", 0, (1LL << 32) - 1));
        else if (strcmp(key, "split_type") == 0)
            TS_TRY(read_int_array(c, &t->split_type, "split_type", 0, 255));
        else if (strcmp(key, "default_left") == 0)
            TS_TRY(read_bool_array(c, &t->default_left));
        else if (strcmp(key, "split_conditions") == 0)
            TS_TRY(read_float_array(c, &t->cond, "split_conditions"));
        else if (strcmp(key, "tree_param") == 0)
            TS_TRY(read_tree_param(c));
        else if (strcmp(key, "categories") == 0)
            TS_TRY(read_int_array(c, &t->cats, "categories", INT32_MIN, INT32_MAX));
        else if (strcmp(key, "categories_nodes") == 0)
            TS_TRY(read_int_array(c, &t->cat_nodes, "categories_nodes", INT32_MIN, INT32_MAX));
        else if (strcmp(key, "categories_segments") == 0)
            TS_TRY(read_int_array(c, &t->cat_segments, "categories_segments", INT32_MIN, INT32_MAX));
        else if (strcmp(key, "categories_sizes") == 0)
            TS_TRY(read_int_array(c, &t->cat_sizes, "categories_sizes", INT32_MIN, INT32_MAX));
        else
            TS_TRY(tsj_skip(&c->p));
    }
    return c->p.status;
}

static ts_status tree_fail(xgb_ctx *c, ts_status st, uint32_t tree, const char *fmt, ...) TS_PRINTF(4, 5);
static ts_status tree_fail(xgb_ctx *c, ts_status st, uint32_t tree, const char *fmt, ...) {
    char what[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    return tsj_fail_at(&c->p, st, c->t.byte, "tree %u: %s", tree, what);
}

static ts_status grow_scratch(xgb_ctx *c, size_t n) {
    if (n <= c->cap) return TS_OK;
    size_t cap = c->cap ? c->cap : 64;
    while (cap < n) cap *= 2;
    int32_t *stack = realloc(c->stack, cap * sizeof *stack);
    if (stack) c->stack = stack;
    int32_t *newref = realloc(c->newref, cap * sizeof *newref);
    if (newref) c->newref = newref;
    int32_t *cat_of = realloc(c->cat_of, cap * sizeof *cat_of);
    if (cat_of) c->cat_of = cat_of;
    unsigned char *seen = realloc(c->seen, cap);
    if (seen) c->seen = seen;
    tsm_node *nodes = realloc(c->nodes, cap * sizeof *nodes);
    if (nodes) c->nodes = nodes;
    double *leaves = realloc(c->leaves, cap * sizeof *leaves);
    if (leaves) c->leaves = leaves;
    if (!stack || !newref || !cat_of || !seen || !nodes || !leaves) return tsj_fail(&c->p, TS_ERR_NO_MEMORY, "out of memory");
    c->cap = cap;
    return TS_OK;
}

/* Check the arrays of the tree just read against num_nodes. */
static ts_status check_tree_arrays(xgb_ctx *c, uint32_t tree) {
    xgb_tree_in *t = &c->t;
    const struct { const char *name; int present; size_t n; } arrays[] = {
        {"left_children", t->left.present, t->left.n},
        {"right_children", t->right.present, t->right.n},
        {"split_indices", t->split_index.present, t->split_index.n},
        {"split_conditions", t->cond.present, t->cond.n},
        {"default_left", t->default_left.present, t->default_left.n},
    };
    if (t->size_leaf_vector > 1)
        return tree_fail(c, TS_ERR_UNSUPPORTED, tree,
                         "vector leaves (size_leaf_vector %lld, from multi_strategy=\"multi_output_tree\") are not "
                         "supported; train with multi_strategy=\"one_output_per_tree\" (the default)",
                         t->size_leaf_vector);
    if (t->num_nodes < 0) return tree_fail(c, TS_ERR_PARSE, tree, "no tree_param.num_nodes");
    if (t->num_nodes < 1 || t->num_nodes > 2 * (long long)TSM_MAX_LEAVES - 1)
        return tree_fail(c, TS_ERR_INVALID_MODEL, tree, "num_nodes %lld is out of range", t->num_nodes);
    for (size_t i = 0; i < sizeof arrays / sizeof arrays[0]; i++) {
        if (!arrays[i].present) return tree_fail(c, TS_ERR_PARSE, tree, "no %s array", arrays[i].name);
        if ((long long)arrays[i].n != t->num_nodes)
            return tree_fail(c, TS_ERR_PARSE, tree, "%s has %zu values, expected num_nodes = %lld", arrays[i].name,
                             arrays[i].n, t->num_nodes);
    }
    if (t->split_type.present) {
        if ((long long)t->split_type.n != t->num_nodes)
            return tree_fail(c, TS_ERR_PARSE, tree, "split_type has %zu values, expected num_nodes = %lld",
                             t->split_type.n, t->num_nodes);
        for (size_t i = 0; i < t->split_type.n; i++)
            if (t->split_type.v[i] != 0 && t->split_type.v[i] != 1 && t->left.v[i] != -1)
                return tree_fail(c, TS_ERR_UNSUPPORTED, tree, "node %zu: unknown split_type %d", i,
                                 (int)t->split_type.v[i]);
    }
    return TS_OK;
}

/* categories_nodes / _segments / _sizes / categories: consistent, and cat_of filled. */
static ts_status check_categories(xgb_ctx *c, uint32_t tree) {
    xgb_tree_in *t = &c->t;
    size_t n = (size_t)t->num_nodes, k = t->cat_nodes.n;
    for (size_t i = 0; i < n; i++) c->cat_of[i] = -1;
    if (t->cat_segments.n != k || t->cat_sizes.n != k)
        return tree_fail(c, TS_ERR_INVALID_MODEL, tree,
                         "categories_nodes, categories_segments and categories_sizes differ in length (%zu, %zu, %zu)",
                         k, t->cat_segments.n, t->cat_sizes.n);
    for (size_t i = 0; i < k; i++) {
        int32_t node = t->cat_nodes.v[i], seg = t->cat_segments.v[i], size = t->cat_sizes.v[i];
        if (node < 0 || (size_t)node >= n || t->left.v[node] == -1 || !t->split_type.present ||
            t->split_type.v[node] != 1)
            return tree_fail(c, TS_ERR_INVALID_MODEL, tree, "categories_nodes[%zu] = %d is not a categorical split node",
                             i, (int)node);
        if (c->cat_of[node] != -1)
            return tree_fail(c, TS_ERR_INVALID_MODEL, tree, "categories_nodes lists node %d twice", (int)node);
        if (seg < 0 || size < 0 || (size_t)seg + (size_t)size > t->cats.n)
            return tree_fail(c, TS_ERR_INVALID_MODEL, tree,
                             "node %d: categories segment [%d, +%d) is outside the %zu categories", (int)node, (int)seg,
                             (int)size, t->cats.n);
        for (int32_t j = seg; j < seg + size; j++)
            if (t->cats.v[j] < 0 || t->cats.v[j] >= (1 << 24))
                return tree_fail(c, TS_ERR_INVALID_MODEL, tree,
                                 "node %d: category %d is out of range (XGBoost's categories are 0 to 2^24 - 1)",
                                 (int)node, (int)t->cats.v[j]);
        c->cat_of[node] = (int32_t)i;
    }
    for (size_t i = 0; t->split_type.present && i < n; i++)
        if (t->split_type.v[i] == 1 && t->left.v[i] != -1 && c->seen[i] && c->cat_of[i] == -1)
            return tree_fail(c, TS_ERR_INVALID_MODEL, tree, "node %zu is a categorical split without categories", i);
    return TS_OK;
}

/* Node i's category set, added to the model; its index in *set. */
static ts_status add_node_catset(xgb_ctx *c, uint32_t tree, size_t i, uint32_t *set) {
    xgb_tree_in *t = &c->t;
    int32_t p = c->cat_of[i], seg = t->cat_segments.v[p], size = t->cat_sizes.v[p];
    uint32_t n_words = 0;
    for (int32_t j = seg; j < seg + size; j++)
        if ((uint32_t)t->cats.v[j] / 32 + 1 > n_words) n_words = (uint32_t)t->cats.v[j] / 32 + 1;
    if (n_words > c->words_cap) {
        uint32_t *w = realloc(c->words, n_words * sizeof *w);
        if (!w) return tsj_fail(&c->p, TS_ERR_NO_MEMORY, "out of memory");
        c->words = w;
        c->words_cap = n_words;
    }
    memset(c->words, 0, n_words * sizeof *c->words);
    for (int32_t j = seg; j < seg + size; j++) c->words[t->cats.v[j] / 32] |= 1u << (t->cats.v[j] % 32);
    ts_status st = tsm_model_add_catset(c->m, (uint32_t)t->split_index.v[i], TSM_CAT_XGBOOST,
                                        t->default_left.v[i] ? TSM_MISSING_LEFT : 0, c->words, n_words, set, c->err);
    if (st != TS_OK) {
        c->p.status = st;
        return tsio_locate(c->err, st, c->name, tsio_line_at(c->p.data, c->p.size, t->byte), t->byte);
    }
    (void)tree;
    return TS_OK;
}

/* Walk from the root: every node reached once (no cycle, no sharing); count what is
 * reached. Leaves are nodes with left_children == -1. */
static ts_status walk_tree(xgb_ctx *c, uint32_t tree, size_t *n_internal, size_t *n_leaves) {
    xgb_tree_in *t = &c->t;
    size_t n = (size_t)t->num_nodes, sp = 0, reached = 0;
    memset(c->seen, 0, n);
    *n_internal = *n_leaves = 0;
    c->stack[sp++] = 0;
    c->seen[0] = 1;
    while (sp > 0) {
        int32_t i = c->stack[--sp];
        reached++;
        if (t->left.v[i] == -1) {
            (*n_leaves)++;
            continue;
        }
        (*n_internal)++;
        int32_t kids[2] = {t->left.v[i], t->right.v[i]};
        for (int k = 0; k < 2; k++) {
            if (kids[k] < 0 || (size_t)kids[k] >= n)
                return tree_fail(c, TS_ERR_INVALID_MODEL, tree, "node %d has child %d, out of range", (int)i,
                                 (int)kids[k]);
            if (c->seen[kids[k]])
                return tree_fail(c, TS_ERR_INVALID_MODEL, tree,
                                 "node %d is reached twice (a cycle or a shared subtree, via node %d)", (int)kids[k],
                                 (int)i);
            c->seen[kids[k]] = 1;
            c->stack[sp++] = kids[k]; /* each node is pushed at most once: sp <= n */
        }
    }
    /* XGBoost's pruner leaves deleted nodes in the arrays, unreachable; num_deleted counts them. */
    if (n - reached > (size_t)t->num_deleted) {
        size_t first = 0;
        while (c->seen[first]) first++;
        return tree_fail(c, TS_ERR_INVALID_MODEL, tree, "node %zu is unreachable from the root (num_deleted %lld)",
                         first, t->num_deleted);
    }
    return TS_OK;
}

/* Renumber reachable nodes and add the tree to the model. */
static ts_status build_tree(xgb_ctx *c) {
    xgb_tree_in *t = &c->t;
    uint32_t tree = c->m->n_trees;
    size_t n_internal, n_leaves, n;
    TS_TRY(check_tree_arrays(c, tree));
    n = (size_t)t->num_nodes;
    TS_TRY(grow_scratch(c, n));
    TS_TRY(walk_tree(c, tree, &n_internal, &n_leaves));
    TS_TRY(check_categories(c, tree));
    int32_t next_node = 0, next_leaf = 0;
    for (size_t i = 0; i < n; i++) {
        if (!c->seen[i]) continue;
        if (t->left.v[i] == -1) {
            c->leaves[next_leaf] = (double)t->cond.v[i];
            c->newref[i] = ~next_leaf++;
        } else {
            c->newref[i] = next_node++;
        }
    }
    for (size_t i = 0; i < n; i++) {
        if (!c->seen[i] || t->left.v[i] == -1) continue;
        tsm_node *nd = &c->nodes[c->newref[i]];
        uint32_t feature = (uint32_t)t->split_index.v[i];
        if (feature >= TSM_MAX_FEATURES)
            return tree_fail(c, TS_ERR_LIMIT, tree, "node %zu splits on feature %u, beyond the limit %u", i, feature,
                             TSM_MAX_FEATURES - 1);
        nd->feature = feature;
        nd->left = c->newref[t->left.v[i]];
        nd->right = c->newref[t->right.v[i]];
        if (c->cat_of[i] >= 0) { /* categorical: the threshold names the set */
            uint32_t set;
            TS_TRY(add_node_catset(c, tree, i, &set));
            nd->threshold = (float)set;
            nd->flags = TSM_CATEGORICAL;
            continue;
        }
        if (t->cond.v[i] == -INFINITY) /* x < -inf sends nothing left: no x <= t says that */
            return tree_fail(c, TS_ERR_UNSUPPORTED, tree, "node %zu has the split condition -inf, which no value passes",
                             i);
        nd->threshold = tsm_threshold_lt_float(t->cond.v[i]);
        nd->flags = t->default_left.v[i] ? TSM_MISSING_LEFT : 0;
        nd->left = c->newref[t->left.v[i]];
        nd->right = c->newref[t->right.v[i]];
    }
    ts_status st = tsm_model_add_tree(c->m, (uint32_t)n_internal, c->nodes, (uint32_t)n_leaves, c->leaves, 1.0, c->err);
    if (st != TS_OK) {
        c->p.status = st;
        return tsio_locate(c->err, st, c->name, tsio_line_at(c->p.data, c->p.size, t->byte), t->byte);
    }
    if (tree >= c->tree_byte_cap) {
        size_t cap = c->tree_byte_cap ? c->tree_byte_cap * 2 : 64;
        size_t *p = realloc(c->tree_byte, cap * sizeof *p);
        if (!p) return tsj_fail(&c->p, TS_ERR_NO_MEMORY, "out of memory");
        c->tree_byte = p;
        c->tree_byte_cap = cap;
    }
    c->tree_byte[tree] = t->byte;
    return TS_OK;
}

/* ---- model structure -------------------------------------------------------------- */

static ts_status read_trees(xgb_ctx *c) {
    int has;
    if (c->trees_read) return tsj_fail(&c->p, TS_ERR_PARSE, "a second tree model (both 'model' and 'gbtree'?)");
    c->trees_read = 1;
    c->trees_byte = tsj_offset(&c->p);
    TS_TRY(tsj_array_begin(&c->p));
    while (tsj_array_next(&c->p, &has) == TS_OK && has) {
        TS_TRY(read_tree_object(c));
        TS_TRY(build_tree(c));
    }
    return c->p.status;
}

static ts_status read_model_param(xgb_ctx *c) {
    char key[TSJ_KEY_MAX];
    int has;
    TS_TRY(tsj_object_begin(&c->p));
    while (tsj_object_next(&c->p, key, &has) == TS_OK && has) {
        if (strcmp(key, "num_trees") == 0)
            TS_TRY(read_int(c, "num_trees", 0, TSM_MAX_TREES, &c->num_trees_param, &c->num_trees_byte));
        else
            TS_TRY(tsj_skip(&c->p));
    }
    return c->p.status;
}

/* gradient_booster.model (gbtree) or gradient_booster.gbtree.model (dart). */
static ts_status read_model(xgb_ctx *c) {
    char key[TSJ_KEY_MAX];
    int has;
    TS_TRY(tsj_object_begin(&c->p));
    while (tsj_object_next(&c->p, key, &has) == TS_OK && has) {
        if (strcmp(key, "trees") == 0) {
            TS_TRY(read_trees(c));
        } else if (strcmp(key, "tree_info") == 0) {
            c->tree_info_byte = tsj_offset(&c->p);
            TS_TRY(read_int_array(c, &c->tree_info, "tree_info", INT32_MIN, INT32_MAX));
        } else if (strcmp(key, "gbtree_model_param") == 0) {
            TS_TRY(read_model_param(c));
        } else {
            TS_TRY(tsj_skip(&c->p));
        }
    }
    return c->p.status;
}

/* dart: gradient_booster.gbtree = {"model": {...}, ...}. */
static ts_status read_dart_inner(xgb_ctx *c) {
    char key[TSJ_KEY_MAX];
    int has;
    TS_TRY(tsj_object_begin(&c->p));
    while (tsj_object_next(&c->p, key, &has) == TS_OK && has) {
        if (strcmp(key, "model") == 0)
            TS_TRY(read_model(c));
        else
            TS_TRY(tsj_skip(&c->p));
    }
    return c->p.status;
}

static ts_status read_booster(xgb_ctx *c) {
    char key[TSJ_KEY_MAX];
    int has;
    TS_TRY(tsj_object_begin(&c->p));
    while (tsj_object_next(&c->p, key, &has) == TS_OK && has) {
        if (strcmp(key, "name") == 0) {
            TS_TRY(read_string(c, c->booster, sizeof c->booster, &c->booster_byte));
        } else if (strcmp(key, "model") == 0) {
            TS_TRY(read_model(c));
        } else if (strcmp(key, "gbtree") == 0) {
            TS_TRY(read_dart_inner(c));
        } else if (strcmp(key, "weight_drop") == 0) {
            c->weight_drop_byte = tsj_offset(&c->p);
            TS_TRY(read_float_array(c, &c->weight_drop, "weight_drop"));
        } else {
            TS_TRY(tsj_skip(&c->p));
        }
    }
    return c->p.status;
}

static ts_status read_learner_param(xgb_ctx *c) {
    char key[TSJ_KEY_MAX];
    int has;
    TS_TRY(tsj_object_begin(&c->p));
    while (tsj_object_next(&c->p, key, &has) == TS_OK && has) {
        if (strcmp(key, "base_score") == 0) {
            tsj_type t;
            TS_TRY(tsj_peek(&c->p, &t));
            c->base_score_byte = tsj_offset(&c->p);
            if (t != TSJ_STRING) return tsj_fail(&c->p, TS_ERR_PARSE, "base_score: expected a string");
            TS_TRY(tsj_string_prefix(&c->p, c->base_score, sizeof c->base_score, &c->base_score_long));
            c->have_base_score = 1;
        } else if (strcmp(key, "num_feature") == 0)
            TS_TRY(read_int(c, "num_feature", 0, TSM_MAX_FEATURES, &c->num_feature, &c->num_feature_byte));
        else if (strcmp(key, "num_class") == 0)
            TS_TRY(read_int(c, "num_class", 0, TSM_MAX_OUTPUTS, &c->num_class, &c->num_class_byte));
        else if (strcmp(key, "num_target") == 0)
            TS_TRY(read_int(c, "num_target", 0, TSM_MAX_OUTPUTS, &c->num_target, &c->num_target_byte));
        else
            TS_TRY(tsj_skip(&c->p));
    }
    return c->p.status;
}

static ts_status read_objective(xgb_ctx *c) {
    char key[TSJ_KEY_MAX];
    int has;
    TS_TRY(tsj_object_begin(&c->p));
    while (tsj_object_next(&c->p, key, &has) == TS_OK && has) {
        if (strcmp(key, "name") == 0)
            TS_TRY(read_string(c, c->objective, sizeof c->objective, NULL));
        else
            TS_TRY(tsj_skip(&c->p));
    }
    return c->p.status;
}

/* learner.feature_names: ["a", "b", ...] (absent, or empty, when the data had none). */
static ts_status read_feature_names(xgb_ctx *c) {
    int has;
    char name[1024];
    TS_TRY(tsj_array_begin(&c->p));
    while (tsj_array_next(&c->p, &has) == TS_OK && has) {
        int truncated = 0;
        tsj_type t;
        TS_TRY(tsj_peek(&c->p, &t));
        if (t != TSJ_STRING) return tsj_fail(&c->p, TS_ERR_PARSE, "feature_names: expected strings");
        TS_TRY(tsj_string_prefix(&c->p, name, sizeof name, &truncated));
        TS_TRY(tsm_model_add_feature_name(c->m, name, strlen(name), c->err));
    }
    return c->p.status;
}

static ts_status read_learner(xgb_ctx *c) {
    char key[TSJ_KEY_MAX];
    int has;
    TS_TRY(tsj_object_begin(&c->p));
    while (tsj_object_next(&c->p, key, &has) == TS_OK && has) {
        if (strcmp(key, "learner_model_param") == 0)
            TS_TRY(read_learner_param(c));
        else if (strcmp(key, "objective") == 0)
            TS_TRY(read_objective(c));
        else if (strcmp(key, "gradient_booster") == 0)
            TS_TRY(read_booster(c));
        else if (strcmp(key, "feature_names") == 0)
            TS_TRY(read_feature_names(c));
        else
            TS_TRY(tsj_skip(&c->p));
    }
    return c->p.status;
}

static ts_status read_version(xgb_ctx *c) {
    xgb_ints v = {0};
    ts_status st = read_int_array(c, &v, "version", 0, INT32_MAX);
    for (size_t i = 0; st == TS_OK && i < v.n && i < 3; i++) c->version[i] = v.v[i];
    free(v.v);
    return st;
}

static ts_status read_root(xgb_ctx *c) {
    char key[TSJ_KEY_MAX];
    int has;
    tsj_type t;
    TS_TRY(tsj_peek(&c->p, &t));
    if (t != TSJ_OBJECT) return tsj_fail(&c->p, TS_ERR_PARSE, "expected a JSON object (an XGBoost model)");
    TS_TRY(tsj_object_begin(&c->p));
    while (tsj_object_next(&c->p, key, &has) == TS_OK && has) {
        if (strcmp(key, "learner") == 0)
            TS_TRY(read_learner(c));
        else if (strcmp(key, "version") == 0)
            TS_TRY(read_version(c));
        else
            TS_TRY(tsj_skip(&c->p));
    }
    TS_TRY(c->p.status);
    return tsj_end(&c->p);
}

/* ---- model-level checks ----------------------------------------------------------- */

static ts_status fail_at(xgb_ctx *c, ts_status st, size_t byte, const char *what) {
    return tsj_fail_at(&c->p, st, byte, "%s", what);
}

static ts_status check_booster(xgb_ctx *c) {
    char msg[160];
    if (!c->booster[0])
        return tsj_fail_at(&c->p, TS_ERR_PARSE, 0, "not an XGBoost JSON model: no learner.gradient_booster.name");
    if (strcmp(c->booster, "gblinear") == 0)
        return fail_at(c, TS_ERR_UNSUPPORTED, c->booster_byte, "gblinear (linear) boosters are not supported");
    if (strcmp(c->booster, "gbtree") != 0 && strcmp(c->booster, "dart") != 0) {
        snprintf(msg, sizeof msg, "gradient booster '%s' is not supported (gbtree and dart are)", c->booster);
        return fail_at(c, TS_ERR_UNSUPPORTED, c->booster_byte, msg);
    }
    if (c->num_class > 1 && c->num_target > 1) {
        snprintf(msg, sizeof msg, "num_class %lld and num_target %lld are both above 1: not supported",
                 c->num_class, c->num_target);
        return fail_at(c, TS_ERR_UNSUPPORTED, c->num_target_byte, msg);
    }
    if (c->num_class > (long long)TSM_MAX_OUTPUTS || c->num_target > (long long)TSM_MAX_OUTPUTS) {
        snprintf(msg, sizeof msg, "num_class %lld or num_target %lld is beyond the limit of %u outputs", c->num_class,
                 c->num_target, TSM_MAX_OUTPUTS);
        return fail_at(c, TS_ERR_LIMIT, c->num_class > 1 ? c->num_class_byte : c->num_target_byte, msg);
    }
    if (!c->trees_read) return tsj_fail_at(&c->p, TS_ERR_PARSE, c->booster_byte, "the booster has no trees array");
    return TS_OK;
}

static ts_status check_tree_lists(xgb_ctx *c) {
    char msg[160];
    uint32_t n = c->m->n_trees;
    if (c->num_trees_param >= 0 && c->num_trees_param != (long long)n) {
        snprintf(msg, sizeof msg, "num_trees is %lld but %u trees were read", c->num_trees_param, n);
        return fail_at(c, TS_ERR_PARSE, c->num_trees_byte, msg);
    }
    if (c->tree_info.present) {
        if (c->tree_info.n != n) {
            snprintf(msg, sizeof msg, "tree_info has %zu values for %u trees", c->tree_info.n, n);
            return fail_at(c, TS_ERR_PARSE, c->tree_info_byte, msg);
        }
        for (size_t i = 0; i < n; i++) {
            if (c->tree_info.v[i] < 0 || (uint32_t)c->tree_info.v[i] >= c->m->n_outputs) {
                snprintf(msg, sizeof msg, "tree %zu belongs to output %d, but the model has %u (num_class, num_target)",
                         i, (int)c->tree_info.v[i], c->m->n_outputs);
                return fail_at(c, TS_ERR_INVALID_MODEL, c->tree_info_byte, msg);
            }
            c->m->trees[i].output = (uint32_t)c->tree_info.v[i];
        }
    } else if (c->m->n_outputs > 1) {
        return fail_at(c, TS_ERR_PARSE, c->trees_byte, "a model of several outputs without tree_info");
    }
    if (strcmp(c->booster, "dart") == 0) {
        if (!c->weight_drop.present || c->weight_drop.n != n) {
            snprintf(msg, sizeof msg, "dart booster: weight_drop has %zu values for %u trees", c->weight_drop.n, n);
            return fail_at(c, TS_ERR_PARSE, c->weight_drop.present ? c->weight_drop_byte : c->booster_byte, msg);
        }
        for (uint32_t i = 0; i < n; i++) {
            if (!isfinite(c->weight_drop.v[i])) {
                snprintf(msg, sizeof msg, "dart booster: weight_drop[%u] is not finite", i);
                return fail_at(c, TS_ERR_INVALID_MODEL, c->weight_drop_byte, msg);
            }
            c->m->trees[i].weight = (double)c->weight_drop.v[i];
        }
    }
    return TS_OK;
}

static ts_status check_features(xgb_ctx *c) {
    if (c->num_feature < 0)
        return tsj_fail_at(&c->p, TS_ERR_PARSE, 0, "no learner.learner_model_param.num_feature");
    if (c->num_feature > (long long)TSM_MAX_FEATURES) {
        char msg[128];
        snprintf(msg, sizeof msg, "num_feature %lld is beyond the limit %u", c->num_feature, TSM_MAX_FEATURES);
        return fail_at(c, TS_ERR_LIMIT, c->num_feature_byte, msg);
    }
    c->m->n_features_declared = (uint32_t)c->num_feature;
    if (c->num_feature == 0) return TS_OK;
    for (uint32_t t = 0; t < c->m->n_trees; t++)
        for (uint32_t i = 0; i < c->m->trees[t].n_nodes; i++) {
            uint32_t f = c->m->trees[t].nodes[i].feature;
            if (f >= c->num_feature)
                return tsj_fail_at(&c->p, TS_ERR_INVALID_MODEL, c->tree_byte[t],
                                   "tree %u splits on feature %u, but num_feature is %lld", t, f, c->num_feature);
        }
    return TS_OK;
}

/* XGBoost's ObjFunction::ProbToMargin, computed in float as XGBoost does. */
static float prob_to_margin(const char *objective, float b, const long long version[3]) {
    static const char *const log_link[] = {"count:poisson", "reg:gamma", "reg:tweedie", "survival:cox",
                                           "survival:aft"};
    if (strcmp(objective, "binary:logistic") == 0 || strcmp(objective, "reg:logistic") == 0) {
        /* From 3.2 the intercept is clamped to [1e-6, 1 - 1e-6] first; before, values outside
         * (0, 1) were refused by XGBoost, so the clamp changes nothing for them. */
        if (version[0] > 3 || (version[0] == 3 && version[1] >= 2)) {
            const float eps = 1e-6f;
            b = b < eps ? eps : b;
            b = b > 1.0f - eps ? 1.0f - eps : b;
        }
        return -logf(1.0f / b - 1.0f);
    }
    for (size_t i = 0; i < sizeof log_link / sizeof log_link[0]; i++)
        if (strcmp(objective, log_link[i]) == 0) return logf(b);
    return b; /* identity: squared error, ranking, logitraw, hinge, quantile, ... */
}

/* One base_score value: parsed, turned into a margin; the model's output k gets it. */
static ts_status set_one_base(xgb_ctx *c, const char *s, size_t n, uint32_t k) {
    char msg[200];
    float b;
    tsio_trim(&s, &n);
    if (tsio_parse_float(s, n, &b) != 0 || !isfinite(b)) {
        char ex[64];
        tsio_excerpt(ex, sizeof ex, s, n);
        snprintf(msg, sizeof msg, "bad base_score value '%s'", ex);
        return fail_at(c, TS_ERR_PARSE, c->base_score_byte, msg);
    }
    /* XGBoost refuses a logistic intercept outside [0, 1] ("base_score must be in (0,1) for
     * the logistic loss"; from 3.2 the ends are clamped in, before they give an infinite
     * margin, refused below). */
    if ((strcmp(c->objective, "binary:logistic") == 0 || strcmp(c->objective, "reg:logistic") == 0) &&
        !(b >= 0.0f && b <= 1.0f)) {
        snprintf(msg, sizeof msg, "base_score %.9g is outside [0, 1], which XGBoost requires for objective '%s'",
                 (double)b, c->objective);
        return fail_at(c, TS_ERR_INVALID_MODEL, c->base_score_byte, msg);
    }
    float margin = prob_to_margin(c->objective, b, c->version);
    if (!isfinite(margin)) {
        snprintf(msg, sizeof msg, "base_score %.9g gives a non-finite margin for objective '%s'", (double)b,
                 c->objective);
        return fail_at(c, TS_ERR_INVALID_MODEL, c->base_score_byte, msg);
    }
    if (c->m->output_base) c->m->output_base[k] = (double)margin;
    c->m->base_score = k == 0 ? (double)margin : c->m->base_score;
    return TS_OK;
}

/* base_score: "0.5", "[5E-1]", or one value per output "[a,b,c]" (XGBoost 3.x); a single
 * value serves every output. */
static ts_status set_base_score(xgb_ctx *c) {
    char msg[160];
    const char *s = c->base_score;
    size_t n = strlen(s);
    uint32_t K = c->m->n_outputs, count = 1;
    if (!c->have_base_score) return tsj_fail_at(&c->p, TS_ERR_PARSE, 0, "no learner.learner_model_param.base_score");
    if (c->base_score_long) return fail_at(c, TS_ERR_LIMIT, c->base_score_byte, "base_score is too long");
    tsio_trim(&s, &n);
    if (n >= 2 && s[0] == '[' && s[n - 1] == ']') {
        s++;
        n -= 2;
    }
    for (size_t i = 0; i < n; i++) count += s[i] == ',';
    if (count != 1 && count != K) {
        snprintf(msg, sizeof msg, "base_score has %u values for a model of %u outputs", count, K);
        return fail_at(c, TS_ERR_INVALID_MODEL, c->base_score_byte, msg);
    }
    for (uint32_t k = 0; k < count; k++) {
        const char *comma = memchr(s, ',', n);
        size_t len = comma ? (size_t)(comma - s) : n;
        TS_TRY(set_one_base(c, s, len, k));
        s += len + (comma ? 1 : 0);
        n -= len + (comma ? 1 : 0);
    }
    for (uint32_t k = 1; count == 1 && k < K; k++) c->m->output_base[k] = c->m->output_base[0];
    return TS_OK;
}

/* XGBoost adds the base score and every tree's leaf in float32; treescore in double.
 * Where |base| + the sum over the trees of their largest |weight * leaf| can pass
 * FLT_MAX (less a margin for float32 rounding), XGBoost's margin may be inf where
 * treescore's is finite: refused (no trained model comes near). */
static ts_status check_float32_range(xgb_ctx *c) {
    const ts_model *m = c->m;
    uint32_t K = m->n_outputs > 1 ? m->n_outputs : 1;
    for (uint32_t k = 0; k < K; k++) {
        double bound = fabs(m->output_base ? m->output_base[k] : m->base_score);
        size_t byte = 0;
        for (uint32_t t = 0; t < m->n_trees; t++) {
            const tsm_tree *tr = &m->trees[t];
            if (tr->output != k) continue;
            if (!byte && t < c->tree_byte_cap) byte = c->tree_byte[t];
            double big = 0;
            for (uint32_t l = 0; l < tr->n_leaves; l++) big = fmax(big, fabs(tr->weight * tr->leaf_values[l]));
            bound += big;
        }
        if (bound > 0.999 * FLT_MAX)
            return tsj_fail_at(&c->p, TS_ERR_UNSUPPORTED, byte, "output %u: the base score and the trees' "
                               "largest leaves add up to %.6g in magnitude, past float32's range: XGBoost sums the "
                               "margin in float32 and can reach inf where treescore's double sum does not; not "
                               "supported", k, bound);
    }
    return TS_OK;
}

static ts_status finish(xgb_ctx *c) {
    TS_TRY(check_booster(c));
    long long k = c->num_class > 1 ? c->num_class : c->num_target > 1 ? c->num_target : 1;
    if (k > 1) TS_TRY(tsm_model_set_outputs(c->m, (uint32_t)k, c->err));
    TS_TRY(check_tree_lists(c));
    TS_TRY(check_features(c));
    if (c->m->n_feature_names && c->num_feature > 0 && c->m->n_feature_names != (uint32_t)c->num_feature)
        /* the model layer keeps names only when there is one per feature: say so (no header check) */
        tsr_note(TSR_NOTE_WARN,
                 "treescore: warning: %s: feature_names lists %u names but num_feature is %lld: the names are "
                 "ignored (no header check)", c->name, c->m->n_feature_names, c->num_feature);
    TS_TRY(set_base_score(c));
    TS_TRY(check_float32_range(c));
    memcpy(c->m->objective, c->objective, sizeof c->m->objective);
    c->m->objective[sizeof c->m->objective - 1] = '\0';
    return tsio_finish_located(c->m, c->name, c->p.data, c->p.size, c->tree_byte, c->err);
}

static void free_ctx(xgb_ctx *c) {
    free(c->t.left.v);
    free(c->t.right.v);
    free(c->t.split_index.v);
    free(c->t.split_type.v);
    free(c->t.default_left.v);
    free(c->t.cond.v);
    free(c->t.cats.v);
    free(c->t.cat_nodes.v);
    free(c->t.cat_segments.v);
    free(c->t.cat_sizes.v);
    free(c->cat_of);
    free(c->words);
    free(c->stack);
    free(c->newref);
    free(c->seen);
    free(c->nodes);
    free(c->leaves);
    free(c->tree_byte);
    free(c->tree_info.v);
    free(c->weight_drop.v);
}

ts_status tsio_load_xgboost_json(const char *data, size_t size, const char *name, ts_model **out, ts_error *err) {
    xgb_ctx *c = calloc(1, sizeof *c);
    *out = NULL;
    if (!name) name = "<buffer>";
    if (!c) return ts_fail(err, TS_ERR_NO_MEMORY, "%s: out of memory", name);
    c->name = name;
    c->err = err;
    c->num_feature = c->num_class = c->num_target = c->num_trees_param = -1;
    tsj_init(&c->p, data, size, tsio_skip_bom(data, size), name, err);
    c->m = tsm_model_new(TS_FORMAT_XGBOOST_JSON);
    ts_status st;
    if (!c->m)
        st = ts_fail(err, TS_ERR_NO_MEMORY, "%s: out of memory", name);
    else if (tsu_looks_like_ubjson(data, size))
        st = tsj_fail_at(&c->p, TS_ERR_UNSUPPORTED, 0,
                         "this is XGBoost's binary UBJSON format: load it as xgboost-ubjson (or auto)");
    else
        st = read_root(c);
    if (st == TS_OK) st = finish(c);
    if (st != TS_OK) {
        ts_model_free(c->m);
    } else {
        *out = c->m;
    }
    free_ctx(c);
    free(c);
    return st;
}

/* ---- the UBJSON form (Booster.save_model("m.ubj")): transcoded to JSON (ubjson.c) -- */

ts_status tsio_load_xgboost_ubjson(const char *data, size_t size, const char *name, ts_model **out, ts_error *err) {
    tsu_json j;
    *out = NULL;
    if (!name) name = "<buffer>";
    if (!tsu_looks_like_ubjson(data, size))
        return ts_fail_at(err, TS_ERR_PARSE, 0, 0,
                          "%s: byte 0: not an XGBoost UBJSON model (expected '{' followed by a UBJSON key)", name);
    TS_TRY(tsu_to_json(data, size, name, &j, err));
    ts_status st = tsio_load_xgboost_json(j.text, j.size, name, out, err);
    if (st == TS_OK)
        (*out)->format = TS_FORMAT_XGBOOST_UBJSON;
    else if (err) /* the JSON loader's error, at a byte of the JSON text: at the UBJSON byte it came from */
        tsio_relocate_byte(err, st, name, err->byte ? tsu_ubj_offset(&j, (size_t)err->byte) : 0);
    tsu_json_free(&j);
    return st;
}
