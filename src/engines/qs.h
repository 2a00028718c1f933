/* qs.h: the scalar QuickScorer kernel, shared with vqs (its fallback without SIMD). */
#ifndef TS_ENGINES_QS_H
#define TS_ENGINES_QS_H

#include "engines/qs_layout.h"

/* Score rows with a layout (32- or 64-bit words), delta documents per block; bv is
 * scratch of qs_scratch_bytes(L, delta) bytes. */
void qs_score_layout(const qsl *L, uint32_t delta, const float *x, size_t n_rows, size_t stride, double *out,
                     uint64_t *bv);
size_t qs_scratch_bytes(const qsl *L, uint32_t delta);
/* Rows worth a thread of their own for this layout. */
size_t qs_rows_per_chunk(const qsl *L);

#endif /* TS_ENGINES_QS_H */
