/* qs.c: QuickScorer (Lucchese et al., SIGIR 2015) and its BlockWise variant, one document at a time: the engine (block sizes, state), on the scalar kernel of common/qs_kernel.c. */
#include <stdlib.h>

#include "common/error.h"
#include "engines/common/qs_layout.h"

/* The layout and its invariants are in common/qs_layout.h, the scalar kernel that scores
 * it (shared with vqs, its fallback without SIMD) in common/qs_kernel.c. */

typedef struct qs_state {
    qsl L;
    uint32_t delta;
} qs_state;

static void qs_free(void *p) {
    qs_state *s = p;
    if (!s) return;
    qsl_free(&s->L);
    free(s);
}

static ts_status qs_prepare(const ts_model *m, const tse_config *cfg, void **out, tse_layout *layout, ts_error *err) {
    qs_state *s = calloc(1, sizeof *s);
    if (!s) return ts_fail(err, TS_ERR_NO_MEMORY, "qs: out of memory");
    uint32_t words = qsl_words64(m), tau, delta;
    if (words == 0) words = 1; /* qsl_build reports the error */
    /* Measured on this project's 10,000 and 20,000 x 64-leaf models (docs/benchmarks.md):
     * blocks whose lists fill about half of L2, and 32 documents whose bitvectors fill
     * at most a quarter of it, are 1.4-1.5x faster than one block of all trees, one
     * document at a time; the optimum is flat from 500 to 2,000 trees, 16 to 64 docs. */
    const qsl_sizing z = {4 + 2 + 8, (size_t)words * 8, 1, 32, 0, 0.25};
    qsl_block_sizes(m, cfg, &z, &tau, &delta);
    ts_status st = qsl_build(&s->L, m, tau, 64, err);
    if (st != TS_OK) {
        free(s);
        return st;
    }
    s->delta = delta;
    *layout = (tse_layout){TS_ISA_SCALAR, s->L.tau, delta, qsl_scratch_bytes(&s->L, delta),
                           qsl_rows_per_chunk(&s->L), 0};
    *out = s;
    return TS_OK;
}

static void qs_score(const void *p, const float *x, size_t n_rows, size_t stride, double *out, void *scratch) {
    const qs_state *s = p;
    qsl_score(&s->L, s->delta, x, n_rows, stride, out, scratch);
}

/* The planner times qs wherever bitvectors may pay (tse_plan_bitvectors): with SIMD, vqs
 * runs the same layout faster on batches, but one row runs qs's scalar kernel in vqs too,
 * on vqs's smaller blocks: qs measured 1.15x faster on one row of 500 x 64-leaf trees and
 * 1.4x on 20,000, and faster still split across threads (its larger blocks, fewer
 * hand-offs). The planner's probe drops it where it cannot win. */
static int qs_plan_candidate(const ts_model *m, const tse_config *cfg) {
    (void)cfg;
    return tse_plan_bitvectors(m);
}

const tse_engine tse_engine_qs = {
    .id = TS_ENGINE_QS, .name = "qs", .prepare = qs_prepare, .score = qs_score, .free = qs_free,
    .plan_candidate = qs_plan_candidate, .tree_groups = qsl_hook_tree_groups,
    .tree_group_first = qsl_hook_tree_group_first, .tree_values = qsl_hook_tree_values,
};
