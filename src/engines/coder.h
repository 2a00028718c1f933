/* coder.h: exact feature codes (quant.h) of whole rows, row-major, from the CPU's SIMD quantizer: how engines other than rapid (ifelse) get codes. */
#ifndef TS_ENGINES_CODER_H
#define TS_ENGINES_CODER_H

#include <stddef.h>
#include <stdint.h>

#include "common/error.h"
#include "engines/common/quant.h"

/*
 * Row-major codes, one byte per slot (quant.h), from the quantizer of the ISA kernels
 * (quant.h "Quantizers", tsq_quantizer_for): a row's codes at out + r * out_stride, its
 * slot s's at [s], unflipped. tsc_coder_scratch bytes of scratch (one group's
 * interleaved codes).
 */
typedef struct tsc_coder {
    tsq_tables t;        /* the codes, and the flip k's quantizer stores them XOR */
    tsq_quantizer_kind k;
} tsc_coder;

ts_status tsc_coder_init(tsc_coder *c, const ts_model *m, ts_isa isa, ts_error *err);
void tsc_coder_free(tsc_coder *c);
size_t tsc_coder_scratch(const tsc_coder *c);
void tsc_code_rows(const tsc_coder *c, const float *x, size_t n_rows, size_t stride, uint8_t *out, size_t out_stride,
                   uint8_t *scratch);

#endif /* TS_ENGINES_CODER_H */
