/* catboost_core.h: CatBoost's model arrays (as TModelTrees holds them) and their exact conversion to the forest IR, shared by the .cbm and JSON loaders. */
#ifndef TS_IO_CATBOOST_CORE_H
#define TS_IO_CATBOOST_CORE_H

#include <stddef.h>
#include <stdint.h>

#include "treescore.h"

/*
 * Both CatBoost formats (.cbm: model_catboost.c; JSON: model_catboost_json.c) are read
 * into the arrays CatBoost's own TModelTrees keeps (catboost/libs/model/model.h,
 * model.cpp), and this module turns them into a ts_model with CatBoost's applier
 * semantics (catboost/libs/model/cpu/quantization.h, evaluator_impl.cpp,
 * formula_evaluator.cpp, scale_and_bias.cpp, CatBoost 1.2):
 *
 * Splits. TreeSplits holds indices into the model's binary features: every border of
 * every float feature, in feature order (TModelTrees::CalcBinFeatures). A float value x
 * of feature f is binarized as bucket = #{borders b of f : x > b} (float compare) and a
 * split on border k of f is true when bucket >= k + 1, i.e. x > border[k] when the
 * borders ascend (checked here). NaN: unless the feature has NaNs in training
 * (HasNans) and its NanValueTreatment is AsTrue, NaN compares false with every border
 * (AsIs: "NaN > b" is false; AsFalse: NaN is replaced by -inf); AsTrue replaces it by
 * +inf, true for every border below +inf. In the IR ("x <= t goes left") a split is
 * the node (feature FlatIndex, threshold border[k]) with its true side on the right,
 * exactly for every float x; NaN goes left unless AsTrue with HasNans and border < +inf.
 *
 * Oblivious trees (NonSymmetricStepNodes empty): tree t has TreeSizes[t] splits from
 * TreeStartOffsets[t]; split d sets bit d of the leaf index (d = 0 the lowest bit), so
 * the IR tree is the full binary tree whose root tests the last split and whose leaves,
 * left to right, are CatBoost's leaf indices 0 .. 2^depth - 1. Leaf values: tree t's
 * block of 2^depth * ApproxDimension doubles, leaf i's value for output k at i * dim + k.
 *
 * Non-symmetric trees: nodes are global; tree t's root is node TreeStartOffsets[t] and
 * it owns TreeSizes[t] nodes from there. At node n the split TreeSplits[n] picks
 * RightSubtreeDiff (true) or LeftSubtreeDiff (false); a diff of 0 stops at n and takes
 * the values at NonSymmetricNodeIdToLeafId[n] (dim of them), else the walk moves to
 * n + diff (diffs are positive, so there are no cycles; a node reached twice is refused).
 *
 * Score. CatBoost adds the trees' leaf values in double in tree order from 0.0, then
 * applies Scale * sum + Bias (ApplyScaleAndBias): with Scale 1 that is sum + Bias[k], so
 * a nonzero bias becomes one last one-leaf tree per output (base 0.0); a model without
 * trees scores Bias (base_score). Scale != 1 is refused: Scale * (sum of leaves) cannot
 * be written as a sum of per-tree terms with the same rounding.
 */

enum { TSCB_NAN_AS_IS = 0, TSCB_NAN_AS_FALSE = 1, TSCB_NAN_AS_TRUE = 2 };

/* Largest oblivious tree depth accepted (CatBoost trains up to 16). */
#define TSCB_MAX_DEPTH 20
/* Most categorical features in one CTR projection accepted (CatBoost's max_ctr_complexity
 * is at most a few). */
#define TSCB_MAX_CATS_PER_CTR 64

typedef struct tscb_float {
    int32_t index, flat_index;  /* among float features; in the flat feature vector (the column) */
    int has_nans;
    int nan_treatment;          /* TSCB_NAN_* */
    float *borders;             /* ascending */
    uint32_t n_borders;
    char *name;                 /* FeatureId, or NULL */
} tscb_float;

/* Categorical features (catboost_core.c, "Categorical features", has the semantics). */
typedef struct tscb_cat {
    int32_t index, flat_index;  /* among categorical features; the column */
    uint32_t *onehot;           /* the one-hot values (category hashes) of its one-hot splits */
    uint32_t n_onehot;
    char *name;                 /* FeatureId, or NULL */
} tscb_cat;

enum {
    TSCB_CTR_BORDERS = 0, TSCB_CTR_BUCKETS, TSCB_CTR_BINARIZED_MEAN, TSCB_CTR_FLOAT_MEAN, TSCB_CTR_COUNTER,
    TSCB_CTR_FEATURE_FREQ
};

