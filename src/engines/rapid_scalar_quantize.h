/* rapid_scalar_quantize.h: one group's slot codes lane by lane: the scalar kernel's quantizer, the definition the SIMD quantizers match, and their fallback. */
/*
 * No include guard: included once per ISA file after RS_LANES is defined. Codes are
 * stored XOR L->flip (rapid.h). Lanes >= nd get code 0.
 */
#define RS_SCALAR_QUANTIZE(NAME, CODE_T)                                                      \
    static void NAME(const rsl *L, const float *x, size_t stride, size_t nd, CODE_T *codes) {  \
        const tsq *q = &L->q;                                                                 \
        for (uint32_t s = 0; s < q->n_slots; s++) {                                           \
            const uint32_t col = q->f[q->slots[s].feature].column;                            \
            for (size_t l = 0; l < RS_LANES; l++) {                                           \
                uint32_t code = l < nd ? tsq_slot_code(q, s, x[l * stride + col]) : 0;        \
                codes[(size_t)s * RS_LANES + l] = (CODE_T)(code ^ L->flip);                   \
            }                                                                                 \
        }                                                                                     \
    }
RS_SCALAR_QUANTIZE(rs_scalar_quantize, uint8_t)
#undef RS_SCALAR_QUANTIZE
