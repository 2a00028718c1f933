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
/* tree_values over the layout's tree blocks (the groups): one document's exit-leaf
 * values of blocks [b0, b1), bv of qs_scratch_bytes(L, 1) bytes at least. The engine
 * hooks take a state whose first member is its qsl (qs's and vqs's). */
uint32_t qs_layout_group_first(const qsl *L, uint32_t g);
void qs_layout_tree_values(const qsl *L, const float *x, uint32_t b0, uint32_t b1, double *vals, void *bv);
uint32_t qs_tree_groups(const void *state);
uint32_t qs_tree_group_first(const void *state, uint32_t g);
void qs_tree_values(const void *state, const float *x, uint32_t g0, uint32_t g1, double *vals, void *scratch);

#endif /* TS_ENGINES_QS_H */
