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

/* A slot is a column seen through one missing-value rule (flags): the kernels of gpu
 * stage one float per slot and document, v = x where x is not missing for the rule,
 * else -inf (missing goes left) or NaN (missing goes right), so that every node is then
 * exactly `v <= threshold` (thresholds are never NaN; -inf <= t always holds, NaN <= t
 * never), forest.h's tsm_node_goes_left without a missing-value test per node (the
 * slots of trees-simd, design.md). */

/* gpu's QuickScorer entry: one internal node, 24 bytes. A false node (v > threshold:
 * the document goes right) removes the leaves of its LEFT subtree, [lo, hi) in the
 * canonical left-to-right numbering, from the candidates for the exit leaf. Entries are
 * grouped by the 64-leaf word holding lo; `keep` is the word's bits a false node keeps
 * (those outside [lo, hi)), and hi, when it lies past the word, carries the removal
 * into later words (src/gpu/kernels.cuh, tsg_qs_exit_leaf). */
typedef struct tsg_entry {
    uint64_t keep;
    float threshold;
    uint32_t slot;
    uint32_t hi;
    uint32_t pad;
} tsg_entry;

/* gpu's byte-code entry (the kernel variant TSG_KIND_CODES, 16 bytes): the node as
 * rapid's exact codes see it (design.md, "Codes"). A slot's distinct thresholds T
 * ascending; a value's code is the number of them below it (NaN: all of them), so
 * v <= T[k] exactly when code <= k. A slot of more than 255 thresholds is cut into
 * byte slots of 255 (base 0, 255, ...), each code clamped to [0, 255] after subtracting
 * its base, so every code is one byte; node k of segment j tests byte slot (s, j)
 * against k - 255 j. bslot_k = byte slot << 8 | that k. */
typedef struct tsg_centry {
    uint64_t keep;
    uint32_t hi;
    uint32_t bslot_k;
} tsg_centry;

/* gpu's walk node (the kernel variant TSG_KIND_WALK): the same nodes in the same places
 * as the entries, in preorder, children relative to the tree (>= 0 a node, < 0 leaf ~c). */
typedef struct tsg_wnode {
    float threshold;
    uint32_t slot;
    int32_t left, right;
} tsg_wnode;

/* gpu's walk node on byte codes (the kernel variant TSG_KIND_WALK_CODES, the engine
 * gpu's kernel when codes take less shared memory per document than slot floats): the
 * walk node with tsg_centry's bslot_k in place of slot and threshold, so the test is
 * `code <= k` on the document's staged byte (one byte per byte slot instead of four per
 * slot: more documents per multiprocessor). */
typedef struct tsg_cwnode {
    uint32_t bslot_k;
    int32_t left, right;
    uint32_t pad;
} tsg_cwnode;

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

/* The same for gpu. Block b of trees is [block_tree[b], block_tree[b+1]), its nodes
 * contiguous: tree t's nodes (entries or wnodes) start at node_first[t] (n_trees + 1);
 * a block of threads stages them in shared memory when they fit in smem_nodes, else
 * reads them from global memory. Tree t's words are [tree_word[t], tree_word[t+1]) and
 * word k's entries [word_entry[k], word_entry[k+1]). The QuickScorer kernel reads entries
 * (walk = 0, codes = 0) or byte-code entries (codes = 1); walk = 1: each thread walks its
 * document down every tree (wnodes, or cwnodes on byte codes when codes = 1 too). Dynamic shared memory: smem_nodes nodes (node_bytes
 * each: the kind's node size), then, when x_shared, n_slots * blockDim.x floats (slot s of the
 * block's document d at [s * blockDim.x + d]) or, for codes, n_bslots * blockDim.x
 * bytes. blockDim.x is a multiple of 32. */
