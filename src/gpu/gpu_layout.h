/* gpu_layout.h: the host-side arrays of the GPU engines (gpu_params.h), built from a
 * finished forest; the CUDA code uploads them, the CPU emulation (tests/gpu) runs the
 * kernels on them as they are. */
#ifndef TS_GPU_LAYOUT_H
#define TS_GPU_LAYOUT_H

#include <stddef.h>
#include <stdint.h>

#include "gpu/gpu_params.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Trees per block of `gpu` are cut so that a block's nodes fit this many (24 KiB of
 * shared memory); a tree of more nodes is a block of its own, read from global memory. */
#define TSG_BLOCK_NODES 1024u

typedef struct tsg_layout {
    uint32_t n_features; /* row width the kernels may read (the model's n_features) */
    double base;
    uint32_t n_trees;
    uint32_t *leaf_off;  /* n_trees + 1 */
    double *leaves;      /* leaf_off[n_trees]: weight * leaf value */
    /* gpu-naive */
    uint32_t *node_off;  /* n_trees + 1 */
    tsg_node *nodes;     /* node_off[n_trees] */
    /* gpu (gpu_params.h, tsg_qs_params) */
    uint32_t n_slots;
    uint32_t *slot_feature, *slot_flags; /* n_slots (at least one entry allocated) */
    uint32_t *node_first; /* n_trees + 1 (== node_off) */
    uint32_t *tree_word;  /* n_trees + 1 */
    uint32_t *word_entry; /* tree_word[n_trees] + 1 */
    tsg_entry *entries;   /* node_first[n_trees], grouped by word within each tree */
    tsg_wnode *wnodes;    /* node_first[n_trees], preorder within each tree */
    uint32_t n_blocks;
    uint32_t *block_tree; /* n_blocks + 1 */
    uint32_t block_nodes;
    /* the byte-code variant (tsg_centry): every slot's distinct thresholds, ascending */
    uint32_t *slot_thr;   /* n_slots + 1 */
    float *thr;           /* slot_thr[n_slots] */
    uint32_t n_bslots;
    uint32_t *bslot_slot, *bslot_base; /* n_bslots */
    tsg_centry *centries; /* node_first[n_trees], in the entries' order */
    tsg_cwnode *cwnodes;  /* node_first[n_trees], in the walk nodes' order */
    int codes_ok;         /* 0 when the byte slots number 2^24 or more (no centries) */
} tsg_layout;

/* Both engines' arrays for a model with no categorical nodes (engines see views), trees
 * cut into blocks of at most block_nodes nodes (0: TSG_BLOCK_NODES). Returns 0 on
 * success, 1 when out of memory, 2 when the model is beyond 2^32 nodes or leaves. */
struct ts_model;
int tsg_layout_build(const struct ts_model *m, uint32_t block_nodes, tsg_layout **out);
void tsg_layout_free(tsg_layout *l);

/* Kernel parameters pointing into the layout's host arrays (x, out and n_rows, stride
 * left for the caller; smem_nodes = block_nodes, x_shared and walk 0). */
void tsg_layout_naive_params(const tsg_layout *l, tsg_naive_params *p);
void tsg_layout_qs_params(const tsg_layout *l, tsg_qs_params *p);

#ifdef __cplusplus
}
#endif

#endif /* TS_GPU_LAYOUT_H */
