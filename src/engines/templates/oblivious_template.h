/* oblivious_template.h: the oblivious kernel, written once and instantiated per ISA (scalar in oblivious_scalar.c, AVX2 and AVX-512 in x86/). */
#include <string.h>
/*
 * No include guard: included once per ISA file, after defining
 *   OB_LANES     documents per group: the coder's quantizer's lanes (8, 32 or 64)
 *   OB(name)     this instance's name for a function
 * and
 *   void ob_sym(const obl *L, const ob_tree *T, const uint8_t *codes, size_t step, size_t ng,
 *               size_t last, double *acc): oblivious tree T (depth <= OB_MAX_DEPTH) for ng
 *               groups of OB_LANES documents: group g's codes at codes + g * step, its
 *               scores at acc + g * OB_LANES; the last group holds `last` documents (1 ..
 *               OB_LANES): its lanes from `last` on may be left alone or scored (their
 *               codes are any bytes), the others must be scored
 * The kernel below is a hot loop: long on purpose.
 */

/* A group of nd <= OB_LANES rows into its codes: the quantizer of the ISA kernels for a
 * group of at least a quarter of the lanes, else lane by lane with the scalar search
 * (a single row costs its own features, not a group's); lanes past nd are left as
 * they are (their scores are never read; any byte is a valid code). Double rows (f64, a
 * constant) by the quantizer's quantize_near, or the scalar search on (float)v. */
static inline __attribute__((always_inline)) void OB(code_group)(const obl *L, const void *x, size_t stride, size_t nd,
                                                                  uint8_t *codes, const int f64) {
    if (4 * nd >= OB_LANES) {
        if (f64)
            L->coder.k.quantize_near(&L->coder.t, (const double *)x, stride, nd, codes);
        else
            L->coder.k.quantize(&L->coder.t, (const float *)x, stride, nd, codes);
        return;
    }
    const tsq *q = &L->coder.t.q;
    const uint8_t flip = (uint8_t)L->flip;
    for (size_t l = 0; l < nd; l++)
        for (uint32_t j = 0; j < q->n_used; j++) {
            const size_t at = l * stride + q->f[j].column;
            const float v = f64 ? (float)((const double *)x)[at] : ((const float *)x)[at];
            for (uint32_t s = q->slot_first[j]; s < q->slot_first[j + 1]; s++)
                codes[(size_t)s * OB_LANES + l] = (uint8_t)(tsq_slot_code(q, s, v) ^ flip);
        }
}

/* A tree that is not oblivious, lane by lane: its nodes on codes (code > k goes right). */
static void OB(walk)(const obl *L, const ob_tree *T, const uint8_t *codes, size_t n, double *acc) {
    const ob_node *nodes = L->nodes + T->first;
    const double *v = L->leaves + T->leaf;
    const uint32_t flip = L->flip;
    for (size_t l = 0; l < n; l++) {
        int32_t c = 0;
        while (c >= 0) {
            const ob_node *nd = &nodes[c];
            c = (uint32_t)(codes[nd->off + l] ^ flip) > (nd->k ^ flip) ? nd->right : nd->left;
        }
        acc[l] += v[~c];
    }
}

/* The kernel: per document block, its groups coded once (float rows, or double rows:
 * f64, a constant), then every tree in order for every group (the scores of a document
 * are added tree after tree), then the scores out. */
static inline __attribute__((always_inline)) void OB(kernel_any)(const obl *L, uint32_t delta, const void *x,
                                                                  size_t n_rows, size_t stride, double *out,
                                                                  void *scratch, const int f64) {
    const size_t width = f64 ? sizeof(double) : sizeof(float);
    const ob_scratch sp = ob_scratch_parts(L, delta);
    char *s = scratch;
    uint8_t *codes = (uint8_t *)(s + sp.codes);
    double *acc = (double *)(s + sp.acc);
    const size_t ns = L->coder.t.q.n_slots ? L->coder.t.q.n_slots : 1, step = ns * OB_LANES;
    for (size_t d0 = 0; d0 < n_rows; d0 += delta) {
        const size_t nd = n_rows - d0 < delta ? n_rows - d0 : delta, ng = (nd + OB_LANES - 1) / OB_LANES;
        for (size_t g = 0; g < ng; g++) {
            const size_t first = g * OB_LANES, n = nd - first < OB_LANES ? nd - first : OB_LANES;
            OB(code_group)(L, (const char *)x + (d0 + first) * stride * width, stride, n, codes + g * step, f64);
        }
        for (size_t d = 0; d < ng * OB_LANES; d++) acc[d] = L->base_score;
        for (uint32_t t = 0; t < L->n_trees; t++) {
            const ob_tree *T = &L->trees[t];
            /* the next tree's values (up to 512 of them) on their way to the cache while this
             * one runs: deep models' values do not stay in L2 (2,000 x 256 leaves: 4 MB); on
             * msn-cb-2000x256, AVX-512, Zen 4: 10-15% faster at batch 100 and 1,000 */
            if (T[1].depth <= 9) {
                const double *nv = L->leaves + T[1].leaf;
                for (size_t i = 0; i < ((size_t)1 << T[1].depth); i += 8) __builtin_prefetch(nv + i);
            }
            if (T->depth != OB_GENERAL) {
                ob_sym(L, T, codes, step, ng, nd - (ng - 1) * OB_LANES, acc);
                continue;
            }
            for (size_t g = 0; g < ng; g++) {
                const size_t first = g * OB_LANES, n = nd - first < OB_LANES ? nd - first : OB_LANES;
                OB(walk)(L, T, codes + g * step, n, acc + first);
            }
        }
        memcpy(out + d0, acc, nd * sizeof *out);
    }
}

static void OB(kernel)(const obl *L, uint32_t delta, const float *x, size_t n_rows, size_t stride, double *out,
                       void *scratch) {
    OB(kernel_any)(L, delta, x, n_rows, stride, out, scratch, 0);
}

static void OB(kernel_near)(const obl *L, uint32_t delta, const double *x, size_t n_rows, size_t stride, double *out,
                            void *scratch) {
    OB(kernel_any)(L, delta, x, n_rows, stride, out, scratch, 1);
}