typedef struct tsg_qs_params {
    const float *x;
    uint64_t n_rows, stride;
    double *out;
    double base;
    uint32_t n_slots;
    const uint32_t *slot_feature; /* n_slots: the column of slot s */
    const uint32_t *slot_flags;   /* n_slots: its rule (TSG_MISSING_LEFT | TSG_ZERO_IS_MISSING) */
    uint32_t n_trees;
    const uint32_t *node_first;   /* n_trees + 1 */
    const uint32_t *tree_word;    /* n_trees + 1 */
    const uint32_t *leaf_off;     /* n_trees + 1 */
    const uint32_t *word_entry;   /* words + 1 */
    const tsg_entry *entries;
    const tsg_wnode *wnodes;
    const tsg_centry *centries;
    const tsg_cwnode *cwnodes;    /* walk = 1 and codes = 1 */
    const double *leaves;
    uint32_t n_blocks;
    const uint32_t *block_tree;   /* n_blocks + 1 */
    uint32_t smem_nodes;
    uint32_t node_bytes;          /* bytes per staged node: the kind's node size (tsg_node_bytes) */
    uint32_t x_shared;
    uint32_t walk;
    /* the byte-code variant (codes = 1): staged one byte per byte slot and document */
    uint32_t codes;
    uint32_t n_bslots;
    const uint32_t *bslot_slot;   /* n_bslots: its slot */
    const uint32_t *bslot_base;   /* n_bslots: its first threshold (a multiple of 255) */
    const uint32_t *slot_thr;     /* n_slots + 1: slot s's thresholds thr[slot_thr[s] ..] */
    const float *thr;             /* ascending and distinct within a slot */
    /* the split launch (kernels.cuh): exits[t * n_rows + r] = tree t's exit leaf for row r
     * (an index into leaves) for tsg_sum_kernel; NULL: a plain launch */
    uint32_t *exits;
    uint32_t row_blocks;          /* blocks of rows: ceil(n_rows / blockDim.x) */
    uint32_t chunk_blocks;        /* tree blocks per chunk (gridDim.x = row_blocks * chunks) */
} tsg_qs_params;

/* tsg_sum_kernel's: out[r] = base + the exit leaves of a split launch, in tree order. */
typedef struct tsg_sum_params {
    const uint32_t *exits;
    const double *leaves;
    double *out;
    double base;
    uint64_t n_rows;
    uint32_t n_trees;
} tsg_sum_params;

/* Bytes of shared memory per staged node: the largest of the kinds, and each kind's own
 * (the slot values or codes follow the staged nodes at smem_nodes * node_bytes). */
#define TSG_NODE_BYTES 24u
#define tsg_node_bytes(walk, codes) ((walk) || (codes) ? 16u : 24u)

/* The host compilers (gcc or clang for gpu_layout.c, g++ under nvcc for cuda.cu) lay
 * these out for the device compiler: fixed sizes, no padding to guess. */
#ifdef __cplusplus
#define TSG_STATIC_ASSERT(c, m) static_assert(c, m)
#else
#define TSG_STATIC_ASSERT(c, m) _Static_assert(c, m)
#endif
TSG_STATIC_ASSERT(sizeof(tsg_node) == 20 && sizeof(tsg_wnode) == 16 && sizeof(tsg_entry) == 24 &&
                      sizeof(tsg_centry) == 16 && sizeof(tsg_cwnode) == 16,
                  "the GPU layouts' sizes");
TSG_STATIC_ASSERT(sizeof(tsg_entry) <= TSG_NODE_BYTES && sizeof(tsg_wnode) <= TSG_NODE_BYTES &&
                      sizeof(tsg_centry) <= TSG_NODE_BYTES && sizeof(tsg_cwnode) <= TSG_NODE_BYTES,
                  "a staged node fits TSG_NODE_BYTES");
TSG_STATIC_ASSERT(tsg_node_bytes(0, 0) == sizeof(tsg_entry) && tsg_node_bytes(1, 0) == sizeof(tsg_wnode) &&
                      tsg_node_bytes(0, 1) == sizeof(tsg_centry) && tsg_node_bytes(1, 1) == sizeof(tsg_cwnode),
                  "tsg_node_bytes is each kind's node size");

#endif /* TS_GPU_PARAMS_H */
