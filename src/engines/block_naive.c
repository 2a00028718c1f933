/* block_naive.c: naive node-by-node traversal in 2D blocks of tau trees x delta documents (SDSD order of Tang et al., SIGIR 2014). */
#include <stdlib.h>
#include <string.h>

#include "common/error.h"
#include "engines/engine.h"
#include "engines/common/blocks.h"
#include "platform/cpu_caches.h"

/*
 * The layout is naive's (every tree's nodes in one array, child references relative to
 * the tree, leaf values pre-multiplied by the tree weight); the loop order is SDSD
 * (paper 004, Algorithm 2):
 *
 *   for each block of tau trees              (S)
 *     for each block of delta documents      (D)
 *       for each tree of the block           (S)
 *         for each document of the block     (D)   one traversal
 *
 * Each tree goes over all rows of the block, which are best in L1 (delta rows of the
 * model's features fill L1d), and the tree block is read again for every document
 * block, from L2 (tau trees fill half of it). Measured (1 thread, 48 KiB L1d, 2 MiB
 * L2; us per document, these sizes against naive and the best of a sweep of tau 100
 * to all and delta 32 to 1,024): 10,000 x 64 leaves 131 (naive 839, best 131; delta
 * 1,024: 173); 5,000 x 32: 91 (258, 90); 1,000 x 64: 45 (64, 42 at delta 1,024);
 * 1,000 x 32: 24 (48, 23). Documents inside, trees outside is the paper's order:
 * the other way round (each document through the tree block) was 1.3-1.9x slower.
 *
 * Scores accumulate in `out`, which starts at base_score; blocks and the trees inside
 * them are taken in order, so each document's sum runs over the trees in order.
 */

typedef struct bn_tree {
    uint32_t node_offset;
    uint32_t leaf_offset;
    uint32_t n_nodes;
} bn_tree;

typedef struct bn_state {
    double base_score;
    uint32_t n_trees;
    uint32_t tau, delta;
    bn_tree *trees;
    tsm_node *nodes;
    double *leaves;
} bn_state;

static void bn_free(void *p) {
    bn_state *s = p;
    if (!s) return;
    free(s->trees);
    free(s->nodes);
    free(s->leaves);
    free(s);
}

static ts_status bn_copy(bn_state *s, const ts_model *m, uint64_t n_nodes, uint64_t n_leaves) {
    s->trees = malloc(((size_t)m->n_trees + 1) * sizeof *s->trees);
    s->nodes = malloc(((size_t)n_nodes + 1) * sizeof *s->nodes);
    s->leaves = malloc(((size_t)n_leaves + 1) * sizeof *s->leaves);
    if (!s->trees || !s->nodes || !s->leaves) return TS_ERR_NO_MEMORY;
    uint32_t node_off = 0, leaf_off = 0;
    for (uint32_t t = 0; t < m->n_trees; t++) {
        const tsm_tree *tr = &m->trees[t];
        s->trees[t] = (bn_tree){node_off, leaf_off, tr->n_nodes};
        if (tr->n_nodes) memcpy(s->nodes + node_off, tr->nodes, tr->n_nodes * sizeof *tr->nodes);
        for (uint32_t l = 0; l < tr->n_leaves; l++) s->leaves[leaf_off + l] = tr->weight * tr->leaf_values[l];
        node_off += tr->n_nodes;
        leaf_off += tr->n_leaves;
    }
    return TS_OK;
}

static ts_status bn_prepare(const ts_model *m, const tse_config *cfg, void **out, tse_layout *layout,
                            ts_error *err) {
    uint64_t n_nodes = 0, n_leaves = 0, visits = 0;
    for (uint32_t t = 0; t < m->n_trees; t++) {
        n_nodes += m->trees[t].n_nodes;
        n_leaves += m->trees[t].n_leaves;
        visits += m->trees[t].depth;
    }
    if (n_nodes > UINT32_MAX || n_leaves > UINT32_MAX)
        return ts_fail(err, TS_ERR_LIMIT, "block-naive: the model has more than 2^32 nodes");
    bn_state *s = calloc(1, sizeof *s);
    if (!s) return ts_fail(err, TS_ERR_NO_MEMORY, "block-naive: out of memory");
    s->base_score = m->base_score;
    s->n_trees = m->n_trees;
    if (bn_copy(s, m, n_nodes, n_leaves) != TS_OK) {
        bn_free(s);
        return ts_fail(err, TS_ERR_NO_MEMORY, "block-naive: out of memory");
    }
    /* A document block holds rows of the model's features (the traversal reads each
     * row where it is: no copy, no scratch). */
    size_t row_bytes = ((size_t)m->n_features + 1) * sizeof(float);
    const tsr_caches *c = tsr_cache_sizes();
    const tsb_sizing z = {n_nodes * sizeof(tsm_node) + n_leaves * sizeof(double), c->l2 / 2, row_bytes, c->l1d, 1, 0};
    tsb_block_sizes(m, cfg, &z, &s->tau, &s->delta);
    /* Depth overestimates the nodes a traversal visits; naive visits cost ~2 ns. */
    *layout = (tse_layout){TS_ISA_SCALAR, s->tau, s->delta, 0, tsb_rows_per_chunk(visits, 2.0), 0};
    *out = s;
    return TS_OK;
}

/* Trees [t0, t1) on rows [0, n): one tree at a time over all rows of the block. */
static void bn_block(const bn_state *s, uint32_t t0, uint32_t t1, const float *x, size_t n, size_t stride,
                     double *out) {
    for (uint32_t t = t0; t < t1; t++) {
        const bn_tree *tr = &s->trees[t];
        const tsm_node *nodes = s->nodes + tr->node_offset;
        const double *leaves = s->leaves + tr->leaf_offset;
        for (size_t r = 0; r < n; r++) {
            const float *row = x + r * stride;
            int32_t c = tr->n_nodes ? 0 : -1;
            while (c >= 0) {
                const tsm_node *nd = &nodes[c];
                c = tsm_node_goes_left(nd, row[nd->feature]) ? nd->left : nd->right;
            }
            out[r] += leaves[(uint32_t)~c];
        }
    }
}

static void bn_score(const void *p, const float *x, size_t n_rows, size_t stride, double *out, void *scratch) {
    const bn_state *s = p;
    (void)scratch;
    for (size_t r = 0; r < n_rows; r++) out[r] = s->base_score;
    for (uint32_t t0 = 0; t0 < s->n_trees; t0 += s->tau) {
        uint32_t t1 = s->n_trees - t0 < s->tau ? s->n_trees : t0 + s->tau;
        for (size_t r0 = 0; r0 < n_rows; r0 += s->delta) {
            size_t n = n_rows - r0 < s->delta ? n_rows - r0 : s->delta;
            bn_block(s, t0, t1, x + r0 * stride, n, stride, out + r0);
        }
    }
}

const tse_engine tse_engine_block_naive = {
    .id = TS_ENGINE_BLOCK_NAIVE, .name = "block-naive", .prepare = bn_prepare, .score = bn_score, .free = bn_free,
    .plan_candidate = tse_plan_plain_walks,
};
