/* forest.h: the format-independent forest (struct ts_model) that loaders build and engines read. */
#ifndef TS_MODEL_FOREST_H
#define TS_MODEL_FOREST_H

#include <stdint.h>

#include "treescore.h"
#include "model/derived.h"

/*
 * The split predicate
 * -------------------
 * Every numerical split of every input format is normalized to one predicate on float32:
 *
 *     x goes LEFT  iff  x <= threshold   (threshold is a float)
 *
 * unless x is "missing" for that node, in which case it goes where TSM_MISSING_LEFT says.
 * A value is missing for a node when it is NaN, or, for nodes with TSM_ZERO_IS_MISSING,
 * when -TSM_ZERO_RANGE <= x <= TSM_ZERO_RANGE (LightGBM's missing type "Zero").
 * Engines never see the original comparison: see tsm_threshold_* below for why the
 * normalization is exact for every float32 input.
 *
 * Tree layout (canonical form, established by tsm_model_add_tree)
 * ---------------------------------------------------------------
 *   - internal nodes are numbered in preorder: the root is node 0 and a node's left
 *     subtree comes before its right subtree;
 *   - leaves are numbered left to right (in-order), 0 .. n_leaves-1, which is the bit
 *     order QuickScorer needs;
 *   - a child reference c >= 0 is internal node c; c < 0 is leaf ~c (that is -c - 1);
 *   - n_leaves == n_nodes + 1; a one-leaf tree has n_nodes == 0 and no node array.
 *
 * Score
 * -----
 *   score(x) = base_score + sum over trees t in order of (weight_t * leaf_t(x))   [double]
 * Engines may precompute weight_t * leaf (the same double product) but must add the
 * per-tree terms in tree order, starting from base_score: that is what makes LightGBM
 * scores bit-exact (LightGBM adds leaf values in double in tree order from 0.0).
 */

/* Where a missing value goes: set = left, clear = right. */
#define TSM_MISSING_LEFT 0x1u
/* Values in [-TSM_ZERO_RANGE, TSM_ZERO_RANGE] are missing too (LightGBM missing type Zero). */
#define TSM_ZERO_IS_MISSING 0x2u
#define TSM_NODE_FLAGS_ALL (TSM_MISSING_LEFT | TSM_ZERO_IS_MISSING)
/* The node tests a category set instead of x <= threshold: its threshold holds the index
 * of a tsm_catset of the model (exact as a float: indexes stay below 2^24), its feature
 * is the column tested, and no other flag is set. Only loaded models carry such nodes:
 * the scorer rewrites them into numerical nodes on derived columns (tsm_model_view)
 * before any engine sees them. */
#define TSM_CATEGORICAL 0x4u
/* The node tests derived value column `feature` (model/derived.h: a CTR over a combination
 * of features): value <= threshold goes left; TSM_MISSING_LEFT is set with it (a NaN value
 * goes left) and no other flag. Only loaded models carry such nodes: tsm_model_view
 * rewrites them into numerical nodes on column n_features + feature. */
#define TSM_DERIVED 0x8u

/* LightGBM's kZeroThreshold (1e-35f): its predictor drops dense values with |x| <= this,
 * so they behave as 0.0, and missing type Zero treats them as missing. */
#define TSM_ZERO_RANGE 1e-35f

typedef struct tsm_node {
    float threshold;   /* x <= threshold goes left; never NaN */
    uint32_t feature;  /* column index, 0-based */
    int32_t left;      /* child: >= 0 internal node, < 0 leaf ~c */
    int32_t right;
    uint32_t flags;    /* TSM_MISSING_LEFT | TSM_ZERO_IS_MISSING */
} tsm_node;

/*
 * Category sets
 * -------------
 * A categorical node sends a value v of its feature left or right by one of two rules:
 *   TSM_CAT_LIGHTGBM (Tree::CategoricalDecision, LightGBM 4.x, on the double value):
 *       NaN, v <= -1 and v >= 2^31 (int cast out of range) go right; otherwise
 *       c = (int)v (truncated: -0.5 and 0.7 are category 0); c in the set goes LEFT,
 *       any other category right.
 *   TSM_CAT_XGBOOST (common::Decision, XGBoost 1.6 to 3.x, on the float value):
 *       NaN goes to the default side (TSM_MISSING_LEFT in the set's flags); v < 0 and
 *       v >= 2^24 are invalid categories and go left; otherwise c = (int)v; c in the
 *       set goes RIGHT, any other category left.
 *   TSM_CAT_EXACT (the model builder's TS_CMP_IN / TS_CMP_NOT_IN: scikit-learn's
 *       HistGradientBoosting, whose OrdinalEncoder knows a category only by its exact
 *       value): TSM_CAT_XGBOOST, except that a v with a fractional part (0.5, 2.5) is
 *       no category (it goes left, as v < 0 does) rather than the truncated one.
 * The set is a bitset: category c is in it when bit c % 32 of words[c / 32] is set
 * (c / 32 >= n_words: not in it). Trailing zero words are dropped, so equal sets
 * compare equal, and nodes with the same (feature, rule, flags, set) share one tsm_catset.
 */
