/* rapid_scalar_quantize.h: one group's codes lane by lane: the scalar kernel's quantizer, the definition the SIMD quantizers match, and their fallback. */
/*
 * No include guard: included once per ISA file after RS_LANES is defined, and, where the
 * ISA compares signed bytes (AVX2), RS_FLIP8 / RS_FLIP16: codes are stored XOR these
 * (0x80, 0x8000) so that a signed compare orders them as unsigned. The largest code and
 * the lane masks are those of the unflipped codes.
 */
#ifndef RS_FLIP8
#define RS_FLIP8 0
#define RS_FLIP16 0
#endif

#define RS_SCALAR_QUANTIZE(NAME, CODE_T, FLIP)                                                \
    static void NAME(const tsq *q, const float *x, size_t stride, size_t nd, CODE_T *codes, uint32_t *maxc, \
                     uint64_t *nan, uint64_t *zero) {                                         \
        for (uint32_t j = 0; j < q->n_used; j++) {                                            \
            const uint32_t col = q->f[j].column, hz = q->f[j].has_zero;                       \
            uint32_t mc = 0;                                                                  \
            uint64_t nm = 0, zm = 0;                                                          \
            for (size_t l = 0; l < RS_LANES; l++) {                                           \
                uint32_t code = 0;                                                            \
                if (l < nd) {                                                                 \
                    float v = x[l * stride + col];                                            \
                    if (v != v)                                                               \
                        nm |= 1ull << l;                                                      \
                    else if (hz && v >= -TSM_ZERO_RANGE && v <= TSM_ZERO_RANGE)               \
                        zm |= 1ull << l;                                                      \
                    else                                                                      \
                        code = tsq_code(q, j, v);                                             \
                }                                                                             \
                codes[(size_t)j * RS_LANES + l] = (CODE_T)(code ^ (FLIP));                    \
                if (code > mc) mc = code;                                                     \
            }                                                                                 \
            maxc[j] = mc;                                                                     \
            nan[j] = nm;                                                                      \
            zero[j] = zm;                                                                     \
        }                                                                                     \
    }
RS_SCALAR_QUANTIZE(rs_scalar_quantize8, uint8_t, RS_FLIP8)
RS_SCALAR_QUANTIZE(rs_scalar_quantize16, uint16_t, RS_FLIP16)
#undef RS_SCALAR_QUANTIZE
