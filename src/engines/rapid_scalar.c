/* rapid_scalar.c: the rapid engine's scalar kernel (8 documents per uint64_t), instantiated from templates/rapid_template.h as x86/rapid_{avx2,avx512}.c instantiate the SIMD ones. */
#include <string.h>

#include "engines/rapid.h"

/* Eight lanes, one byte each in a uint64_t. */
typedef uint64_t rs_v;

static inline rs_v rs_ones(void) { return ~0ull; }

typedef uint32_t rs_kv;   /* k + 1, XOR the flip */
typedef uint64_t rs_mv;   /* the mask in every byte */
static inline rs_kv rs_k(const rs_entry *e) { return e->k4 & 0xFF; }
static inline rs_mv rs_m(const rs_entry *e) { return 0x0101010101010101ull * (e->m4 & 0xFF); }

static inline rs_v rs_update(const rsl *L, rs_v row, const uint8_t *codes, rs_kv kv, rs_mv m) {
    const uint32_t k1 = kv ^ L->tables.flip;
    uint64_t fail = 0;
    for (int l = 0; l < 8; l++)
        if ((uint32_t)(codes[l] ^ L->tables.flip) >= k1) fail |= 0xFFull << (8 * l);
    return row & ~(fail & ~m);
}

static inline rs_v rs_zeros(void) { return 0; }
static inline rs_kv rs_z(const rs_skip *s) { return s->z4 & 0xFF; }

static inline rs_v rs_row_start(rs_v skip, uint32_t j) {
    rs_v row = 0;
    for (int l = 0; l < 8; l++) {
        const uint32_t z = (uint32_t)(skip >> (8 * l) & 0xFF), below = z > 8 * j ? z - 8 * j : 0;
        row |= (uint64_t)(below >= 8 ? 0 : 0xFFu << below & 0xFF) << (8 * l);
    }
    return row;
}

static inline void rs_update_skip(const rsl *L, rs_v *row, rs_v *skip, const uint8_t *codes, rs_kv kv, rs_mv m,
                                  rs_kv z) {
    const uint32_t k1 = kv ^ L->tables.flip;
    for (int l = 0; l < 8; l++)
        if ((uint32_t)(codes[l] ^ L->tables.flip) >= k1) {
            *row &= ~(0xFFull << (8 * l)) | (m & 0xFFull << (8 * l));
            if ((uint32_t)(*skip >> (8 * l) & 0xFF) < z) *skip = (*skip & ~(0xFFull << (8 * l))) | (uint64_t)z << (8 * l);
        }
}

/* Exit leaves of 8 lanes: the first non-zero row of each, then its lowest bit. */
typedef struct rs_exit {
    uint32_t leaf[8];
    uint32_t found;
} rs_exit;

static inline void rs_exit_init(rs_exit *x) { memset(x, 0, sizeof *x); }

static inline int rs_exit_row(rs_exit *x, rs_v row, uint32_t j) {
    for (int l = 0; l < 8; l++) {
        uint32_t b = (uint32_t)(row >> (8 * l)) & 0xFF;
        if (b && !(x->found >> l & 1)) {
            x->found |= 1u << l;
            x->leaf[l] = 8 * j + (uint32_t)__builtin_ctz(b);
        }
    }
    return x->found == 0xFF;
}

static inline void rs_exit_add(const rs_exit *x, const double *leaves, uint32_t rows, double *acc, uint32_t lanes) {
    (void)rows;
    for (uint32_t l = 0; l < lanes; l++) acc[l] += leaves[x->leaf[l]];
}
static inline void rs_store_row(uint8_t *p, rs_v row) { memcpy(p, &row, 8); }

/* Feature j's slots for one group, lane by lane (tsq_slot_code: the definition the SIMD
 * quantizers match). */
static void rs_code_feature(const tsq_tables *T, uint32_t j, const float *col, size_t nd, uint8_t *codes) {
    for (uint32_t s = T->q.slot_first[j]; s < T->q.slot_first[j + 1]; s++)
        for (size_t l = 0; l < 8; l++)
            codes[(size_t)s * 8 + l] = (uint8_t)((l < nd ? tsq_slot_code(&T->q, s, col[l]) : 0) ^ T->flip);
}

/* The same from double values (double codes: tsq_slot_code_d). */
static void rs_code_feature_f64(const tsq_tables *T, uint32_t j, const double *col, size_t nd, uint8_t *codes) {
    for (uint32_t s = T->q.slot_first[j]; s < T->q.slot_first[j + 1]; s++)
        for (size_t l = 0; l < 8; l++)
            codes[(size_t)s * 8 + l] = (uint8_t)((l < nd ? tsq_slot_code_d(&T->q, s, col[l]) : 0) ^ T->flip);
}

#define RS_LANES 8
#define RS_UPDATE rs_update
#define RS(name) rs_scalar_##name
#include "engines/templates/rapid_template.h"
#undef RS
#undef RS_UPDATE
#undef RS_LANES

const rs_kernels tse_rapid_scalar = {TS_ISA_SCALAR, 8, 0, rs_scalar_kernel, rs_scalar_quantize, rs_scalar_kernel_f64, 0, NULL, NULL};
