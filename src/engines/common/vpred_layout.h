/* vpred_layout.h: the array layout and branch-free kernel shared by the vpred and block-vpred engines. */
#ifndef TS_ENGINES_VPRED_LAYOUT_H
#define TS_ENGINES_VPRED_LAYOUT_H

#include <stddef.h>
#include <stdint.h>

#include "engines/engine.h"

/*
 * Pred / VPred (Asadi, Lin, de Vries, TKDE 2014; paper 001 section 2)
 * -------------------------------------------------------------------
 * Every tree is an array of nodes; a node's two children are adjacent, so the step
 *
 *     i = node[i].left + (key[node[i].col] > node[i].thr)
 *
 * moves one level down with no branch: the comparison result indexes the child.
 * Nodes are laid out breadth first (the root and the top levels share cache lines).
 * Leaves are absorbing nodes (left = themselves, col = 0, thr = UINT32_MAX, which no
 * key exceeds; their value sits at the same index of a parallel array), so a tree of
 * depth D is traversed by exactly D steps whatever the path: the only loop branch
 * depends on the tree, never on the data. VPred advances v documents ("lanes")
 * together, step by step, so that their independent load chains overlap; the first
 * step, from the root all lanes share, reads the root once.
 *
 * Exact missing values without branches: keys
 * ---------------------------------------------
 * A row is first turned into a row of 32-bit unsigned keys, one per "column": a
 * (feature, missing rule) pair the model's splits use. key(x) is the order-preserving
 * map of the float x to uint32 (after -0.0 -> +0.0, so that -0.0 and 0.0 tie as they do
 * in float compares), and a thresholded node reads
 *
 *     x goes right  iff  key(x) > key(threshold)
 *
 * which equals !(x <= threshold) for every non-NaN float. A missing x is given the key
 * 0 in the column of nodes that send missing values left (no threshold key is below
 * key(-inf) > 0) and UINT32_MAX in the column of nodes that send them right (key(+inf)
 * < UINT32_MAX). For TSM_ZERO_IS_MISSING nodes the column also maps keys in
 * [key(-TSM_ZERO_RANGE), key(TSM_ZERO_RANGE)] to the missing key. So one kernel with
 * one unsigned compare per step is exact for NaN, zero-as-missing, +-inf and -0.0;
 * tsm_node_goes_left stays the definition it is checked against.
 *
 * Keys of a group of `lanes` documents are interleaved: key of column c of lane j is at
 * keys[c * lanes + j], and node.col holds c * lanes, so one node's column of all lanes
 * shares cache lines and a lane's address is one add. A group of fewer documents (the
 * tail of a batch) keeps the same stride and uses lanes 0 .. n-1.
 *
 * Scores: leaf values are weight * leaf_value (the double product of the score
 * definition); vpl_run adds them to out[] tree by tree in tree order, so with out[]
 * starting at base_score every document gets the reference sum bit for bit.
 */

/* Most documents one kernel call interleaves. */
#define VPL_MAX_LANES 64u

/* A node. Most models use the narrow form (8 bytes: a node is one scaled index away,
 * and eight share a cache line; measured 7% faster than the wide form at 1,000 x 32
 * leaves); the wide form serves trees of more than 65,536 slots (32,768 leaves) or
 * key groups of more than 65,536 keys (columns x lanes). */
typedef struct vpl_node8 {
    uint32_t thr;   /* key of the threshold; UINT32_MAX for a leaf (never passed) */
    uint16_t col;   /* column * lanes: offset of lane 0's key in a group's keys */
    uint16_t left;  /* index in the tree of the left child, the right one follows it;
                       a leaf's own index */
} vpl_node8;

typedef struct vpl_node16 {
    uint32_t thr, col, left, unused;
} vpl_node16;

/* Limits of the narrow form. */
#define VPL_NARROW_MAX 65536u

