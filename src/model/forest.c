/* forest.c: building, validating, canonicalizing and describing the forest IR. */
#include "model/forest.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/error.h"

_Static_assert(sizeof(float) == 4, "treescore needs IEEE-754 binary32 floats");
_Static_assert(TSM_MAX_LEAVES <= (uint32_t)INT32_MAX, "leaf references must fit int32");

ts_model *tsm_model_new(ts_model_format format) {
    ts_model *m = calloc(1, sizeof *m);
    if (!m) return NULL;
    m->format = format;
    m->absent_value = format == TS_FORMAT_XGBOOST_JSON ? NAN : 0.0f;
    m->compares_double = format == TS_FORMAT_LIGHTGBM;
    m->n_outputs = 1;
    return m;
}

void ts_model_free(ts_model *m) {
    if (!m) return;
    for (uint32_t i = 0; i < m->n_trees; i++) {
        free(m->trees[i].nodes);
        free(m->trees[i].leaf_values);
        free(m->trees[i].thresholds_d);
    }
    free(m->trees);
    for (uint32_t i = 0; i < m->n_feature_names; i++) free(m->feature_names[i]);
    free(m->feature_names);
    free(m->output_base);
    free(m->catsets);
    free(m->cat_words);
    free(m->catset_slots);
    for (uint32_t i = 0; i < m->n_catmaps; i++) free(m->catmaps[i].hashes);
    free(m->catmaps);
    tsm_model_free_derived(m);
    free(m);
}

ts_status tsm_model_add_feature_name(ts_model *m, const char *name, size_t len, ts_error *err) {
    if (m->n_feature_names >= TSM_MAX_FEATURES)
        return ts_fail(err, TS_ERR_LIMIT, "more than %u feature names", TSM_MAX_FEATURES);
    if ((m->n_feature_names & (m->n_feature_names - 1)) == 0) { /* grow at powers of two */
        size_t cap = m->n_feature_names ? 2 * (size_t)m->n_feature_names : 1;
        char **p = realloc(m->feature_names, cap * sizeof *p);
        if (!p) return ts_fail(err, TS_ERR_NO_MEMORY, "out of memory");
        m->feature_names = p;
    }
    char *s = malloc(len + 1);
    if (!s) return ts_fail(err, TS_ERR_NO_MEMORY, "out of memory");
    memcpy(s, name, len);
    s[len] = '\0';
    m->feature_names[m->n_feature_names++] = s;
    return TS_OK;
}

const char *ts_model_feature_name(const ts_model *m, uint32_t i) {
    return m && i < m->n_feature_names ? m->feature_names[i] : NULL;
}

float ts_model_absent_value(const ts_model *m) { return m ? m->absent_value : 0.0f; }

/* ---- thresholds ------------------------------------------------------------------- */

float tsm_threshold_le_double(double t) {
    float f = (float)t; /* round to nearest; may round up past t */
    if ((double)f > t) f = nextafterf(f, -INFINITY);
    return f;
}

float tsm_threshold_lt_float(float t) { return nextafterf(t, -INFINITY); }

float tsm_threshold_lightgbm(double t) {
    float f = tsm_threshold_le_double(t);
    /* Only thresholds landing inside the snapped range need care: there every x in
     * [-Z, Z] behaves as 0.0, so the whole range is left (0 <= t) or right. */
    if (f >= -TSM_ZERO_RANGE && f <= TSM_ZERO_RANGE) {
        if (0.0 <= t) return TSM_ZERO_RANGE;
        return nextafterf(-TSM_ZERO_RANGE, -INFINITY);
    }
    return f;
}

/* ---- traversal -------------------------------------------------------------------- */

uint32_t tsm_tree_exit_leaf(const tsm_tree *tree, const float *row) {
    int32_t c = 0;
    if (tree->n_nodes == 0) return 0;
    while (c >= 0) {
        const tsm_node *n = &tree->nodes[c];
        c = tsm_node_goes_left(n, row[n->feature]) ? n->left : n->right;
    }
    return (uint32_t)~c;
}

/* ---- adding a tree ---------------------------------------------------------------- */

/* Renumbering state for one tree: an explicit stack replaces recursion so a degenerate
 * deep tree (a chain of 1e6 nodes) cannot overflow the C stack. */