/* A CTR table (ctr_data): rows of (projection hash, stride - 1 values). */
typedef struct tscb_ctr_table {
    char *id;                   /* its identifier (the CTR base: type and projection) */
    uint32_t stride;            /* 1 + values per row */
    long long counter_denominator;
    uint64_t *keys;             /* n_rows */
    double *values;             /* n_rows * (stride - 1) */
    size_t n_rows;
} tscb_ctr_table;

/* One element of a CTR's projection (TFeatureCombination): a categorical feature's hash, a
 * binarized float condition (x > border) or a one-hot condition (hash == value). */
enum { TSCB_ELEM_CAT = 0, TSCB_ELEM_FLOAT = 1, TSCB_ELEM_ONEHOT = 2 };
typedef struct tscb_elem {
    int kind;                   /* TSCB_ELEM_* */
    int32_t feature;            /* index among the categorical (CAT, ONEHOT) or float (FLOAT) features */
    float border;               /* FLOAT */
    uint32_t value;             /* ONEHOT: the category hash */
} tscb_elem;

/* A CTR feature (features_info.ctrs): a value of a table over a projection, binarized. */
typedef struct tscb_ctr {
    int type;                   /* TSCB_CTR_* */
    int32_t cat;                /* the categorical feature (index among them) of a projection of
                                   that feature alone; -1: a combination */
    tscb_elem *elems;           /* the projection, in CatBoost's hash order: categorical
                                   features, then float conditions, then one-hot conditions */
    uint32_t n_elems;
    uint32_t target_border_idx;
    float prior_num, prior_denom, shift, scale;
    float *borders;
    uint32_t n_borders;
    char *table_id;             /* the identifier of its table */
} tscb_ctr;

typedef struct tscb_model {
    uint32_t dim;               /* ApproxDimension */
    tscb_float *floats;
    uint32_t n_floats;
    int oblivious;
    uint32_t n_trees;
    int32_t *tree_sizes, *tree_starts;
    int32_t *splits;            /* TreeSplits */
    size_t n_splits;
    uint16_t *steps;            /* non-symmetric: (left diff, right diff) per node */
    size_t n_steps;             /* nodes */
    uint32_t *node_leaf;        /* non-symmetric: NonSymmetricNodeIdToLeafId, per node */
    size_t n_node_leaf;
    double *leaves;             /* LeafValues */
    size_t n_leaves;
    double scale;
    double *bias;               /* dim values */
    uint32_t n_bias;
    char objective[64];         /* the loss function's name, or "" */
    uint32_t n_class_names;     /* class_params: class_names' length, or classes_count when larger (0: neither) */
    uint32_t n_class_labels;    /* class_params: class_to_label's length, the classes scored */
    tscb_cat *cats;
    uint32_t n_cats;
    tscb_ctr *ctrs;
    uint32_t n_ctrs;
    tscb_ctr_table *tables;
    uint32_t n_tables;
} tscb_model;

/* CatBoost's hash of a category's text: CityHash64 (util/digest/city.h, CityHash 1.0.x)
 * of its bytes, low 32 bits (CalcCatFeatureHash). cityhash.c. */
uint64_t tscb_cityhash64(const void *data, size_t len);
uint32_t tscb_category_hash(const char *text, size_t len);

/* The loss function's name (params.loss_function.type) from the training parameters
 * object the parser is at (consumed; best effort: out stays "" when it is not there). */
struct tsj_parser;
void tscb_params_objective(struct tsj_parser *p, char out[64]);

/* The number of classes (the larger of class_names' length and classes_count) and the
 * length of class_to_label in the class_params object the parser is at (consumed; best
 * effort: what is not there stays 0). CatBoost scores the classes of class_to_label; a
 * class without a score gets -inf in its own column of its predict. */
void tscb_class_params(struct tsj_parser *p, uint32_t *n_names, uint32_t *n_labels);

/* Sort a projection's elements into CatBoost's hash order (categorical features, float
 * conditions, one-hot conditions; each kind in the order given). */
void tscb_elems_order(tscb_elem *e, uint32_t n);

/* Free every array of cb (not cb itself) and zero it. */
void tscb_model_clear(tscb_model *cb);

/* Convert cb into a finished ts_model of `format`. Errors read "NAME: what" (TS_ERR_PARSE
 * for inconsistent arrays, TS_ERR_UNSUPPORTED for Scale != 1 and for classes named but
 * not scored, TS_ERR_LIMIT past the model limits). */
ts_status tscb_build(const tscb_model *cb, ts_model_format format, const char *name, ts_model **out, ts_error *err);

#endif /* TS_IO_CATBOOST_CORE_H */
