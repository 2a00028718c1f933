/* vpred.c: VPred (Asadi et al., TKDE 2014): branch-free Pred traversal, depth-unrolled, v documents interleaved. */
#include <stdlib.h>

#include "common/error.h"
#include "engines/common/blocks.h"
#include "engines/engine.h"
#include "engines/common/vpred_layout.h"

/*
 * The layout, the keys and the kernel are in vpred_layout.h. Documents are scored in
 * groups of v (the lanes): the group's rows are turned into keys in the scratch
 * memory, then every tree is traversed by all v documents together, one level at a
 * time (document-ordered traversal, as in the paper). A last group of fewer documents
 * runs the same kernel with fewer lanes.
 */

typedef struct vpred_state {
    vpl L;
} vpred_state;

static void vpred_free(void *p) {
    vpred_state *s = p;
    if (!s) return;
    vpl_free(&s->L);
    free(s);
}

static ts_status vpred_prepare(const ts_model *m, const tse_config *cfg, void **out, tse_layout *layout,
                               ts_error *err) {
    vpred_state *s = calloc(1, sizeof *s);
    if (!s) return ts_fail(err, TS_ERR_NO_MEMORY, "vpred: out of memory");
    uint32_t lanes = cfg->lanes ? cfg->lanes : vpl_default_lanes(m, 0);
    ts_status st = vpl_build(&s->L, m, lanes, "vpred", err);
    if (st != TS_OK) {
        free(s);
        return st;
    }
    const vpl *L = &s->L;
    size_t chunk = tsb_rows_per_chunk(L->steps, 0.6);
    chunk = (chunk + L->lanes - 1) / L->lanes * L->lanes;
    *layout = (tse_layout){TS_ISA_SCALAR, 0, 0, vpl_row_bytes(L) * L->lanes, chunk, L->lanes};
    *out = s;
    return TS_OK;
}

static void vpred_score(const void *p, const float *x, size_t n_rows, size_t stride, double *out, void *scratch) {
    const vpl *L = &((const vpred_state *)p)->L;
    uint32_t *keys = scratch;
    for (size_t r = 0; r < n_rows; r += L->lanes) {
        uint32_t n = n_rows - r < L->lanes ? (uint32_t)(n_rows - r) : L->lanes;
        vpl_keys(L, x + r * stride, n, stride, keys);
        for (uint32_t j = 0; j < n; j++) out[r + j] = L->base_score;
        vpl_run(L, 0, L->n_trees, keys, n, out + r);
    }
}

const tse_engine tse_engine_vpred = {
    .id = TS_ENGINE_VPRED, .name = "vpred", .prepare = vpred_prepare, .score = vpred_score, .free = vpred_free,
    .plan_candidate = tse_plan_always,
};