typedef struct canon_ctx {
    const tsm_node *in;
    uint32_t n_nodes, n_leaves;
    uint8_t *node_seen, *leaf_seen;
    tsm_node *out;
    double *out_leaves;
    const double *in_leaves;
    const double *in_thr_d;  /* optional: double thresholds, permuted like the nodes */
    double *out_thr_d;
    uint32_t next_node, next_leaf, depth;
} canon_ctx;

typedef struct canon_frame {
    int32_t in_ref;      /* child reference in the input numbering */
    int32_t *out_slot;   /* where to store the new reference (NULL for the root) */
    uint32_t depth;
} canon_frame;

static ts_status visit(canon_ctx *c, canon_frame f, canon_frame *stack, uint32_t *sp, uint32_t tree_idx,
                       ts_error *err) {
    if (f.depth > c->depth) c->depth = f.depth;
    if (f.in_ref < 0) {
        uint32_t leaf = (uint32_t)~f.in_ref;
        if (leaf >= c->n_leaves)
            return ts_fail(err, TS_ERR_INVALID_MODEL, "tree %u: reference to leaf %u, but the tree has %u leaves",
                           tree_idx, leaf, c->n_leaves);
        if (c->leaf_seen[leaf])
            return ts_fail(err, TS_ERR_INVALID_MODEL, "tree %u: leaf %u is reached twice", tree_idx, leaf);
        c->leaf_seen[leaf] = 1;
        c->out_leaves[c->next_leaf] = c->in_leaves[leaf];
        if (f.out_slot) *f.out_slot = ~(int32_t)c->next_leaf;
        c->next_leaf++;
        return TS_OK;
    }
    uint32_t node = (uint32_t)f.in_ref;
    if (node >= c->n_nodes)
        return ts_fail(err, TS_ERR_INVALID_MODEL, "tree %u: reference to node %u, but the tree has %u nodes",
                       tree_idx, node, c->n_nodes);
    if (c->node_seen[node])
        return ts_fail(err, TS_ERR_INVALID_MODEL, "tree %u: node %u is reached twice (a cycle or a shared subtree)",
                       tree_idx, node);
    c->node_seen[node] = 1;
    const tsm_node *src = &c->in[node];
    if (src->threshold != src->threshold)
        return ts_fail(err, TS_ERR_INVALID_MODEL, "tree %u: node %u has a NaN threshold", tree_idx, node);
    if ((src->flags & TSM_CATEGORICAL)  ? src->flags != TSM_CATEGORICAL
        : (src->flags & TSM_DERIVED) ? src->flags != (TSM_DERIVED | TSM_MISSING_LEFT)
                                     : (src->flags & ~TSM_NODE_FLAGS_ALL) != 0)
        return ts_fail(err, TS_ERR_INVALID_MODEL, "tree %u: node %u has unknown flags 0x%x", tree_idx, node,
                       (unsigned)src->flags);
    if (src->feature >= TSM_MAX_FEATURES)
        return ts_fail(err, TS_ERR_INVALID_MODEL, "tree %u: node %u uses feature %u (limit %u)", tree_idx, node,
                       src->feature, TSM_MAX_FEATURES - 1);
    uint32_t me = c->next_node++;
    c->out[me] = *src;
    if (c->out_thr_d) c->out_thr_d[me] = c->in_thr_d[node];
    if (f.out_slot) *f.out_slot = (int32_t)me;
    /* Push right first so the left subtree is numbered first (preorder, leaves in order). */
    stack[(*sp)++] = (canon_frame){src->right, &c->out[me].right, f.depth + 1};
    stack[(*sp)++] = (canon_frame){src->left, &c->out[me].left, f.depth + 1};
    return TS_OK;
}

static ts_status canonicalize(canon_ctx *c, uint32_t tree_idx, ts_error *err) {
    /* Each visited node pushes 2 frames and pops 1, so the stack never exceeds n_nodes + 2. */
    canon_frame *stack = malloc(((size_t)c->n_nodes + 2) * sizeof *stack);
    if (!stack) return ts_fail(err, TS_ERR_NO_MEMORY, "tree %u: out of memory", tree_idx);
    uint32_t sp = 0;
    ts_status st = TS_OK;
    stack[sp++] = (canon_frame){c->n_nodes ? 0 : ~0, NULL, 0};
    while (sp > 0 && st == TS_OK) {
        canon_frame f = stack[--sp];
        st = visit(c, f, stack, &sp, tree_idx, err);
    }
    free(stack);
    if (st != TS_OK) return st;
    if (c->next_node != c->n_nodes || c->next_leaf != c->n_leaves)
        return ts_fail(err, TS_ERR_INVALID_MODEL, "tree %u: %u of %u nodes and %u of %u leaves are unreachable",
                       tree_idx, c->n_nodes - c->next_node, c->n_nodes, c->n_leaves - c->next_leaf, c->n_leaves);
    return TS_OK;
}

