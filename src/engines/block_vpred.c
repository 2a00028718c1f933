/* block_vpred.c: Block-VPred (Tang et al., SIGIR 2014): the vpred kernel in 2D blocks of tau trees x delta documents, SDSD order. */
#include <stdlib.h>

#include "common/error.h"
#include "engines/common/blocks.h"
#include "engines/engine.h"
#include "engines/common/vpred_layout.h"
#include "platform/cpu_caches.h"

/*
 * 2D blocking (Tang, Jin and Yang, paper 004, Algorithm 2: SDSD) over the vpred kernel:
 *
 *   for each block of tau trees                  (S)
 *     for each block of delta documents          (D)
 *       for each tree of the block               (S)
 *         for each group of v documents          (D)  one tree, v documents interleaved
 *
 * As in the paper, the tau trees and the delta documents are sized to fit L2 together:
 * the tree block stays in L2 while every document block goes through it, the document
 * block's keys stay in L2 while every tree of the block reads them, and the one tree
 * being run stays in L1 while all groups of the block go through it.
 *
 * Keys. The kernel reads keys, not rows (vpred_layout.h). A document block's keys are
 * made when the first tree block visits it and kept in scratch for the later tree
 * blocks: the scratch holds the keys of a "chunk" of up to BVP_CHUNK_BLOCKS document
 * blocks (at most BVP_MAX_CHUNK_BYTES, at least one block), and a batch larger than a
 * chunk is scored chunk after chunk, each in SDSD order. Within a chunk each tree block
 * comes from memory once and from L2 for the other document blocks. Measured (below):
 * making the keys again on every visit, with scratch for one block, was 8% slower at
 * 1,000 x 64 with 4 tree blocks; chunks of one block (which is DSDS) were 8-12% slower
 * at 10,000 x 64 with delta 64 or 128; chunks of 8 blocks and of all rows were alike.
 *
 * Sizes. Paper: "choose s and d so that s trees and d documents fit in L2". Measured
 * (1 thread, 48 KiB L1d, 2 MiB L2, v = 16, LightGBM models, 708-byte key rows; us per
 * document over tau 125 .. 2,000 x delta 64 .. 512): the surface is flat within 5% for
 * tau 125 .. 1,000 (trees of 0.25 to 2 MiB) and delta 128 .. 256 (keys of 90 to 180
 * KiB), 3-10% worse at delta 64 or 512. Defaults: tau trees fill L2 / 4 and delta
 * documents' keys L2 / 16 (together 5/16 of L2, leaving room for out[] and the rows
 * being read); cfg->tau and cfg->delta override them (delta rounded up to whole
 * groups of lanes, capped at BVP_MAX_BLOCK_BYTES of keys).
 *
 * SDSD against DSDS, the order this engine had first (for each document block: its
 * keys, then for each tree block of 2/3 of L1d, each group through the whole tree
 * block). Same machine and build, 1 thread, us per document, each at its defaults
 * (tau/delta), median of 3 runs of 5 repetitions, vpred alongside:
 *     model (rows)          SDSD            DSDS           vpred
 *     1,000 x 64 (2,000)     6.21 250/192    6.03 16/752    6.87
 *     10,000 x 64 (1,000)   80.0  257/192   82.8  16/752  103
 *     5,000 x 32 (2,000)    24.6  500/192   25.2  32/752   28.2
 *     20,000 x 64 (500)    170    257/192  169    16/752  265   (one run each)
 *     1,000 x 32 (2,000)     5.04 500/192    4.86 32/752    5.03 (one run each)
 * DSDS's inner loop has both a group's keys (11 KiB) and its tree block in L1; SDSD's
 * has the one tree in L1 and reads the block's keys from L2, and the groups' sums go
 * through out[] after every tree. Notes from the DSDS version had SDSD at 7.0 and 90 us
 * at 1,000 and 10,000 x 64 against DSDS's 5.9 and 78 (that SDSD code is not kept);
 * here, calling the generic kernel (vpl_run) per tree and group was 8% slower than
 * vpl_run_trees_over_groups, which runs one tree over all full groups of the block.
 *
 * Scores accumulate in `out`, which starts at base_score; tree blocks are taken in
 * order and trees in order inside a block, so every document's sum runs over the
 * trees in order, as the reference's does.
 */

typedef struct bvp_state {
    vpl L;
    uint32_t tau, delta;
    size_t chunk_rows; /* documents whose keys the scratch holds: whole blocks */
} bvp_state;

static void bvp_free(void *p) {
    bvp_state *s = p;
    if (!s) return;
    vpl_free(&s->L);
    free(s);
}

/* A document block's keys may take at most this much scratch memory (a block of one
 * group of lanes is always allowed). */
#define BVP_MAX_BLOCK_BYTES (16u << 20)
/* Document blocks whose keys a chunk keeps, and the most bytes they may take beyond
 * one block. */
