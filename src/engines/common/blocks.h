/* blocks.h: block sizes (tau trees x delta documents) of the 2D-blocked engines and rows per thread chunk, shared by vpred, block-vpred, block-naive (and the equal-blocks step of qs and rapid). */
#ifndef TS_ENGINES_BLOCKS_H
#define TS_ENGINES_BLOCKS_H

#include <stddef.h>
#include <stdint.h>

#include "engines/engine.h"

/* Rows worth a thread of their own (~1 ms of work), given the kernel steps a document
 * costs per tree (sum of depths, or nodes visited) and nanoseconds per step. */
size_t tsb_rows_per_chunk(uint64_t steps_per_row, double ns_per_step);

/* What the blocked engines (block-naive, block-vpred) tell tsb_block_sizes. */
typedef struct tsb_sizing {
    uint64_t tree_bytes;      /* bytes a traversal reads of all trees together */
    size_t tree_budget;       /* bytes a block of trees may take */
    size_t doc_bytes;         /* bytes of one document in a block */
    size_t doc_budget;        /* bytes a block of documents may take */
    uint32_t lanes;           /* delta is rounded up to a multiple */
    size_t max_block_bytes;   /* cap on delta * doc_bytes even when delta is given; 0: none */
} tsb_sizing;

/* Most documents in a block. */
#define TSB_MAX_DELTA (1u << 20)

/* Block sizes tau (trees) and delta (documents) of the 2D-blocked engines (Tang et
 * al.): a non-zero cfg->tau / cfg->delta is kept (TS_BLOCK_ALL = one block of all
 * trees), else tau trees of the average size fill tree_budget (blocks made equal) and
 * delta documents doc_budget. delta is capped by max_block_bytes and TSB_MAX_DELTA and
 * rounded up to whole groups of lanes. (qs_layout.h's qsl_block_sizes and rapid's
 * block_trees have rules of their own; they share tsb_given_tau and tsb_equal_blocks.) */
void tsb_block_sizes(const ts_model *m, const tse_config *cfg, const tsb_sizing *z, uint32_t *tau, uint32_t *delta);

/* The trees per block the caller gave (cfg->tau; TS_BLOCK_ALL: all n, n >= 1), or 0 when
 * the engine is to derive them: the rule qs, vqs, rapid and the 2D-blocked engines share. */
uint32_t tsb_given_tau(const tse_config *cfg, uint32_t n);

/* Blocks of equal size: n trees (n >= 1) in blocks of at most tau (tau >= 1) become
 * ceil(n / tau) blocks of ceil(n / that) trees (1,000 trees at tau 751: two blocks of
 * 500, not 751 + 249). */
uint32_t tsb_equal_blocks(uint32_t n, uint32_t tau);

#endif /* TS_ENGINES_BLOCKS_H */