static ts_status grow_trees(ts_model *m, ts_error *err) {
    if (m->n_trees < m->trees_capacity) return TS_OK;
    if (m->n_trees >= TSM_MAX_TREES)
        return ts_fail(err, TS_ERR_LIMIT, "more than %u trees", TSM_MAX_TREES);
    uint32_t cap = m->trees_capacity ? m->trees_capacity * 2 : 64;
    tsm_tree *t = realloc(m->trees, (size_t)cap * sizeof *t);
    if (!t) return ts_fail(err, TS_ERR_NO_MEMORY, "out of memory adding tree %u", m->n_trees);
    m->trees = t;
    m->trees_capacity = cap;
    return TS_OK;
}

ts_status tsm_model_add_tree(ts_model *m, uint32_t n_nodes, const tsm_node *nodes, uint32_t n_leaves,
                             const double *leaf_values, double weight, ts_error *err) {
    return tsm_model_add_tree_d(m, n_nodes, nodes, NULL, n_leaves, leaf_values, weight, err);
}

ts_status tsm_model_add_tree_d(ts_model *m, uint32_t n_nodes, const tsm_node *nodes, const double *thresholds_d,
                               uint32_t n_leaves, const double *leaf_values, double weight, ts_error *err) {
    uint32_t idx = m->n_trees;
    if (n_leaves == 0 || n_leaves > TSM_MAX_LEAVES)
        return ts_fail(err, TS_ERR_INVALID_MODEL, "tree %u: %u leaves (must be 1 to %u)", idx, n_leaves,
                       TSM_MAX_LEAVES);
    if (n_leaves != n_nodes + 1)
        return ts_fail(err, TS_ERR_INVALID_MODEL, "tree %u: %u internal nodes but %u leaves (a binary tree has one more leaf than nodes)",
                       idx, n_nodes, n_leaves);
    for (uint32_t i = 0; i < n_leaves; i++)
        if (!isfinite(leaf_values[i]))
            return ts_fail(err, TS_ERR_INVALID_MODEL, "tree %u: leaf %u has a non-finite value", idx, i);
    if (!isfinite(weight))
        return ts_fail(err, TS_ERR_INVALID_MODEL, "tree %u: non-finite weight", idx);
    TS_TRY(grow_trees(m, err));

    canon_ctx c = {0};
    c.in = nodes;
    c.in_leaves = leaf_values;
    c.n_nodes = n_nodes;
    c.n_leaves = n_leaves;
    c.node_seen = calloc((size_t)n_nodes + 1, 1);
    c.leaf_seen = calloc(n_leaves, 1);
    c.out = n_nodes ? malloc((size_t)n_nodes * sizeof *c.out) : NULL;
    c.out_leaves = malloc((size_t)n_leaves * sizeof *c.out_leaves);
    c.in_thr_d = thresholds_d;
    c.out_thr_d = thresholds_d && n_nodes ? malloc((size_t)n_nodes * sizeof *c.out_thr_d) : NULL;
    ts_status st = TS_OK;
    if (!c.node_seen || !c.leaf_seen || (n_nodes && !c.out) || !c.out_leaves || (thresholds_d && n_nodes && !c.out_thr_d))
        st = ts_fail(err, TS_ERR_NO_MEMORY, "tree %u: out of memory", idx);
    else
        st = canonicalize(&c, idx, err);
    free(c.node_seen);
    free(c.leaf_seen);
    if (st != TS_OK) {
        free(c.out);
        free(c.out_leaves);
        free(c.out_thr_d);
        return st;
    }
    tsm_tree *t = &m->trees[m->n_trees++];
    t->n_nodes = n_nodes;
    t->n_leaves = n_leaves;
    t->depth = c.depth;
    t->weight = weight;
    t->nodes = c.out;
    t->leaf_values = c.out_leaves;
    t->thresholds_d = c.out_thr_d;
    t->output = 0;
    return TS_OK;
}

/* ---- category sets and outputs ---------------------------------------------------- */