#define TSM_CAT_LIGHTGBM 1u
#define TSM_CAT_XGBOOST 2u
#define TSM_CAT_EXACT 3u
/* Largest number of scores per row (classes, targets). */
#define TSM_MAX_OUTPUTS (1u << 16)
/* Largest number of category sets per model (their index is stored in a float). */
#define TSM_MAX_CATSETS (1u << 24)
/* Largest category id a set may hold (LightGBM and XGBoost both stay far below). */
#define TSM_MAX_CATEGORY ((1u << 31) - 1u)

typedef struct tsm_catset {
    uint32_t feature;   /* the column tested */
    uint32_t rule;      /* TSM_CAT_LIGHTGBM, TSM_CAT_XGBOOST or TSM_CAT_EXACT */
    uint32_t flags;     /* TSM_MISSING_LEFT (XGBoost: NaN goes left), else 0 */
    uint32_t n_words;   /* bitset words, last one nonzero (0: the empty set) */
    uint32_t word0;     /* first word in ts_model.cat_words */
    uint32_t hash;      /* of all of the above but word0, for sharing */
} tsm_catset;

/* Category ids (CatBoost): a categorical column whose values are hashes of text (CatBoost's
 * CityHash of the category's string) is scored on ids instead: the model knows n hashes
 * for the column, ascending in `hashes`, and category id i (0 .. n-1) is hashes[i]. The
 * loader writes the column's splits as category sets over these ids; any other value
 * (NaN, an id >= n, a negative one) is a category the model never saw. ts_model_category_id
 * maps a category's text to its id. */
typedef struct tsm_catmap {
    uint32_t feature;   /* the column */
    uint32_t n;         /* known categories */
    uint32_t *hashes;   /* n, ascending, distinct */
} tsm_catmap;

typedef struct tsm_tree {
    uint32_t n_nodes;      /* internal nodes */
    uint32_t n_leaves;     /* == n_nodes + 1 */
    uint32_t depth;        /* longest root-to-leaf path in edges */
    double weight;         /* 1.0 for LightGBM and XGBoost gbtree */
    tsm_node *nodes;       /* n_nodes, preorder; NULL when n_nodes == 0 */
    double *leaf_values;   /* n_leaves, left to right */
    double *thresholds_d;  /* n_nodes, preorder: the file's double thresholds when the
                              library compares double inputs (LightGBM); else NULL */
    uint32_t output;       /* which of the model's n_outputs scores the tree adds to */
} tsm_tree;

/* Largest number of leaves a tree may have (bounded so that counts fit int32 child
 * references and engines can size per-tree state in 32 bits). */
#define TSM_MAX_LEAVES (1u << 24)
/* Largest feature id accepted by loaders (a row of this many floats is 64 MiB). */
#define TSM_MAX_FEATURES (1u << 24)
/* Largest number of trees accepted. */
#define TSM_MAX_TREES (1u << 24)