typedef struct vpl_tree {
    uint32_t base;  /* index of its root in vpl.nodes */
    uint32_t depth; /* steps from the root to the deepest leaf */
} vpl_tree;

/* How row values become the keys of one column. */
typedef struct vpl_column {
    uint32_t feature;
    uint32_t missing_key; /* 0 (missing goes left) or UINT32_MAX (right) */
    uint32_t zero_lo;     /* zero-is-missing columns: keys in [zero_lo, zero_lo + zero_span) */
    uint32_t zero_span;   /* are missing; 0 for other columns */
} vpl_column;

typedef struct vpl {
    double base_score;
    uint32_t n_trees;
    uint32_t n_cols;      /* columns of a key row (0 when no tree has a split) */
    uint32_t lanes;       /* the stride node.col is scaled by */
    uint64_t n_nodes;     /* slots in `nodes`: internal nodes and leaves */
    uint64_t steps;       /* sum of the trees' depths: kernel steps per document */
    int narrow;           /* nodes are vpl_node8 (else vpl_node16) */
    vpl_tree *trees;      /* n_trees */
    void *nodes;          /* tree t's n slots start at trees[t].base, breadth first */
    double *values;       /* per slot: weight * leaf value for leaves, 0 for nodes */
    vpl_column *cols;     /* n_cols, by feature */
} vpl;

/* Build the layout of m for groups of `lanes` documents (clamped to 1 ..
 * VPL_MAX_LANES). `engine` names the caller in error messages. */
ts_status vpl_build(vpl *L, const ts_model *m, uint32_t lanes, const char *engine, ts_error *err);
void vpl_free(vpl *L);

/* Bytes of keys of one document (n_cols keys). */
size_t vpl_row_bytes(const vpl *L);

/* Keys of rows x[0 .. n_rows) (1 <= n_rows <= lanes) into one group: keys[c * lanes + j];
 * lanes n_rows .. vpl_padded(n_rows) - 1 get copies of lane 0 (see vpl_run). */
void vpl_keys(const vpl *L, const float *x, size_t n_rows, size_t stride, uint32_t *keys);

/* The same from double rows of a model that converts its input to float32 (XGBoost,
 * scikit-learn, ONNX): each value (float)v, to nearest under the scorer's floating-point
 * state (platform/fpenv.h). */
void vpl_keys_f64(const vpl *L, const double *x, size_t n_rows, size_t stride, uint32_t *keys);

/* For the n (1 .. lanes) documents of one key group: out[j] += the leaves of trees
 * [t0, t1), tree by tree in order. n = lanes runs one kernel instance of n lanes (for
 * v = 1, 2, 4, ..., 32 an unrolled one); a partial group runs unrolled instances of
 * powers of two, the last one possibly wider than what is left: those extra lanes
 * (up to vpl_padded(n)) are scored from keys vpl_keys copied and dropped. */
void vpl_run(const vpl *L, uint32_t t0, uint32_t t1, const uint32_t *keys, uint32_t n, double *out);

/* The lanes a partial group of n documents is scored with (n <= result <= lanes). */
uint32_t vpl_padded(const vpl *L, uint32_t n);

/* For the n documents of a block of key groups (group g at keys + g * n_cols * lanes,
 * the last one possibly partial; the inner two loops of block-vpred's SDSD blocking):
 * out[r] += the leaves of trees [t0, t1), tree by tree in order, each tree over every
 * group of the block before the next tree. */
void vpl_run_trees_over_groups(const vpl *L, uint32_t t0, uint32_t t1, const uint32_t *keys, size_t n, double *out);

/* The v the engines use when the caller leaves lanes at 0, for unblocked (vpred) or
 * blocked (block-vpred) traversal (see vpred_layout.c). */
uint32_t vpl_default_lanes(const ts_model *m, int blocked);

/* Bytes of the arrays a traversal reads (nodes and values), all trees. */
uint64_t vpl_model_bytes(const vpl *L);

#endif /* TS_ENGINES_VPRED_LAYOUT_H */