static uint32_t catset_hash(uint32_t feature, uint32_t rule, uint32_t flags, const uint32_t *w, uint32_t n) {
    uint32_t h = 2166136261u, head[4] = {feature, rule, flags, n};
    for (int i = 0; i < 4; i++) h = (h ^ head[i]) * 16777619u;
    for (uint32_t i = 0; i < n; i++) h = (h ^ w[i]) * 16777619u;
    return h;
}

static ts_status grow_catsets(ts_model *m, uint32_t n_words, ts_error *err) {
    if (m->n_catsets >= TSM_MAX_CATSETS)
        return ts_fail(err, TS_ERR_LIMIT, "more than %u distinct category sets", TSM_MAX_CATSETS);
    if (m->n_catsets == m->catsets_capacity) {
        uint32_t cap = m->catsets_capacity ? 2 * m->catsets_capacity : 16;
        tsm_catset *p = realloc(m->catsets, (size_t)cap * sizeof *p);
        if (!p) return ts_fail(err, TS_ERR_NO_MEMORY, "out of memory for category sets");
        m->catsets = p;
        m->catsets_capacity = cap;
    }
    if (m->n_cat_words + n_words > m->cat_words_capacity) {
        size_t cap = m->cat_words_capacity ? 2 * m->cat_words_capacity : 64;
        while (cap < m->n_cat_words + n_words) cap *= 2;
        uint32_t *p = realloc(m->cat_words, cap * sizeof *p);
        if (!p) return ts_fail(err, TS_ERR_NO_MEMORY, "out of memory for category sets");
        m->cat_words = p;
        m->cat_words_capacity = cap;
    }
    return TS_OK;
}

void tsm_catsets_changed(ts_model *m) {
    if (m) m->catset_indexed = UINT32_MAX;
}

static void index_insert(ts_model *m, uint32_t i) {
    uint32_t mask = m->n_catset_slots - 1, j = m->catsets[i].hash & mask;
    while (m->catset_slots[j]) j = (j + 1) & mask;
    m->catset_slots[j] = i + 1;
}

/* Makes the index hold every set, with room for one more at a load of at most 1/2: a
 * load of many distinct sets (a LightGBM model with categorical splits in thousands of
 * trees, up to TSM_MAX_CATSETS) then costs O(1) per set, not a scan of all earlier sets. */
static ts_status index_ready(ts_model *m, ts_error *err) {
    uint32_t need = m->n_catsets + 1;
    if (m->catset_indexed == m->n_catsets && (uint64_t)need * 2 <= m->n_catset_slots) return TS_OK;
    uint32_t slots = m->n_catset_slots >= 64 ? m->n_catset_slots : 64;
    while ((uint64_t)need * 2 > slots) slots *= 2;
    if (slots != m->n_catset_slots) {
        uint32_t *p = realloc(m->catset_slots, (size_t)slots * sizeof *p);
        if (!p) return ts_fail(err, TS_ERR_NO_MEMORY, "out of memory for category sets");
        m->catset_slots = p;
        m->n_catset_slots = slots;
    }
    memset(m->catset_slots, 0, (size_t)slots * sizeof *m->catset_slots);
    for (uint32_t i = 0; i < m->n_catsets; i++) index_insert(m, i);
    m->catset_indexed = m->n_catsets;
    return TS_OK;
}

ts_status tsm_model_add_catset(ts_model *m, uint32_t feature, uint32_t rule, uint32_t flags, const uint32_t *words,
                               uint32_t n_words, uint32_t *index, ts_error *err) {
    if (rule != TSM_CAT_LIGHTGBM && rule != TSM_CAT_XGBOOST && rule != TSM_CAT_EXACT)
        return ts_fail(err, TS_ERR_INVALID_ARGUMENT, "unknown category rule %u", rule);
    if (feature >= TSM_MAX_FEATURES)
        return ts_fail(err, TS_ERR_LIMIT, "a categorical split on feature %u (limit %u)", feature, TSM_MAX_FEATURES - 1);
    while (n_words > 0 && words[n_words - 1] == 0) n_words--;
    flags &= TSM_MISSING_LEFT;
    uint32_t h = catset_hash(feature, rule, flags, words, n_words);
    TS_TRY(index_ready(m, err));
    const uint32_t mask = m->n_catset_slots - 1;
    for (uint32_t j = h & mask; m->catset_slots[j]; j = (j + 1) & mask) {
        const uint32_t i = m->catset_slots[j] - 1;
        const tsm_catset *c = &m->catsets[i];
        if (c->hash == h && c->feature == feature && c->rule == rule && c->flags == flags && c->n_words == n_words &&
            (n_words == 0 || memcmp(m->cat_words + c->word0, words, n_words * sizeof *words) == 0)) {
            *index = i;
            return TS_OK;
        }
    }
    TS_TRY(grow_catsets(m, n_words, err));
    tsm_catset *c = &m->catsets[m->n_catsets];
    *c = (tsm_catset){feature, rule, flags, n_words, (uint32_t)m->n_cat_words, h};
    if (n_words) memcpy(m->cat_words + m->n_cat_words, words, n_words * sizeof *words);
    m->n_cat_words += n_words;
    *index = m->n_catsets++;
    index_insert(m, *index);
    m->catset_indexed = m->n_catsets;
    return TS_OK;
}

