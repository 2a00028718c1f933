/* coder.c: row-major exact codes for other engines, a group of rows at a time through the ISA quantizer (coder.h). */
#include "engines/coder.h"

#include <string.h>

ts_status tsc_coder_init(tsc_coder *c, const ts_model *m, ts_isa isa, ts_error *err) {
    memset(c, 0, sizeof *c);
    c->k = tsq_quantizer_for(isa);
    c->t.flip = c->k.flip;
    return tsq_build(&c->t.q, m, err);
}

void tsc_coder_free(tsc_coder *c) {
    if (c) tsq_free(&c->t.q);
}

size_t tsc_coder_scratch(const tsc_coder *c) {
    const size_t n = (size_t)(c->t.q.n_slots ? c->t.q.n_slots : 1) * c->k.lanes;
    return (n + 63) & ~(size_t)63;
}

/* A group at a time: the kernel's quantizer, then its interleaved codes into rows; a
 * group of less than a quarter of the lanes (a single row, say) row by row with the
 * scalar search instead, whose cost follows the rows, not the lanes. */
void tsc_code_rows(const tsc_coder *c, const float *x, size_t n_rows, size_t stride, uint8_t *out, size_t out_stride,
                   uint8_t *scratch) {
    const uint32_t lanes = c->k.lanes, ns = c->t.q.n_slots;
    const uint8_t flip = (uint8_t)c->t.flip;
    for (size_t g0 = 0; g0 < n_rows; g0 += lanes) {
        const size_t nd = n_rows - g0 < lanes ? n_rows - g0 : lanes;
        if (4 * nd < lanes) {
            const tsq *q = &c->t.q;
            for (size_t l = 0; l < nd; l++)
                for (uint32_t j = 0; j < q->n_used; j++) {
                    const float v = x[(g0 + l) * stride + q->f[j].column];
                    for (uint32_t s = q->slot_first[j]; s < q->slot_first[j + 1]; s++)
                        out[(g0 + l) * out_stride + s] = (uint8_t)tsq_slot_code(q, s, v);
                }
            continue;
        }
        c->k.quantize(&c->t, x + g0 * stride, stride, nd, scratch);
        for (size_t l = 0; l < nd; l++) {
            uint8_t *row = out + (g0 + l) * out_stride;
            for (uint32_t s = 0; s < ns; s++) row[s] = scratch[(size_t)s * lanes + l] ^ flip;
        }
    }
}
