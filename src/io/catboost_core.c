/* catboost_core.c: CatBoost's model arrays to the forest IR (catboost_core.h has the semantics). */
#include "io/catboost_core.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/error.h"
#include "io/json.h"
#include "model/forest.h"

void tscb_model_clear(tscb_model *cb) {
    for (uint32_t i = 0; i < cb->n_floats; i++) {
        free(cb->floats[i].borders);
        free(cb->floats[i].name);
    }
    free(cb->floats);
    free(cb->tree_sizes);
    free(cb->tree_starts);
    free(cb->splits);
    free(cb->steps);
    free(cb->node_leaf);
    free(cb->leaves);
    free(cb->bias);
    memset(cb, 0, sizeof *cb);
}

void tscb_params_objective(struct tsj_parser *p, char out[64]) {
    char key[TSJ_KEY_MAX], k2[TSJ_KEY_MAX];
    int has, has2, truncated;
    tsj_type t;
    if (tsj_object_begin(p) != TS_OK) return;
    while (tsj_object_next(p, key, &has) == TS_OK && has) {
        if (strcmp(key, "loss_function") || tsj_peek(p, &t) != TS_OK || t != TSJ_OBJECT) {
            if (tsj_skip(p) != TS_OK) return;
            continue;
        }
        if (tsj_object_begin(p) != TS_OK) return;
        while (tsj_object_next(p, k2, &has2) == TS_OK && has2) {
            if (!strcmp(k2, "type") && tsj_peek(p, &t) == TS_OK && t == TSJ_STRING) {
                char buf[64];
                if (tsj_string_prefix(p, buf, sizeof buf, &truncated) != TS_OK) return;
                for (char *s = buf; *s; s++)
                    if ((unsigned char)*s < 0x20 || *s == 0x7f) *s = '?';
                memcpy(out, buf, sizeof buf);
                return;
            }
            if (tsj_skip(p) != TS_OK) return;
        }
        return;
    }
}

/* A binary feature (one border of one float feature). */
typedef struct bin_split {
    uint32_t feature; /* index into cb->floats */
    float border;
} bin_split;

typedef struct build {
    const tscb_model *cb;
    const char *name;
    ts_error *err;
    ts_model *m;
    bin_split *bins;
    size_t n_bins;
    tsm_node *nodes;    /* scratch for one tree */
    double *values;     /* scratch: leaf values of one output */
    uint32_t *leaf_at;  /* non-symmetric: the leaf value index of each IR leaf */
    int32_t *ir_of;     /* non-symmetric: IR index of each node of the tree, -1 when not met */
    size_t *stack;
} build;

/* The IR node of binary feature `bin`. */
static ts_status split_node(build *b, uint32_t tree, int32_t bin, tsm_node *nd) {
    if (bin < 0 || (size_t)bin >= b->n_bins)
        return ts_fail(b->err, TS_ERR_PARSE, "%s: tree %u: split %d is not one of the model's %zu float borders", b->name,
                       tree, (int)bin, b->n_bins);
    const bin_split *s = &b->bins[bin];
    const tscb_float *f = &b->cb->floats[s->feature];
    /* x > border goes right (the bit is set); NaN is +inf (true) only for AsTrue with HasNans */
    int nan_true = f->has_nans && f->nan_treatment == TSCB_NAN_AS_TRUE && s->border < INFINITY;
    nd->feature = (uint32_t)f->flat_index;
    nd->threshold = s->border;
    nd->flags = nan_true ? 0u : TSM_MISSING_LEFT;
    return TS_OK;
}

