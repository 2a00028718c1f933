/* gpu_params.h: what the GPU kernels read (src/gpu/kernels.cuh): plain C types shared by
 * the layout builder (C), the CUDA host code (nvcc) and the CPU emulation (tests/gpu). */
#ifndef TS_GPU_PARAMS_H
#define TS_GPU_PARAMS_H

#include <stdint.h>

/* gpu-naive's node: tsm_node's fields (x <= threshold goes left, unless x is missing
 * for the node's flags; children >= 0 internal, < 0 leaf ~c). */
typedef struct tsg_node {
    float threshold;
    uint32_t feature;
    int32_t left, right;
    uint32_t flags; /* TSG_MISSING_LEFT | TSG_ZERO_IS_MISSING (forest.h's values) */
} tsg_node;

#define TSG_MISSING_LEFT 0x1u
#define TSG_ZERO_IS_MISSING 0x2u
#define TSG_ZERO_RANGE 1e-35f

/* gpu's entry: one internal node of a tree, 16 bytes. col_flags = column << 2 | flags
 * (column: index into the used columns, tsg_qs_params.cols); [lo, hi) are the leaves of
 * the node's LEFT subtree (canonical leaf numbering), which a false node (x goes right)
 * removes from the candidates for the exit leaf. A tree's entries are grouped by the
 * 64-leaf word holding lo (src/gpu/gpu_layout.c). */
typedef struct tsg_entry {
    float threshold;
    uint32_t col_flags;
    uint32_t lo, hi;
} tsg_entry;

#define TSG_COL_SHIFT 2u

/* Scores of rows x[r * stride ...] (r < n_rows) into out[r], gpu-naive. */
typedef struct tsg_naive_params {
    const float *x;
    uint64_t n_rows, stride;
    double *out;
    double base;
    uint32_t n_trees;
    const uint32_t *node_off; /* n_trees: tree t's nodes from nodes[node_off[t]] */
    const uint32_t *leaf_off; /* n_trees + 1: tree t's leaves leaves[leaf_off[t] ..] */
    const tsg_node *nodes;
    const double *leaves;     /* weight * leaf value, the double product the score adds */
} tsg_naive_params;

/* The same for gpu (QuickScorer). Block b of trees is [block_tree[b], block_tree[b+1]),
 * its entries contiguous; a block of threads stages them in shared memory when they fit
 * in smem_entries, else reads them from global memory. Tree t's words are
 * [tree_word[t], tree_word[t+1]) and word k's entries [word_entry[k], word_entry[k+1]).
 * Dynamic shared memory: smem_entries entries (16 bytes each), then, when x_shared,
 * n_cols * blockDim.x floats (column-major: column j of the block's document d at
 * [j * blockDim.x + d]). blockDim.x is a multiple of 32. */
typedef struct tsg_qs_params {
    const float *x;
    uint64_t n_rows, stride;
    double *out;
    double base;
    uint32_t n_cols;
    const uint32_t *cols;       /* n_cols: used column j is feature cols[j] */
    uint32_t n_trees;
    const uint32_t *tree_word;  /* n_trees + 1 */
    const uint32_t *leaf_off;   /* n_trees + 1 */
    const uint32_t *word_entry; /* words + 1 */
    const tsg_entry *entries;
    const double *leaves;
    uint32_t n_blocks;
    const uint32_t *block_tree; /* n_blocks + 1 */
    uint32_t smem_entries;
    uint32_t x_shared;
} tsg_qs_params;

#endif /* TS_GPU_PARAMS_H */