struct ts_model {
    ts_model_format format;
    uint32_t n_trees;
    uint32_t trees_capacity;
    tsm_tree *trees;
    uint32_t n_features;          /* max(n_features_declared, 1 + largest feature id used) */
    uint32_t n_features_declared; /* 0 when the file declares none */
    double base_score;
    uint32_t average_output;      /* LightGBM random forest (informational: raw scores are sums) */
    float absent_value;           /* what an absent sparse entry means (0.0f or NaN) */
    /* How the training library treats double inputs: 1 = compares them in double with
     * the double thresholds_d (LightGBM: x <= t after its zero snapping); 0 = converts
     * them to float32 first (XGBoost, QuickRank), which is then exact in the engines. */
    int compares_double;
    char objective[64];
    char **feature_names;         /* n_feature_names names the file gives, or NULL */
    uint32_t n_feature_names;
    /* Several scores per row (multiclass, multi-target): n_outputs K >= 1; tree t adds to
     * score trees[t].output (< K); output_base (K values, or NULL when K == 1) holds each
     * score's base, and base_score is output_base[0]. */
    uint32_t n_outputs;
    double *output_base;
    /* Category sets of the TSM_CATEGORICAL nodes (n_catsets; their bitsets in cat_words). */
    tsm_catset *catsets;
    uint32_t n_catsets, catsets_capacity;
    uint32_t *cat_words;
    size_t n_cat_words, cat_words_capacity;
    /* tsm_model_add_catset's hash index of the sets: set index + 1 per slot (0: empty),
     * n_catset_slots a power of two (or 0); it holds the first catset_indexed sets, and is
     * rebuilt when that differs from n_catsets (a rollback; tsm_catsets_changed). */
    uint32_t *catset_slots;
    uint32_t n_catset_slots, catset_indexed;
    /* Category ids of hashed categorical columns (CatBoost), one per such column. */
    tsm_catmap *catmaps;
    uint32_t n_catmaps;
    /* Derived value columns (model/derived.h), n_derived of them, and their tables: nodes
     * flagged TSM_DERIVED read them. A model with some never compares doubles. */
    tsm_ctrtab *ctrtabs;
    uint32_t n_ctrtabs;
    tsm_derived *derived;
    uint32_t n_derived;
};

/* ---- Building (loaders) ------------------------------------------------------------ */

/* Call after changing the sets' features or hashes in place (renumbering): the next
 * tsm_model_add_catset rebuilds its index. */
void tsm_catsets_changed(ts_model *m);

/* A new empty model of the given format (absent_value set from the format). NULL when
 * out of memory. Free with ts_model_free. */
ts_model *tsm_model_new(ts_model_format format);

/* Append a tree given in any node/leaf numbering: nodes[0] is the root when n_nodes > 0,
 * child references use the encoding above, leaf_values[i] is leaf i. The tree is checked
 * (every node and leaf reached exactly once from the root, children in range, thresholds
 * not NaN, flags known, feature < TSM_MAX_FEATURES, n_leaves == n_nodes + 1) and stored in
 * canonical form. The inputs are copied. On error the message names the tree index
 * ("tree 12: node 5 is reached twice"); loaders prefix file and line. */
ts_status tsm_model_add_tree(ts_model *m, uint32_t n_nodes, const tsm_node *nodes, uint32_t n_leaves,
                             const double *leaf_values, double weight, ts_error *err);

/* The same, also keeping the file's double thresholds (thresholds_d[i] belongs to
 * nodes[i]; may be NULL) for libraries that compare double inputs (compares_double). */
ts_status tsm_model_add_tree_d(ts_model *m, uint32_t n_nodes, const tsm_node *nodes, const double *thresholds_d,
                               uint32_t n_leaves, const double *leaf_values, double weight, ts_error *err);

/* Append the name of the next feature (feature n_feature_names); len bytes at name. */
ts_status tsm_model_add_feature_name(ts_model *m, const char *name, size_t len, ts_error *err);

/* A category set for a TSM_CATEGORICAL node (see "Category sets"): the index of an equal
 * set already in the model, or of a new one, in *index. words[0..n_words) is the bitset
 * (trailing zero words allowed). TS_ERR_LIMIT past TSM_MAX_CATSETS sets. */
ts_status tsm_model_add_catset(ts_model *m, uint32_t feature, uint32_t rule, uint32_t flags, const uint32_t *words,
                               uint32_t n_words, uint32_t *index, ts_error *err);

/* Make the model K-output (K >= 1): every tree's output must then be set (< K) by the
 * loader, and output_base[k] (all 0.0 here) to each score's base. */
ts_status tsm_model_set_outputs(ts_model *m, uint32_t k, ts_error *err);

/* True when category-set rule of c sends v left (v is the float value widened, for
 * TSM_CAT_XGBOOST; the double value for TSM_CAT_LIGHTGBM). */
int tsm_catset_goes_left(const ts_model *m, const tsm_catset *c, double v);

/* The forest one engine scores, for output k of m: the trees of output k in order, base
 * output_base[k], every TSM_DERIVED node on derived value column d rewritten into the
 * numerical node "x <= threshold" (NaN left) on column n_features + d, and every
 * TSM_CATEGORICAL node into the numerical node "x <= 0.5" on column n_features +
 * n_derived + j (j its category set), a column the scorer fills with 0.0 where the set's
 * rule sends the row's value left and 1.0 where right. n_features of the view is
 * m->n_features + m->n_derived + m->n_catsets. Free with tsm_view_free. */
ts_status tsm_model_view(const ts_model *m, uint32_t k, ts_model **out, ts_error *err);
void tsm_view_free(ts_model *view);