static ts_status check_features(build *b) {
    const tscb_model *cb = b->cb;
    size_t total = 0;
    for (uint32_t i = 0; i < cb->n_floats; i++) {
        const tscb_float *f = &cb->floats[i];
        if (f->flat_index < 0 || (uint32_t)f->flat_index >= TSM_MAX_FEATURES)
            return ts_fail(b->err, f->flat_index < 0 ? TS_ERR_PARSE : TS_ERR_LIMIT,
                           "%s: float feature %u: flat index %d is outside [0, %u)", b->name, i, (int)f->flat_index,
                           TSM_MAX_FEATURES);
        if (f->nan_treatment < TSCB_NAN_AS_IS || f->nan_treatment > TSCB_NAN_AS_TRUE)
            return ts_fail(b->err, TS_ERR_PARSE, "%s: float feature %u: unknown NanValueTreatment %d", b->name, i,
                           f->nan_treatment);
        for (uint32_t k = 0; k < f->n_borders; k++) {
            if (f->borders[k] != f->borders[k])
                return ts_fail(b->err, TS_ERR_PARSE, "%s: float feature %u: border %u is NaN", b->name, i, k);
            if (k > 0 && f->borders[k] < f->borders[k - 1])
                return ts_fail(b->err, TS_ERR_PARSE,
                               "%s: float feature %u: borders %u and %u descend (%.9g > %.9g); CatBoost's binarization "
                               "needs them ascending",
                               b->name, i, k - 1, k, (double)f->borders[k - 1], (double)f->borders[k]);
        }
        total += f->n_borders;
    }
    b->n_bins = total;
    if (total == 0) return TS_OK;
    b->bins = malloc(total * sizeof *b->bins);
    if (!b->bins) return ts_fail(b->err, TS_ERR_NO_MEMORY, "%s: out of memory", b->name);
    size_t j = 0;
    for (uint32_t i = 0; i < cb->n_floats; i++)
        for (uint32_t k = 0; k < cb->floats[i].n_borders; k++) b->bins[j++] = (bin_split){i, cb->floats[i].borders[k]};
    return TS_OK;
}

/* Add the tree just described (nodes, n_nodes, and a value index per leaf via `value_of`)
 * once per output. */
static ts_status add_outputs(build *b, uint32_t tree, uint32_t n_nodes, uint32_t n_leaves, const uint32_t *first) {
    uint32_t dim = b->cb->dim;
    for (uint32_t k = 0; k < dim; k++) {
        for (uint32_t j = 0; j < n_leaves; j++) b->values[j] = b->cb->leaves[first[j] + k];
        ts_status st = tsm_model_add_tree(b->m, n_nodes, n_nodes ? b->nodes : NULL, n_leaves, b->values, 1.0, b->err);
        if (st != TS_OK) {
            ts_error_prefix(b->err, "%s: CatBoost tree %u", b->name, tree);
            return st;
        }
        b->m->trees[b->m->n_trees - 1].output = k;
    }
    return TS_OK;
}

