/* rapid_template.h: the rapid kernel, written once and instantiated per ISA (scalar in rapid.c, AVX2 and AVX-512 in x86/) and per code width. */
#include <string.h>
/*
 * No include guard: included once per (ISA, code width), after defining
 *   RS_LANES     documents per group: one register of bytes (a power of two, <= 64)
 *   RS(name)     this instance's name for a function
 *   RS_CODE_T    uint8_t or uint16_t
 *   RS_GT        rs_bm RS_GT(const RS_CODE_T *codes, uint32_t k): lanes with code > k
 *   RS_QUANTIZE  void RS_QUANTIZE(const tsq *q, const float *x, size_t stride, size_t nd,
 *                                 RS_CODE_T *codes, uint32_t *maxc, uint64_t *nan,
 *                                 uint64_t *zero): one group (rows x[0..nd), nd <= RS_LANES)
 *                into the group's codes, largest codes and NaN/zero-range lanes per slot
 *                (rapid.h's scratch layout); lanes >= nd get code 0 and no flags
 * and, once per ISA file:
 *   rs_bm                  per lane "failed" (all ones) or not, in the ISA's form
 *   rs_bm rs_from_lanes(uint64_t m)                  lane l failed iff bit l of m
 *   void  rs_and(uint8_t *row, rs_bm c, uint8_t m)   row[l] &= m where lane l failed
 *   void  rs_leaves(const uint8_t *bv, uint32_t n_trees, uint32_t bytes,
 *                   const double *leaves, const uint32_t *off, double *acc)
 *                for trees t < n_trees in order: acc[l] += leaves[off[t] + exit leaf of
 *                lane l], the exit leaf being 8 * (first non-zero row j of the tree) +
 *                (lowest set bit of that byte); bytes <= 32 (exit leaves < 256)
 * The loops below are rapid's hot loops: long on purpose.
 */

/* Clear a node's leaves in the lanes that failed it (rapid.h: an entry's rows). */
static inline void RS(apply)(uint8_t *bv, const rs_entry *e, rs_bm c) {
    uint8_t *p = bv + (size_t)e->row * RS_LANES;
    rs_and(p, c, e->first);
    if (e->n > 1) {
        for (uint32_t w = 1; w + 1 < e->n; w++) rs_and(p + (size_t)w * RS_LANES, c, 0);
        rs_and(p + (size_t)(e->n - 1) * RS_LANES, c, e->last);
    }
}

/* Exit leaves of trees wider than 256 leaves, lane by lane. */
static void RS(wide_leaves)(const uint8_t *bv, uint32_t n_trees, uint32_t bytes, const double *leaves,
                            const uint32_t *off, double *acc) {
    for (uint32_t t = 0; t < n_trees; t++) {
        const uint8_t *b = bv + (size_t)t * bytes * RS_LANES;
        for (size_t l = 0; l < RS_LANES; l++) {
            size_t j = 0;
            while (b[j * RS_LANES + l] == 0) j++; /* the exit leaf's bit is always set */
            acc[l] += leaves[off[t] + j * 8 + (size_t)__builtin_ctz(b[j * RS_LANES + l])];
        }
    }
}

/* One tree block for one group: reset its leaf vectors, apply every failed node, add the
 * exit leaves to the group's scores. */
static void RS(block)(const rsl *L, const rs_block *blk, const RS_CODE_T *codes, const uint32_t *maxc,
                      const uint64_t *nan, const uint64_t *zero, uint8_t *bv, double *acc) {
    const rs_entry *E = L->entries;
    memset(bv, 0xFF, (size_t)blk->n_trees * L->bytes * RS_LANES);
    for (uint32_t f = 0; f < blk->n_features; f++) {
        const rs_feature *bf = &blk->features[f];
        const uint32_t slot = bf->slot, mc = maxc[slot];
        const RS_CODE_T *c = codes + (size_t)slot * RS_LANES;
        /* short entries: no branch but the loop's; always the rows first and first + 1
         * (the second with mask 0xFF when n == 1: never the row just written, whose
         * reload would alias the store for some entries and not for others, which
         * measured 1.3x slower) */
        for (const rs_entry *e = E + bf->short_begin; e->k < mc; e++) {
            rs_bm cmp = RS_GT(c, e->k);
            uint8_t *p = bv + (size_t)e->row * RS_LANES;
            rs_and(p, cmp, e->first);
            rs_and(p + RS_LANES, cmp, e->last);
        }
        for (const rs_entry *e = E + bf->long_begin; e->k < mc; e++) RS(apply)(bv, e, RS_GT(c, e->k));
        if (nan[slot]) {
            rs_bm m = rs_from_lanes(nan[slot]);
            for (uint32_t e = bf->miss_begin; e < bf->miss_end; e++) RS(apply)(bv, &E[e], m);
        }
        if (bf->has_zero && zero[slot]) {
            rs_bm m = rs_from_lanes(zero[slot]);
            for (uint32_t e = bf->zero_begin; e < bf->zero_end; e++) RS(apply)(bv, &E[e], m);
        }
    }
    const uint32_t *off = L->leaf_offset + blk->first_tree;
    if (L->bytes <= 32)
        rs_leaves(bv, blk->n_trees, L->bytes, L->leaves, off, acc);
    else
        RS(wide_leaves)(bv, blk->n_trees, L->bytes, L->leaves, off, acc);
}

/* The kernel: per document block, quantize its groups once, then every tree block for
 * every group, then the scores out. */
static void RS(kernel)(const rsl *L, uint32_t delta, const float *x, size_t n_rows, size_t stride, double *out,
                       void *scratch) {
    const rs_scratch sp = rs_scratch_parts(L, delta, RS_LANES);
    char *s = scratch;
    RS_CODE_T *codes = (RS_CODE_T *)(s + sp.codes);
    uint32_t *maxc = (uint32_t *)(s + sp.maxc);
    uint64_t *nan = (uint64_t *)(s + sp.nan), *zero = (uint64_t *)(s + sp.zero);
    double *acc = (double *)(s + sp.acc);
    uint8_t *bv = (uint8_t *)(s + sp.bv);
    const size_t nu = L->q.n_used ? L->q.n_used : 1;
    for (size_t d0 = 0; d0 < n_rows; d0 += delta) {
        size_t nd = n_rows - d0 < delta ? n_rows - d0 : delta;
        size_t ng = (nd + RS_LANES - 1) / RS_LANES;
        for (size_t g = 0; g < ng; g++) {
            size_t first = g * RS_LANES, n = nd - first < RS_LANES ? nd - first : RS_LANES;
            RS_QUANTIZE(&L->q, x + (d0 + first) * stride, stride, n, codes + g * nu * RS_LANES, maxc + g * nu,
                        nan + g * nu, zero + g * nu);
        }
        for (size_t d = 0; d < ng * RS_LANES; d++) acc[d] = L->base_score;
        for (uint32_t b = 0; b < L->n_blocks; b++)
            for (size_t g = 0; g < ng; g++)
                RS(block)(L, &L->blocks[b], codes + g * nu * RS_LANES, maxc + g * nu, nan + g * nu, zero + g * nu,
                          bv, acc + g * RS_LANES);
        memcpy(out + d0, acc, nd * sizeof *out);
    }
}