/* Memory follows the columns a model reads, not the count it declares (feature_map.c). */
/* The distinct features below n_features that m's splits and category sets read,
 * ascending, in a new array (*n of them; free it). */
ts_status tsm_used_features(const ts_model *m, uint32_t **ids, uint32_t *n, ts_error *err);
/* True when a model of n_features columns reading n_used of them should be scored on
 * those columns alone (gathered into n_used dense ones): n_features > 4 * n_used + 1024. */
int tsm_features_are_sparse(uint32_t n_features, uint32_t n_used);
/* Renumber m's columns: feature ids[j] (ids ascending, from tsm_used_features) becomes
 * column j, and a derived column f >= first_derived (a view's) becomes n + f -
 * first_derived; every feature below first_derived that m reads must be in ids. Nodes,
 * category sets and feature names follow; n_features becomes n plus the derived
 * columns, n_features_declared 0. Pass first_derived = m->n_features for a loaded model. */
void tsm_model_renumber(ts_model *m, const uint32_t *ids, uint32_t n, uint32_t first_derived);
/* The position of f in ids[0..n) (ascending, f among them): the column a renumbered model,
 * or a row of those columns alone, has for feature f. */
uint32_t tsm_column_rank(const uint32_t *ids, uint32_t n, uint32_t f);

/* Call once after the last tree: computes n_features, checks feature ids against
 * n_features_declared when it is set, checks every tree's output (< n_outputs) and
 * category-set reference, sets base_score to output_base[0] when there are several
 * outputs, and checks the TSM_ZERO_IS_MISSING invariant
 * (no threshold inside [-TSM_ZERO_RANGE, TSM_ZERO_RANGE) on a feature that has
 * zero-is-missing nodes, so all values of that range take one path). */
ts_status tsm_model_finish(ts_model *m, ts_error *err);

/* ---- Threshold normalization -------------------------------------------------------- */
/*
 * Why these are exact: float32 values are totally ordered (NaN aside, handled as
 * missing). For a double t, the set {float x : x <= t} is exactly {float x : x <= F}
 * where F is the largest float not above t, because x is itself a float. So comparing
 * the float input in double against t (what LightGBM does after widening the input)
 * and comparing it in float against F give the same answer for every float32 x.
 * For XGBoost's strict x < t with a float t, the floats below t are exactly those
 * <= nextafterf(t, -inf).
 */

/* The largest float not above t (t not NaN; +-inf map to themselves). */
float tsm_threshold_le_double(double t);

/* XGBoost: x < t  ==  x <= tsm_threshold_lt_float(t). */
float tsm_threshold_lt_float(float t);

/* LightGBM: its predictor turns inputs with |x| <= TSM_ZERO_RANGE into 0.0 before
 * comparing in double with t. The predicate snap(x) <= t is still monotone in x, so it
 * is one float threshold: the largest float x with snap(x) <= t. */
float tsm_threshold_lightgbm(double t);

/* ---- Reading (engines, info) ----------------------------------------------------------- */

/* Reference traversal of one tree for one row (handles missing values). Returns the leaf
 * index (left-to-right numbering). This is the definition every engine must match.
 * Trees without TSM_CATEGORICAL nodes only (engines see views, which have none). */
uint32_t tsm_tree_exit_leaf(const tsm_tree *tree, const float *row);

/* The leaves [lo[i], hi[i]) under each internal node i of a canonical tree (leaves are
 * numbered left to right, so a subtree's leaves are contiguous); lo and hi have n_nodes
 * entries. */
void tsm_tree_leaf_ranges(const tsm_tree *tree, uint32_t *lo, uint32_t *hi);

/* Every tree's weight * leaf value (the double product the score adds), tree t's leaves
 * from leaves[offset[t]] on, trees one after another (room for every leaf; offset has
 * n_trees entries). */
void tsm_model_weighted_leaves(const ts_model *m, double *leaves, uint32_t *offset);

/* True when x is missing for a node with these flags. */
static inline int tsm_is_missing(float x, uint32_t flags) {
    if (x != x) return 1;
    return (flags & TSM_ZERO_IS_MISSING) && x >= -TSM_ZERO_RANGE && x <= TSM_ZERO_RANGE;
}

/* True when x goes left at node n. */
static inline int tsm_node_goes_left(const tsm_node *n, float x) {
    if (tsm_is_missing(x, n->flags)) return (n->flags & TSM_MISSING_LEFT) != 0;
    return x <= n->threshold;
}

#endif /* TS_MODEL_FOREST_H */