static ts_status oblivious_trees(build *b) {
    const tscb_model *cb = b->cb;
    size_t split_at = 0, leaf_at = 0;
    uint32_t dim = cb->dim;
    uint32_t max_depth = 0;
    for (uint32_t t = 0; t < cb->n_trees; t++) {
        int32_t d = cb->tree_sizes[t];
        if (d < 0 || d > TSCB_MAX_DEPTH)
            return ts_fail(b->err, d < 0 ? TS_ERR_PARSE : TS_ERR_LIMIT, "%s: tree %u: depth %d is outside [0, %d]",
                           b->name, t, (int)d, TSCB_MAX_DEPTH);
        if ((uint32_t)d > max_depth) max_depth = (uint32_t)d;
        /* what the trees claim must be in the file before anything of that size is allocated */
        size_t values = ((size_t)1 << d) * dim;
        if (values > cb->n_leaves - leaf_at || (size_t)d > cb->n_splits - split_at)
            return ts_fail(b->err, TS_ERR_PARSE,
                           "%s: tree %u: depth %d needs %zu leaf values and %d splits, more than the model lists "
                           "after the trees before it (%zu values, %zu splits in all)",
                           b->name, t, (int)d, values, (int)d, cb->n_leaves, cb->n_splits);
        leaf_at += values;
        split_at += (size_t)d;
    }
    split_at = leaf_at = 0;
    size_t leaves_max = (size_t)1 << max_depth;
    b->nodes = malloc(leaves_max * sizeof *b->nodes);
    b->values = malloc(leaves_max * sizeof *b->values);
    uint32_t *first = malloc(leaves_max * sizeof *first);
    b->leaf_at = first;
    if (!b->nodes || !b->values || !first) return ts_fail(b->err, TS_ERR_NO_MEMORY, "%s: out of memory", b->name);
    for (uint32_t t = 0; t < cb->n_trees; t++) {
        uint32_t d = (uint32_t)cb->tree_sizes[t];
        if (cb->tree_starts && cb->tree_starts[t] >= 0 && (size_t)cb->tree_starts[t] != split_at)
            return ts_fail(b->err, TS_ERR_PARSE, "%s: tree %u starts at split %d, expected %zu (the splits of the trees "
                           "before it)", b->name, t, (int)cb->tree_starts[t], split_at);
        if (split_at + d > cb->n_splits)
            return ts_fail(b->err, TS_ERR_PARSE, "%s: tree %u: its %u splits run past the %zu of the model", b->name, t, d,
                           cb->n_splits);
        size_t n_leaves = (size_t)1 << d;
        if (leaf_at > cb->n_leaves || n_leaves * dim > cb->n_leaves - leaf_at)
            return ts_fail(b->err, TS_ERR_PARSE, "%s: tree %u: its %zu leaf values run past the %zu of the model", b->name,
                           t, n_leaves * dim, cb->n_leaves);
        /* heap order: node i at level L tests split d-1-L; children 2i+1, 2i+2; the last
         * level's children are leaves, left to right = CatBoost's leaf index */
        uint32_t n_nodes = (uint32_t)n_leaves - 1;
        for (uint32_t i = 0; i < n_nodes; i++) {
            uint32_t level = 0;
            for (uint32_t x = i + 1; x > 1; x >>= 1) level++;
            tsm_node *nd = &b->nodes[i];
            TS_TRY(split_node(b, t, cb->splits[split_at + d - 1 - level], nd));
            if (level + 1 < d) {
                nd->left = (int32_t)(2 * i + 1);
                nd->right = (int32_t)(2 * i + 2);
            } else {
                uint32_t j = 2 * (i - (n_nodes >> 1));
                nd->left = ~(int32_t)j;
                nd->right = ~(int32_t)(j + 1);
            }
        }
        for (uint32_t j = 0; j < n_leaves; j++) first[j] = (uint32_t)(leaf_at + (size_t)j * dim);
        TS_TRY(add_outputs(b, t, n_nodes, (uint32_t)n_leaves, first));
        split_at += d;
        leaf_at += n_leaves * dim;
    }
    if (split_at != cb->n_splits)
        return ts_fail(b->err, TS_ERR_PARSE, "%s: the trees use %zu splits of the %zu listed", b->name, split_at,
                       cb->n_splits);
    if (leaf_at != cb->n_leaves)
        return ts_fail(b->err, TS_ERR_PARSE, "%s: the trees use %zu leaf values of the %zu listed", b->name, leaf_at,
                       cb->n_leaves);
    return TS_OK;
}

/* A leaf exit at node n: its value index, checked. */
static ts_status leaf_exit(build *b, uint32_t tree, size_t n, uint32_t *n_leaves, int32_t *ref) {
    uint32_t v = b->cb->node_leaf[n];
    if ((size_t)v > b->cb->n_leaves || b->cb->dim > b->cb->n_leaves - v)
        return ts_fail(b->err, TS_ERR_PARSE, "%s: tree %u: node %zu: leaf value index %u is outside the %zu leaf values",
                       b->name, tree, n, v, b->cb->n_leaves);
    b->leaf_at[*n_leaves] = v;
    *ref = ~(int32_t)*n_leaves;
    ++*n_leaves;
    return TS_OK;
}