#define BVP_CHUNK_BLOCKS 16u
#define BVP_MAX_CHUNK_BYTES (16u << 20)

/* Blocks of keys per chunk: BVP_CHUNK_BLOCKS, fewer if they would pass
 * BVP_MAX_CHUNK_BYTES, at least one. */
static size_t chunk_blocks(size_t block_bytes) {
    size_t k = BVP_MAX_CHUNK_BYTES / (block_bytes ? block_bytes : 1);
    return k < 1 ? 1 : k > BVP_CHUNK_BLOCKS ? BVP_CHUNK_BLOCKS : k;
}

static ts_status bvp_prepare(const ts_model *m, const tse_config *cfg, void **out, tse_layout *layout, ts_error *err) {
    bvp_state *s = calloc(1, sizeof *s);
    if (!s) return ts_fail(err, TS_ERR_NO_MEMORY, "block-vpred: out of memory");
    uint32_t lanes = cfg->lanes ? cfg->lanes : vpl_default_lanes(m, 1);
    ts_status st = vpl_build(&s->L, m, lanes, "block-vpred", err);
    if (st != TS_OK) {
        free(s);
        return st;
    }
    const vpl *L = &s->L;
    size_t row_bytes = vpl_row_bytes(L);
    const tsr_caches *c = tsr_cache_sizes();
    const tsb_sizing z = {vpl_model_bytes(L), c->l2 / 4, row_bytes, c->l2 / 16, L->lanes, BVP_MAX_BLOCK_BYTES};
    tsb_block_sizes(m, cfg, &z, &s->tau, &s->delta);
    s->chunk_rows = (size_t)s->delta * chunk_blocks((size_t)s->delta * row_bytes);
    size_t chunk = tsb_rows_per_chunk(L->steps, 0.6);
    chunk = (chunk + L->lanes - 1) / L->lanes * L->lanes;
    *layout = (tse_layout){TS_ISA_SCALAR, s->tau, s->delta, row_bytes * s->chunk_rows, chunk, L->lanes};
    *out = s;
    return TS_OK;
}

/* Keys of rows [0, n) into consecutive groups of lanes from `keys`; their sums start
 * at base_score. */
static void bvp_keys(const vpl *L, const float *x, size_t n, size_t stride, uint32_t *keys, double *out) {
    const size_t group_keys = vpl_row_bytes(L) / sizeof(uint32_t) * L->lanes;
    for (size_t r = 0, g = 0; r < n; r += L->lanes, g++) {
        uint32_t k = n - r < L->lanes ? (uint32_t)(n - r) : L->lanes;
        vpl_keys(L, x + r * stride, k, stride, keys + g * group_keys);
        for (uint32_t j = 0; j < k; j++) out[r + j] = L->base_score;
    }
}

/* Rows [0, n_rows) of one chunk (n_rows <= chunk_rows) in SDSD order; the keys of
 * document block b sit at keys + b * delta * n_cols (delta is whole groups). */
static void bvp_chunk(const bvp_state *s, const float *x, size_t n_rows, size_t stride, double *out, uint32_t *keys) {
    const vpl *L = &s->L;
    const size_t block_keys = (size_t)s->delta * (vpl_row_bytes(L) / sizeof(uint32_t));
    if (L->n_trees == 0) {
        for (size_t r = 0; r < n_rows; r++) out[r] = L->base_score;
        return;
    }
    for (uint32_t t0 = 0, t1; t0 < L->n_trees; t0 = t1) {
        t1 = L->n_trees - t0 < s->tau ? L->n_trees : t0 + s->tau;
        uint32_t *bk = keys;
        for (size_t r0 = 0; r0 < n_rows; r0 += s->delta, bk += block_keys) {
            size_t n = n_rows - r0 < s->delta ? n_rows - r0 : s->delta;
            if (t0 == 0) bvp_keys(L, x + r0 * stride, n, stride, bk, out + r0);
            vpl_run_trees_over_groups(L, t0, t1, bk, n, out + r0);
        }
    }
}

static void bvp_score(const void *p, const float *x, size_t n_rows, size_t stride, double *out, void *scratch) {
    const bvp_state *s = p;
    for (size_t c0 = 0; c0 < n_rows; c0 += s->chunk_rows) {
        size_t n = n_rows - c0 < s->chunk_rows ? n_rows - c0 : s->chunk_rows;
        bvp_chunk(s, x + c0 * stride, n, stride, out + c0, scratch);
    }
}

const tse_engine tse_engine_block_vpred = {
    .id = TS_ENGINE_BLOCK_VPRED, .name = "block-vpred", .prepare = bvp_prepare, .score = bvp_score, .free = bvp_free,
    .plan_candidate = tse_plan_always,
};
