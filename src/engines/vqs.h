/* vqs.h: the interface between the generic vqs engine and its per-ISA kernels in src/engines/x86/. */
#ifndef TS_ENGINES_VQS_H
#define TS_ENGINES_VQS_H

#include "engines/common/kernels.h"
#include "engines/common/qs_layout.h"

/*
 * A kernel scores n_rows rows with a layout, `delta` documents per block (a multiple of
 * `lanes`), in `scratch` of vqs_scratch_bytes() bytes laid out as:
 *   xt   delta * n_used floats: the block's documents transposed, column-major per
 *        group of `lanes` documents: xt[(g * n_used + slot) * lanes + lane]
 *   acc  delta doubles: the block's running scores
 *   bv   (delta / lanes) groups * tau trees * words * lanes words of word_bits: group
 *        g's bitvectors, word w of tree t of lane l at ((g * tau + t) * words + w) *
 *        lanes + l, so one tree's word for all lanes is one SIMD register
 * Each part starts on a 64-byte boundary. Padding lanes of a short last group read -inf
 * and their results are dropped.
 */
typedef void (*vqs_kernel)(const qsl *L, uint32_t delta, const float *x, size_t n_rows, size_t stride, double *out,
                           void *scratch);

typedef struct vqs_kernels {
    ts_isa isa;
    uint32_t lanes;          /* documents per register (float32 compares) */
    vqs_kernel w32;          /* word_bits 32, trees of <= 32 leaves */
    vqs_kernel w64;          /* word_bits 64, one word: trees of 33..64 leaves */
    vqs_kernel wn;           /* word_bits 64, several words: wider trees */
} vqs_kernels;

/* The kernels per ISA (tse_vqs_sse42, ...) and tsk_vqs, which picks one: common/kernels.h. */

/* Byte offsets of the scratch parts, and the total. */
static inline size_t vqs_round64(size_t n) { return (n + 63) & ~(size_t)63; }
static inline size_t vqs_acc_offset(const qsl *L, uint32_t delta) {
    return vqs_round64((size_t)delta * L->n_used * sizeof(float));
}
static inline size_t vqs_bv_offset(const qsl *L, uint32_t delta) {
    return vqs_acc_offset(L, delta) + vqs_round64((size_t)delta * sizeof(double));
}
static inline size_t vqs_scratch_bytes(const qsl *L, uint32_t delta) {
    return vqs_bv_offset(L, delta) + (size_t)delta * L->tau * L->words * (L->word_bits / 8);
}

#endif /* TS_ENGINES_VQS_H */