static ts_status nonsymmetric_trees(build *b) {
    const tscb_model *cb = b->cb;
    if (cb->n_node_leaf != cb->n_steps || cb->n_splits != cb->n_steps)
        return ts_fail(b->err, TS_ERR_PARSE, "%s: %zu step nodes, %zu node leaf ids and %zu splits (expected as many)",
                       b->name, cb->n_steps, cb->n_node_leaf, cb->n_splits);
    size_t max_size = 1;
    for (uint32_t t = 0; t < cb->n_trees; t++) {
        int32_t s = cb->tree_starts[t], z = cb->tree_sizes[t];
        if (s < 0 || z < 1 || (size_t)s > cb->n_steps || (size_t)z > cb->n_steps - (size_t)s)
            return ts_fail(b->err, TS_ERR_PARSE, "%s: tree %u: nodes [%d, %d + %d) are outside the %zu nodes", b->name, t,
                           (int)s, (int)s, (int)z, cb->n_steps);
        if ((size_t)z > max_size) max_size = (size_t)z;
    }
    if (max_size > TSM_MAX_LEAVES)
        return ts_fail(b->err, TS_ERR_LIMIT, "%s: a tree of %zu nodes (the limit is %u)", b->name, max_size,
                       TSM_MAX_LEAVES);
    b->nodes = malloc(max_size * sizeof *b->nodes);
    b->values = malloc((max_size + 1) * sizeof *b->values);
    b->leaf_at = malloc((max_size + 1) * sizeof *b->leaf_at);
    b->ir_of = malloc(max_size * sizeof *b->ir_of);
    b->stack = malloc(max_size * sizeof *b->stack);
    if (!b->nodes || !b->values || !b->leaf_at || !b->ir_of || !b->stack)
        return ts_fail(b->err, TS_ERR_NO_MEMORY, "%s: out of memory", b->name);
    for (uint32_t t = 0; t < cb->n_trees; t++) {
        size_t s = (size_t)cb->tree_starts[t], z = (size_t)cb->tree_sizes[t];
        uint32_t n_nodes = 0, n_leaves = 0;
        for (size_t i = 0; i < z; i++) b->ir_of[i] = -1;
        const uint16_t *st = cb->steps;
        if (st[2 * s] == 0 && st[2 * s + 1] == 0) { /* a one-leaf tree */
            int32_t ref;
            TS_TRY(leaf_exit(b, t, s, &n_leaves, &ref));
            TS_TRY(add_outputs(b, t, 0, n_leaves, b->leaf_at));
            continue;
        }
        size_t top = 0;
        b->ir_of[0] = (int32_t)n_nodes++;
        b->stack[top++] = s;
        while (top > 0) {
            size_t n = b->stack[--top];
            tsm_node *nd = &b->nodes[b->ir_of[n - s]];
            TS_TRY(split_node(b, t, cb->splits[n], nd));
            for (int side = 0; side < 2; side++) {
                uint16_t diff = st[2 * n + (size_t)side];
                int32_t ref = 0;
                if (diff == 0) {
                    TS_TRY(leaf_exit(b, t, n, &n_leaves, &ref));
                } else {
                    size_t c = n + diff;
                    if (c >= s + z)
                        return ts_fail(b->err, TS_ERR_PARSE, "%s: tree %u: node %zu steps to node %zu, outside the tree's "
                                       "nodes [%zu, %zu)", b->name, t, n, c, s, s + z);
                    if (b->ir_of[c - s] != -1)
                        return ts_fail(b->err, TS_ERR_PARSE, "%s: tree %u: node %zu is reached twice", b->name, t, c);
                    if (st[2 * c] == 0 && st[2 * c + 1] == 0) {
                        b->ir_of[c - s] = -2; /* met, as a leaf */
                        TS_TRY(leaf_exit(b, t, c, &n_leaves, &ref));
                    } else {
                        ref = (int32_t)n_nodes;
                        b->ir_of[c - s] = (int32_t)n_nodes++;
                        b->stack[top++] = c;
                    }
                }
                if (side == 0)
                    nd->left = ref;
                else
                    nd->right = ref;
            }
        }
        TS_TRY(add_outputs(b, t, n_nodes, n_leaves, b->leaf_at));
    }
    return TS_OK;
}

