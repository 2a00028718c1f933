/* lightgbm_tree.c: LightGBM's model semantics, shared by model.txt and dump_model() JSON: header values and tree arrays to the forest IR. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "common/error.h"
#include "io/lightgbm_tree.h"
#include "io/text.h"

int tslg_version_supported(const char *p, size_t n) {
    tsio_trim(&p, &n);
    return n == 2 && p[0] == 'v' && p[1] >= '2' && p[1] <= '4';
}

ts_status tslg_set_outputs(ts_model *m, long long num_class, long long per_iteration, tslg_at *at, ts_error *err) {
    *at = TSLG_AT_PER_ITERATION;
    if (num_class != per_iteration)
        return ts_fail(err, TS_ERR_UNSUPPORTED,
                       "num_tree_per_iteration differs from num_class: only one tree per class and iteration is "
                       "supported");
    *at = TSLG_AT_NUM_CLASS;
    if (per_iteration > (long long)TSM_MAX_OUTPUTS)
        return ts_fail(err, TS_ERR_LIMIT, "num_class %lld is beyond the limit of %u classes", per_iteration,
                       TSM_MAX_OUTPUTS);
    *at = TSLG_AT_NONE;
    if (per_iteration > 1) TS_TRY(tsm_model_set_outputs(m, (uint32_t)per_iteration, err));
    return TS_OK;
}

ts_status tslg_check_iterations(const ts_model *m, tslg_at *at, ts_error *err) {
    uint32_t k = m->n_outputs;
    *at = TSLG_AT_NUM_CLASS;
    if (k <= 1 || m->n_trees % k == 0) return TS_OK;
    return ts_fail(err, TS_ERR_INVALID_MODEL,
                   "%u trees are not a whole number of iterations of %u trees (num_class %u: one tree per class and "
                   "iteration): truncated or edited? (LightGBM would silently score only the first %u trees)",
                   m->n_trees, k, k, m->n_trees / k * k);
}

void tslg_set_objective(ts_model *m, const char *p, size_t n) {
    size_t k = 0;
    tsio_trim(&p, &n);
    while (k < n && p[k] != ' ' && p[k] != '\t' && k + 1 < sizeof m->objective) k++;
    memcpy(m->objective, p, k);
    m->objective[k] = '\0';
}

ts_status tslg_check_feature(uint32_t tree, long long feature, long long max_feature, ts_error *err) {
    if (feature <= max_feature) return TS_OK;
    return ts_fail(err, TS_ERR_INVALID_MODEL, "tree %u: split_feature %lld is beyond max_feature_idx %lld", tree,
                   feature, max_feature);
}

/* Node i is categorical: its threshold is the index of its set. */
static ts_status map_cat_node(ts_model *m, uint32_t tree, const tslg_tree *t, uint32_t i, tsm_node *n, tslg_at *at,
                              ts_error *err) {
    double thr = t->threshold[i];
    if (!(thr >= 0) || thr >= (double)t->n_cat || thr != floor(thr)) {
        *at = TSLG_AT_THRESHOLD;
        return ts_fail(err, TS_ERR_INVALID_MODEL,
                       "tree %u: node %u: categorical threshold %.17g is not a category set index (num_cat is %lld)",
                       tree, i, thr, t->n_cat);
    }
    uint32_t j = (uint32_t)thr, set;
    *at = TSLG_AT_NONE;
    TS_TRY(tsm_model_add_catset(m, (uint32_t)t->feature[i], TSM_CAT_LIGHTGBM, 0, t->cat_words + t->cat_bounds[j],
                                (uint32_t)(t->cat_bounds[j + 1] - t->cat_bounds[j]), &set, err));
    n->threshold = (float)set;
    n->feature = (uint32_t)t->feature[i];
    n->left = t->left[i];
    n->right = t->right[i];
    n->flags = TSM_CATEGORICAL;
    return TS_OK;
}

/* Split i of the arrays to the IR node n. */
static ts_status map_node(ts_model *m, uint32_t tree, const tslg_tree *t, uint32_t i, tsm_node *n, tslg_at *at,
                          ts_error *err) {
    int32_t dt = t->dtype[i];
    double thr = t->threshold[i];
    int missing = (dt >> 2) & 3;
    if ((dt & ~0xf) || (!(dt & TSLG_CATEGORICAL_MASK) && missing == 3)) {
        *at = TSLG_AT_DECISION_TYPE;
        return ts_fail(err, TS_ERR_UNSUPPORTED, "tree %u: node %u: unknown decision_type %d", tree, i, (int)dt);
    }
    if (dt & TSLG_CATEGORICAL_MASK) return map_cat_node(m, tree, t, i, n, at, err);
    int default_left = (dt & TSLG_DEFAULT_LEFT_MASK) != 0;
    n->threshold = tsm_threshold_lightgbm(thr);
    n->feature = (uint32_t)t->feature[i];
    n->left = t->left[i];
    n->right = t->right[i];
    if (missing == TSLG_MISSING_NONE)
        n->flags = (0.0 <= thr) ? TSM_MISSING_LEFT : 0; /* NaN is compared as 0.0 */
    else if (missing == TSLG_MISSING_NAN)
        n->flags = default_left ? TSM_MISSING_LEFT : 0;
    else
        n->flags = TSM_ZERO_IS_MISSING | (default_left ? TSM_MISSING_LEFT : 0);
    return TS_OK;
}

ts_status tslg_add_tree(ts_model *m, uint32_t tree, const tslg_tree *t, tsm_node *nodes, tslg_at *at,
                        ts_error *err) {
    uint32_t n_nodes = t->n_leaves - 1;
    for (uint32_t i = 0; i < n_nodes; i++) TS_TRY(map_node(m, tree, t, i, &nodes[i], at, err));
    *at = TSLG_AT_TREE;
    TS_TRY(tsm_model_add_tree_d(m, n_nodes, nodes, t->threshold, t->n_leaves, t->leaf, 1.0, err));
    if (m->n_outputs > 1) m->trees[tree].output = tree % m->n_outputs;
    return TS_OK;
}
