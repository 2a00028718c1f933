/* vqs.c: vectorized QuickScorer (Lucchese et al., SIGIR 2016): the generic part, which lays out the model and picks the ISA kernel. */
#include <stdlib.h>

#include "common/error.h"
#include "engines/common/qs_layout.h"
#include "engines/vqs.h"

/*
 * vQS scores `lanes` documents per SIMD register in both steps of QuickScorer:
 *   - mask computation: for one feature, the documents' values in one register are
 *     compared with each threshold of the list at once; the lanes where the node is
 *     false AND the tree's bitvectors (one register holding that tree's word for every
 *     lane) under that lane mask, and the scan stops when no lane is left;
 *   - score computation: the exit leaf of every lane (count of trailing zeros) indexes
 *     the tree's leaf values with a gather, added to a register of double scores.
 * The layout (qs_layout.h) is QuickScorer's; only the bitvectors are interleaved per
 * lane. Kernels are written once (templates/vqs_template.h) and built per ISA in
 * x86/vqs_{sse42,avx2,avx512}.c with that ISA's flags; this file is generic and only
 * picks one, at prepare time, from the ISA the scorer resolved (cpu.h). Without SIMD
 * (TS_ISA_SCALAR or another architecture) it scores with the scalar qs kernel.
 */

/* Batches of at most SMALL_BATCH[i] rows use the kernel of level i (NULL: the scalar
 * kernel), when the scorer may use that level: a register of 16 lanes holding one
 * document does the work of a whole register for it. Measured on the demo model
 * (300 x 31 leaves), microseconds per document: one row: qs 5.0, sse4.2 8.1, avx512
 * 10.4; four rows: qs 4.5, sse4.2 2.7, avx512 3.2. */
static const size_t small_batch[] = {2, 4, 8};

typedef struct vqs_state {
    qsl L;
    uint32_t delta;
    vqs_kernel kernel;       /* NULL: the scalar qs kernel */
    vqs_kernel small[3];     /* kernels for small batches (see small_batch), NULL = scalar */
    uint32_t n_small;        /* entries of small[] in use: those below the kernel's level */
} vqs_state;

static void vqs_free(void *p) {
    vqs_state *s = p;
    if (!s) return;
    qsl_free(&s->L);
    free(s);
}

static int all_trees_within(const ts_model *m, uint32_t leaves) {
    for (uint32_t t = 0; t < m->n_trees; t++)
        if (m->trees[t].n_leaves > leaves) return 0;
    return 1;
}

static vqs_kernel pick(const vqs_kernels *k, uint32_t word_bits, uint32_t words) {
    return word_bits == 32 ? k->w32 : words == 1 ? k->w64 : k->wn;
}

static ts_status vqs_prepare(const ts_model *m, const tse_config *cfg, void **out, tse_layout *layout,
                             ts_error *err) {
    const vqs_kernels *k = tsk_vqs(cfg->isa);
    uint32_t words = qsl_words64(m), tau, delta;
    if (words == 0) words = 1; /* qsl_build reports the error */
    uint32_t word_bits = k && words == 1 && all_trees_within(m, 32) ? 32 : 64;
    uint32_t lanes = k ? k->lanes : 1;
    vqs_state *s = calloc(1, sizeof *s);
    if (!s) return ts_fail(err, TS_ERR_NO_MEMORY, "vqs: out of memory");
    /* One group of documents per block, and as many trees as keep that group's
     * bitvectors in three quarters of L1: measured at 10,000 x 64 leaves with AVX-512,
     * 300 trees (38 KiB of bitvectors) scored 1.4x faster than 750 (96 KiB) and 1.2x
     * faster than 100 (fewer trees per block pay the per-feature overhead more often);
     * more documents per block were slower. */
    const qsl_sizing z = {4 + 2 + word_bits / 8, (size_t)words * word_bits / 8, lanes, lanes, 1, 0.75};
    qsl_block_sizes(m, cfg, &z, &tau, &delta);
    ts_status st = qsl_build(&s->L, m, tau, word_bits, err);
    if (st != TS_OK) {
        free(s);
        return st;
    }
    s->delta = delta;
    if (k) {
        s->kernel = pick(k, word_bits, words);
        /* Lower levels for small batches: scalar, then every SIMD level below k's. The
         * scratch and delta of k's level suit them (delta is a multiple of 16, 8, 4). */
        s->small[s->n_small++] = NULL;
        for (ts_isa lvl = TS_ISA_SSE42; lvl < k->isa; lvl++)
            s->small[s->n_small++] = pick(tsk_vqs(lvl), word_bits, words);
    }
    size_t scratch = k ? vqs_scratch_bytes(&s->L, delta) : qsl_scratch_bytes(&s->L, delta);
    size_t chunk = qsl_rows_per_chunk(&s->L) / 4 + 1; /* vqs is about 4x faster per row than qs */
    if (chunk < lanes) chunk = lanes;
    *layout = (tse_layout){k ? k->isa : TS_ISA_SCALAR, s->L.tau, delta, scratch, chunk, 0};
    *out = s;
    return TS_OK;
}

static void vqs_score(const void *p, const float *x, size_t n_rows, size_t stride, double *out, void *scratch) {
    const vqs_state *s = p;
    vqs_kernel kernel = s->kernel;
    for (uint32_t i = 0; i < s->n_small; i++)
        if (n_rows <= small_batch[i]) {
            kernel = s->small[i];
            break;
        }
    if (kernel)
        kernel(&s->L, s->delta, x, n_rows, stride, out, scratch);
    else
        qsl_score(&s->L, s->delta, x, n_rows, stride, out, scratch);
}

/* The planner times vqs whenever the CPU has SIMD (qs otherwise), on trees narrow enough
 * for bitvectors (tse_plan_bitvectors). */
static int vqs_plan_candidate(const ts_model *m, const tse_config *cfg) {
    return cfg->isa > TS_ISA_SCALAR && tse_plan_bitvectors(m);
}

const tse_engine tse_engine_vqs = {
    .id = TS_ENGINE_VQS, .name = "vqs", .prepare = vqs_prepare, .score = vqs_score, .free = vqs_free,
    .plan_candidate = vqs_plan_candidate, .tree_groups = qsl_hook_tree_groups,
    .tree_group_first = qsl_hook_tree_group_first, .tree_values = qsl_hook_tree_values,
};