ts_status tscb_build(const tscb_model *cb, ts_model_format format, const char *name, ts_model **out, ts_error *err) {
    build b;
    memset(&b, 0, sizeof b);
    b.cb = cb;
    b.name = name;
    b.err = err;
    *out = NULL;
    ts_status st = TS_OK;
    if (cb->dim < 1 || cb->dim > TSM_MAX_OUTPUTS)
        return ts_fail(err, cb->dim < 1 ? TS_ERR_PARSE : TS_ERR_LIMIT, "%s: ApproxDimension %u is outside [1, %u]", name,
                       cb->dim, TSM_MAX_OUTPUTS);
    if (cb->n_trees > TSM_MAX_TREES / cb->dim)
        return ts_fail(err, TS_ERR_LIMIT, "%s: %u trees of %u outputs are above the limit of %u trees", name, cb->n_trees,
                       cb->dim, TSM_MAX_TREES);
    if (!(cb->scale == 1.0))
        return ts_fail(err, TS_ERR_UNSUPPORTED,
                       "%s: scale %.17g: models with a scale other than 1 (set_scale_and_bias, sum_models with weights) "
                       "are not supported: CatBoost computes scale * (sum of leaves) + bias, which a sum of per-tree "
                       "values cannot reproduce bit for bit",
                       name, cb->scale);
    if (cb->n_bias != cb->dim)
        return ts_fail(err, TS_ERR_PARSE, "%s: %u bias values for ApproxDimension %u", name, cb->n_bias, cb->dim);
    for (uint32_t k = 0; k < cb->n_bias; k++)
        if (!isfinite(cb->bias[k])) return ts_fail(err, TS_ERR_PARSE, "%s: bias %u is not finite", name, k);
    b.m = tsm_model_new(format);
    if (!b.m) return ts_fail(err, TS_ERR_NO_MEMORY, "%s: out of memory", name);
    ts_model *m = b.m;
    if (cb->dim > 1) st = tsm_model_set_outputs(m, cb->dim, err);
    if (st == TS_OK) st = check_features(&b);
    if (st == TS_OK) st = cb->oblivious ? oblivious_trees(&b) : nonsymmetric_trees(&b);
    if (st == TS_OK) {
        int zero_bias = 1;
        for (uint32_t k = 0; k < cb->dim; k++) zero_bias &= cb->bias[k] == 0.0;
        if (cb->n_trees == 0) { /* CatBoost fills the scores with the bias */
            for (uint32_t k = 0; k < cb->dim; k++) {
                if (m->output_base) m->output_base[k] = cb->bias[k];
            }
            m->base_score = cb->bias[0];
        } else if (!zero_bias) { /* sum + bias[k], after every tree: one more one-leaf tree per output */
            for (uint32_t k = 0; k < cb->dim && st == TS_OK; k++) {
                st = tsm_model_add_tree(m, 0, NULL, 1, &cb->bias[k], 1.0, err);
                if (st == TS_OK) m->trees[m->n_trees - 1].output = k;
            }
        }
    }
    if (st == TS_OK) {
        int32_t top = -1;
        int names = cb->n_floats > 0;
        for (uint32_t i = 0; i < cb->n_floats; i++) {
            if (cb->floats[i].flat_index > top) top = cb->floats[i].flat_index;
            names &= cb->floats[i].flat_index == (int32_t)i && cb->floats[i].name && cb->floats[i].name[0];
        }
        m->n_features_declared = (uint32_t)(top + 1);
        for (uint32_t i = 0; names && i < cb->n_floats && st == TS_OK; i++)
            st = tsm_model_add_feature_name(m, cb->floats[i].name, strlen(cb->floats[i].name), err);
        if (st == TS_OK) {
            memcpy(m->objective, cb->objective, sizeof m->objective);
            m->objective[sizeof m->objective - 1] = '\0';
            st = tsm_model_finish(m, err);
            if (st != TS_OK) ts_error_prefix(err, "%s", name);
        }
    }
    free(b.bins);
    free(b.nodes);
    free(b.values);
    free(b.leaf_at);
    free(b.ir_of);
    free(b.stack);
    if (st != TS_OK) {
        ts_model_free(m);
        return st;
    }
    *out = m;
    return TS_OK;
}
