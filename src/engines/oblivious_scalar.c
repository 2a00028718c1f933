/* oblivious_scalar.c: the oblivious engine's scalar kernel (8 documents per group, the scalar quantizer's), instantiated from templates/oblivious_template.h as x86/oblivious_{avx2,avx512}.c instantiate the SIMD ones. */
#include <string.h>

#include "engines/oblivious.h"

#define OB_LANES 8
#define OB(name) ob_scalar_##name

/* Oblivious tree T for ng groups of 8: per lane the index bits, root level first, then the
 * leaf value (the codes are stored XOR L->flip). */
static void ob_sym(const obl *L, const ob_tree *T, const uint8_t *codes, size_t step, size_t ng, size_t last,
                   double *acc) {
    (void)last; /* every lane of 8 */
    const uint32_t d = T->depth, flip = L->flip;
    const ob_level *lv = L->levels + T->first;
    const double *v = L->leaves + T->leaf;
    for (size_t g = 0; g < ng; g++) {
        const uint8_t *c = codes + g * step;
        uint32_t ix[OB_LANES] = {0};
        for (uint32_t i = 0; i < d; i++) {
            const uint8_t *ci = c + lv[i].off;
            const uint32_t k = lv[i].k ^ flip;
            for (int l = 0; l < OB_LANES; l++) ix[l] = 2 * ix[l] + ((uint32_t)(ci[l] ^ flip) > k);
        }
        double *a = acc + g * OB_LANES;
        for (int l = 0; l < OB_LANES; l++) a[l] += v[ix[l]];
    }
}

#include "engines/templates/oblivious_template.h"

const ob_kernels tse_oblivious_scalar = {TS_ISA_SCALAR, OB_LANES, ob_scalar_kernel, 0, ob_scalar_kernel_near};