int tsm_catset_goes_left(const ts_model *m, const tsm_catset *c, double v) {
    const uint32_t *w = m->cat_words + c->word0;
    if (c->rule == TSM_CAT_LIGHTGBM) {
        /* NaN, v <= -1 (int < 0) and v >= 2^31 (the cast gives INT_MIN) go right. */
        if (!(v > -1.0) || v >= 2147483648.0) return 0;
        uint32_t cat = (uint32_t)v;
        return cat / 32 < c->n_words && ((w[cat / 32] >> (cat % 32)) & 1u);
    }
    if (v != v) return (c->flags & TSM_MISSING_LEFT) != 0;
    if (v < 0.0 || v >= 16777216.0) return 1; /* XGBoost's invalid categories go left */
    uint32_t cat = (uint32_t)v;
    if (c->rule == TSM_CAT_EXACT && (double)cat != v) return 1; /* 2.5: no category */
    return !(cat / 32 < c->n_words && ((w[cat / 32] >> (cat % 32)) & 1u));
}

ts_status tsm_model_set_outputs(ts_model *m, uint32_t k, ts_error *err) {
    if (k == 0 || k > TSM_MAX_OUTPUTS)
        return ts_fail(err, TS_ERR_LIMIT, "%u outputs per row (1 to %u are supported)", k, TSM_MAX_OUTPUTS);
    double *b = calloc(k, sizeof *b);
    if (!b) return ts_fail(err, TS_ERR_NO_MEMORY, "out of memory for %u outputs", k);
    free(m->output_base);
    m->output_base = b;
    m->n_outputs = k;
    return TS_OK;
}

/* Copy tree t into v, with categorical nodes on derived columns (see tsm_model_view). */
static ts_status view_tree(const ts_model *m, const tsm_tree *t, tsm_tree *v) {
    *v = *t;
    v->nodes = NULL;
    v->thresholds_d = NULL;
    if (t->n_nodes == 0) return TS_OK;
    v->nodes = malloc((size_t)t->n_nodes * sizeof *v->nodes);
    if (t->thresholds_d) v->thresholds_d = malloc((size_t)t->n_nodes * sizeof *v->thresholds_d);
    if (!v->nodes || (t->thresholds_d && !v->thresholds_d)) return TS_ERR_NO_MEMORY;
    memcpy(v->nodes, t->nodes, (size_t)t->n_nodes * sizeof *v->nodes);
    if (t->thresholds_d) memcpy(v->thresholds_d, t->thresholds_d, (size_t)t->n_nodes * sizeof *v->thresholds_d);
    for (uint32_t i = 0; i < t->n_nodes; i++) {
        tsm_node *n = &v->nodes[i];
        if (n->flags & TSM_DERIVED) {
            n->feature = m->n_features + n->feature;
            n->flags = TSM_MISSING_LEFT;
            continue;
        }
        if (!(n->flags & TSM_CATEGORICAL)) continue;
        n->feature = m->n_features + m->n_derived + (uint32_t)n->threshold;
        n->threshold = 0.5f;
        n->flags = 0;
        if (v->thresholds_d) v->thresholds_d[i] = 0.5;
    }
    return TS_OK;
}

void tsm_view_free(ts_model *v) {
    if (!v) return;
    for (uint32_t i = 0; i < v->n_trees; i++) {
        free(v->trees[i].nodes);
        free(v->trees[i].thresholds_d);
    }
    free(v->trees);
    free(v);
}

