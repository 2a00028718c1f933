/* lightgbm_tree.h: reader core: LightGBM's model semantics (header and tree arrays to the forest IR), shared by its two formats. */
#ifndef TS_IO_LIGHTGBM_TREE_H
#define TS_IO_LIGHTGBM_TREE_H

#include <stddef.h>
#include <stdint.h>

#include "model/forest.h"
#include "treescore.h"

/*
 * LightGBM writes one model two ways: model.txt (save_model; model_lightgbm.c) and
 * dump_model() JSON (model_lightgbm_json.c). Each format parses its own syntax into the
 * arrays of LightGBM's Tree class, as save_model writes them, and this module turns
 * those arrays into the IR, so both formats give one model with one set of checks
 * (neither format calls the other's loader).
 *
 * Split semantics (LightGBM Tree::NumericalDecision on a double, after its dense
 * predictor turned |x| <= 1e-35 into 0.0):
 *   missing type None: NaN becomes 0.0, then x <= t      -> missing (NaN) left iff 0 <= t
 *   missing type Zero: NaN and zero go to the default side, others x <= t
 *   missing type NaN:  NaN goes to the default side, others x <= t
 * with t mapped to a float by tsm_threshold_lightgbm (exact for float inputs).
 * Categorical nodes (decision_type bit 0): threshold is an index i into the tree's
 * category sets; set i is cat_words[cat_bounds[i] .. cat_bounds[i+1]), a bitset of the
 * categories that go left, rule TSM_CAT_LIGHTGBM.
 * Multiclass (num_class = num_tree_per_iteration = K > 1): tree t adds to score t % K.
 *
 * Errors: messages carry no location ("tree 3: node 2: unknown decision_type 48"); *at
 * says which part of the input the failure is about, and the format locates it there
 * (tsio_locate: the line of that field in model.txt, the tree's object in the JSON).
 */

#define TSLG_CATEGORICAL_MASK 1
#define TSLG_DEFAULT_LEFT_MASK 2
#define TSLG_MISSING_NONE 0
#define TSLG_MISSING_ZERO 1
#define TSLG_MISSING_NAN 2

/* Where a failure is, for the format to locate it. */
typedef enum tslg_at {
    TSLG_AT_NONE,           /* nowhere in particular (the model layer's own message) */
    TSLG_AT_TREE,           /* the tree as a whole */
    TSLG_AT_NUM_CLASS,      /* the header's num_class */
    TSLG_AT_PER_ITERATION,  /* the header's num_tree_per_iteration */
    TSLG_AT_THRESHOLD,      /* the tree's thresholds */
    TSLG_AT_DECISION_TYPE   /* the tree's decision types */
} tslg_at;

/* One tree as LightGBM's arrays: n_leaves - 1 splits (feature, threshold, decision_type,
 * left_child, right_child: >= 0 a split, < 0 the leaf ~c) and n_leaves leaf values.
 * Features are within max_feature_idx (tslg_check_feature). */
typedef struct tslg_tree {
    uint32_t n_leaves;
    const int32_t *feature, *left, *right, *dtype;
    const double *threshold, *leaf;
    long long n_cat;             /* category sets: set i is cat_words[cat_bounds[i] .. cat_bounds[i + 1]) */
    const long long *cat_bounds; /* n_cat + 1 offsets, from 0, non-decreasing */
    const uint32_t *cat_words;
} tslg_tree;

/* 1 when the header's version text (spaces around it allowed) is v2, v3 or v4. */
int tslg_version_supported(const char *p, size_t n);

/* num_class and num_tree_per_iteration (= num_class when absent): one tree per class and
 * iteration, at most TSM_MAX_OUTPUTS classes; makes m K-output when K > 1. */
ts_status tslg_set_outputs(ts_model *m, long long num_class, long long per_iteration, tslg_at *at, ts_error *err);

/* After the last tree: a K-output model's trees are whole iterations of K trees.
 * LightGBM loads a file whose last iteration lacks trees (cut or edited, without its
 * tree_sizes line) and scores only the whole iterations (trees / K of them), silently;
 * treescore refuses it (TS_ERR_INVALID_MODEL, *at the header's num_class). */
ts_status tslg_check_iterations(const ts_model *m, tslg_at *at, ts_error *err);

/* The objective's first word (spaces around it allowed), truncated to m->objective. */
void tslg_set_objective(ts_model *m, const char *p, size_t n);

/* A split feature beyond max_feature_idx: TS_ERR_INVALID_MODEL. */
ts_status tslg_check_feature(uint32_t tree, long long feature, long long max_feature, ts_error *err);

/* Map tree `tree` (the model's next) to the IR and add it, with its output (tree % K).
 * nodes: scratch for n_leaves - 1 IR nodes. */
ts_status tslg_add_tree(ts_model *m, uint32_t tree, const tslg_tree *t, tsm_node *nodes, tslg_at *at,
                        ts_error *err);

#endif /* TS_IO_LIGHTGBM_TREE_H */