ts_status tsm_model_view(const ts_model *m, uint32_t k, ts_model **out, ts_error *err) {
    *out = NULL;
    ts_model *v = calloc(1, sizeof *v);
    if (!v) return ts_fail(err, TS_ERR_NO_MEMORY, "out of memory preparing output %u", k);
    v->format = m->format;
    v->n_features = m->n_features + m->n_derived + m->n_catsets;
    v->base_score = m->output_base ? m->output_base[k] : m->base_score;
    v->average_output = m->average_output;
    v->absent_value = m->absent_value;
    v->compares_double = m->compares_double;
    memcpy(v->objective, m->objective, sizeof v->objective);
    v->n_outputs = 1;
    uint32_t n = 0;
    for (uint32_t t = 0; t < m->n_trees; t++) n += m->trees[t].output == k;
    v->trees = calloc((size_t)n + 1, sizeof *v->trees);
    if (!v->trees) {
        free(v);
        return ts_fail(err, TS_ERR_NO_MEMORY, "out of memory preparing output %u", k);
    }
    v->trees_capacity = n + 1;
    for (uint32_t t = 0; t < m->n_trees; t++) {
        if (m->trees[t].output != k) continue;
        if (view_tree(m, &m->trees[t], &v->trees[v->n_trees++]) != TS_OK) {
            tsm_view_free(v);
            return ts_fail(err, TS_ERR_NO_MEMORY, "out of memory preparing output %u", k);
        }
    }
    *out = v;
    return TS_OK;
}

/* ---- finishing -------------------------------------------------------------------- */

/* Outputs and category-set references of every tree and node. */
static ts_status check_outputs_and_catsets(const ts_model *m, ts_error *err) {
    for (uint32_t t = 0; t < m->n_trees; t++) {
        if (m->trees[t].output >= m->n_outputs)
            return ts_fail(err, TS_ERR_INVALID_MODEL, "tree %u adds to output %u, but the model has %u", t,
                           m->trees[t].output, m->n_outputs);
        for (uint32_t i = 0; i < m->trees[t].n_nodes; i++) {
            const tsm_node *n = &m->trees[t].nodes[i];
            if ((n->flags & TSM_DERIVED) && n->feature >= m->n_derived)
                return ts_fail(err, TS_ERR_INVALID_MODEL, "tree %u node %u: derived column %u of %u", t, i, n->feature,
                               m->n_derived);
            if (!(n->flags & TSM_CATEGORICAL)) continue;
            float j = n->threshold;
            if (!(j >= 0) || j >= (float)m->n_catsets || j != (float)(uint32_t)j ||
                m->catsets[(uint32_t)j].feature != n->feature)
                return ts_fail(err, TS_ERR_INVALID_MODEL, "tree %u node %u: bad category set reference", t, i);
        }
    }
    return TS_OK;
}

/* The derived columns' tables read input columns and catmaps the model has. */
static ts_status check_derived(const ts_model *m, ts_error *err) {
    if (m->n_derived && m->compares_double)
        return ts_fail(err, TS_ERR_INVALID_MODEL, "derived columns in a model that compares doubles");
    for (uint32_t i = 0; i < m->n_ctrtabs; i++) {
        const tsm_ctrtab *t = &m->ctrtabs[i];
        if (t->first > m->n_derived || t->count > m->n_derived - t->first)
            return ts_fail(err, TS_ERR_INVALID_MODEL, "CTR table %u: derived columns out of range", i);
        for (uint32_t e = 0; e < t->n_elems; e++) {
            const tsm_elem *x = &t->elems[e];
            if (x->column >= m->n_features || (x->kind != TSM_ELEM_FLOAT && (x->catmap >= m->n_catmaps ||
                                                                             m->catmaps[x->catmap].feature != x->column)))
                return ts_fail(err, TS_ERR_INVALID_MODEL, "CTR table %u: element %u reads column %u, outside the model's "
                               "%u columns or not a categorical column", i, e, x->column, m->n_features);
        }
    }
    for (uint32_t d = 0; d < m->n_derived; d++) {
        uint32_t t = m->derived[d].tab;
        if (t >= m->n_ctrtabs || d < m->ctrtabs[t].first || d - m->ctrtabs[t].first >= m->ctrtabs[t].count)
            return ts_fail(err, TS_ERR_INVALID_MODEL, "derived column %u: bad table %u", d, t);
    }
    return TS_OK;
}

ts_status tsm_model_finish(ts_model *m, ts_error *err) {
    uint32_t max_feature_plus1 = 0;
    if (m->n_outputs == 0) m->n_outputs = 1;
    TS_TRY(check_outputs_and_catsets(m, err));
    if (m->output_base) m->base_score = m->output_base[0];
    for (uint32_t t = 0; t < m->n_trees; t++)
        for (uint32_t i = 0; i < m->trees[t].n_nodes; i++) {
            uint32_t f = m->trees[t].nodes[i].feature;
            if (m->trees[t].nodes[i].flags & TSM_DERIVED) continue; /* checked above */
            if (m->n_features_declared && f >= m->n_features_declared)
                return ts_fail(err, TS_ERR_INVALID_MODEL,
                               "tree %u node %u uses feature %u, but the model declares %u features", t, i, f,
                               m->n_features_declared);
            if (f + 1 > max_feature_plus1) max_feature_plus1 = f + 1;
        }
    m->n_features = max_feature_plus1 > m->n_features_declared ? max_feature_plus1 : m->n_features_declared;
    TS_TRY(check_derived(m, err));
    /* Names are kept only when there is one per feature column. */
    if (m->n_feature_names && m->n_feature_names != m->n_features) {
        for (uint32_t i = 0; i < m->n_feature_names; i++) free(m->feature_names[i]);
        free(m->feature_names);
        m->feature_names = NULL;
        m->n_feature_names = 0;
    }

    /* Zero-is-missing invariant: see tsm_model_finish in forest.h. */
    uint8_t *zero_feature = calloc((size_t)m->n_features + 1, 1);
    if (!zero_feature) return ts_fail(err, TS_ERR_NO_MEMORY, "out of memory");
    for (uint32_t t = 0; t < m->n_trees; t++)
        for (uint32_t i = 0; i < m->trees[t].n_nodes; i++)
            if ((m->trees[t].nodes[i].flags & (TSM_ZERO_IS_MISSING | TSM_CATEGORICAL | TSM_DERIVED)) == TSM_ZERO_IS_MISSING)
                zero_feature[m->trees[t].nodes[i].feature] = 1;
    for (uint32_t t = 0; t < m->n_trees; t++)
        for (uint32_t i = 0; i < m->trees[t].n_nodes; i++) {
            const tsm_node *n = &m->trees[t].nodes[i];
            if (!(n->flags & (TSM_CATEGORICAL | TSM_DERIVED)) && zero_feature[n->feature] && n->threshold >= -TSM_ZERO_RANGE && n->threshold < TSM_ZERO_RANGE) {
                free(zero_feature);
                return ts_fail(err, TS_ERR_UNSUPPORTED,
                               "tree %u node %u: threshold %.9g on feature %u splits the zero range of a "
                               "feature whose missing type is Zero",
                               t, i, (double)n->threshold, n->feature);
            }
        }
    free(zero_feature);
    return TS_OK;
}

/* ---- info ------------------------------------------------------------------------- */

ts_status ts_model_get_info(const ts_model *m, ts_model_info *out, ts_error *err) {
    if (!m || !out) return ts_fail(err, TS_ERR_INVALID_ARGUMENT, "ts_model_get_info: %s is NULL", m ? "out" : "model");
    memset(out, 0, sizeof *out);
    out->format = m->format;
    out->n_trees = m->n_trees;
    out->n_features = m->n_features;
    out->n_features_declared = m->n_features_declared;
    out->base_score = m->base_score;
    out->average_output = m->average_output;
    memcpy(out->objective, m->objective, sizeof out->objective);
    out->objective[sizeof out->objective - 1] = '\0';
    out->n_outputs = m->n_outputs ? m->n_outputs : 1;

    uint8_t *used = calloc((size_t)m->n_features + 1, 1);
    if (!used)
        return ts_fail(err, TS_ERR_NO_MEMORY, "ts_model_get_info: out of memory (%u features)", (unsigned)m->n_features);
    double leaves_sum = 0, depth_sum = 0;
    for (uint32_t t = 0; t < m->n_trees; t++) {
        const tsm_tree *tr = &m->trees[t];
        out->n_internal_nodes += tr->n_nodes;
        out->n_leaves += tr->n_leaves;
        if (tr->n_leaves > out->leaves_max) out->leaves_max = tr->n_leaves;
        if (tr->depth > out->depth_max) out->depth_max = tr->depth;
        leaves_sum += tr->n_leaves;
        depth_sum += tr->depth;
        for (uint32_t i = 0; i < tr->n_nodes; i++) {
            const tsm_node *n = &tr->nodes[i];
            if (n->flags & TSM_DERIVED) {
                out->n_categorical_splits++; /* a CTR over a combination of features */
                continue;
            }
            if (!used[n->feature]) {
                used[n->feature] = 1;
                out->n_features_used++;
            }
            /* A split routes missing values specially unless they simply follow x <= t
             * with x = NaN (which goes right): that is any left default or zero rule. */
            if (n->flags & TSM_CATEGORICAL) {
                out->n_categorical_splits++;
                const tsm_catset *c = &m->catsets[(uint32_t)n->threshold];
                if (c->flags & TSM_MISSING_LEFT) out->has_missing_splits = 1; /* XGBoost default left */
            } else if (n->flags) {
                out->has_missing_splits = 1;
            }
        }
    }
    free(used);
    if (m->n_trees) {
        out->leaves_mean = leaves_sum / m->n_trees;
        out->depth_mean = depth_sum / m->n_trees;
    }
    return TS_OK;
}

const char *ts_model_format_name(ts_model_format f) {
    switch (f) {
    case TS_FORMAT_AUTO: return "auto";
    case TS_FORMAT_LIGHTGBM: return "lightgbm";
    case TS_FORMAT_XGBOOST_JSON: return "xgboost";
    case TS_FORMAT_QUICKRANK_XML: return "quickrank";
    case TS_FORMAT_XGBOOST_DUMP: return "xgboost-dump";
    case TS_FORMAT_LIGHTGBM_JSON: return "lightgbm-json";
    case TS_FORMAT_RANKLIB: return "ranklib";
    case TS_FORMAT_XGBOOST_UBJSON: return "xgboost-ubjson";
    case TS_FORMAT_CATBOOST: return "catboost";
    case TS_FORMAT_CATBOOST_JSON: return "catboost-json";
    case TS_FORMAT_ONNX: return "onnx";
    }
    return "unknown";
}

ts_status ts_model_format_from_name(const char *name, ts_model_format *out) {
    static const struct { const char *name; ts_model_format f; } names[] = {
        {"auto", TS_FORMAT_AUTO},          {"lightgbm", TS_FORMAT_LIGHTGBM},
        {"xgboost", TS_FORMAT_XGBOOST_JSON}, {"xgboost-json", TS_FORMAT_XGBOOST_JSON},
        {"quickrank", TS_FORMAT_QUICKRANK_XML}, {"quickrank-xml", TS_FORMAT_QUICKRANK_XML},
        {"xgboost-dump", TS_FORMAT_XGBOOST_DUMP}, {"lightgbm-json", TS_FORMAT_LIGHTGBM_JSON},
        {"ranklib", TS_FORMAT_RANKLIB}, {"xgboost-ubjson", TS_FORMAT_XGBOOST_UBJSON},
        {"ubjson", TS_FORMAT_XGBOOST_UBJSON}, {"catboost", TS_FORMAT_CATBOOST},
        {"catboost-json", TS_FORMAT_CATBOOST_JSON}, {"onnx", TS_FORMAT_ONNX},
    };
    if (!name || !out) return TS_ERR_INVALID_ARGUMENT;
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (strcmp(name, names[i].name) == 0) {
            *out = names[i].f;
            return TS_OK;
        }
    return TS_ERR_INVALID_ARGUMENT;
}

/* Nodes are in preorder, so children have larger indices than parents and a reverse
 * pass sees children first. */
void tsm_tree_leaf_ranges(const tsm_tree *t, uint32_t *lo, uint32_t *hi) {
    for (uint32_t i = t->n_nodes; i-- > 0;) {
        const tsm_node *n = &t->nodes[i];
        lo[i] = n->left < 0 ? (uint32_t)~n->left : lo[n->left];
        hi[i] = n->right < 0 ? (uint32_t)~n->right + 1 : hi[n->right];
    }
}

void tsm_model_weighted_leaves(const ts_model *m, double *leaves, uint32_t *offset) {
    uint32_t off = 0;
    for (uint32_t t = 0; t < m->n_trees; t++) {
        const tsm_tree *tr = &m->trees[t];
        offset[t] = off;
        for (uint32_t l = 0; l < tr->n_leaves; l++) leaves[off + l] = tr->weight * tr->leaf_values[l];
        off += tr->n_leaves;
    }
}
