/* rapid_template.h: the rapid kernel, written once and instantiated per ISA (scalar in rapid.c, AVX2 and AVX-512 in x86/). */
#include <math.h>
#include <string.h>
/*
 * No include guard: included once per ISA, after defining
 *   RS_LANES     documents per group: one register of bytes (8, 32 or 64)
 *   RS(name)     this instance's name for a function
 *   RS_UPDATE    rs_v RS_UPDATE(const rsl *L, rs_v row, const uint8_t *codes, rs_kv k, rs_mv m):
 *                row with the mask m ANDed in the lanes whose code is not below k (k: the
 *                entry's k + 1)
 * and optionally (an ISA file that instantiates the template twice, with two ways of
 * ANDing the mask):
 *   RS_MASK      rs_mv RS_MASK(const rs_entry *e): the entry's mask as RS_UPDATE takes it
 *                (default rs_m)
 *   RS_UPDATE_SKIP  as rs_update_skip below (default rs_update_skip)
 *   RS_QUANTIZE  an earlier instance's quantizer, instead of one of its own
 *   RS_QUANTIZE_F64  the same for double rows
 *   RS_QUANTIZE_NEAR the same for double rows converted to the nearest floats
 *   RS_GROUPS    the most groups of documents that share an entry's loads (4 or 8; default
 *                4): each holds a row, a skip and an exit in registers
 *   RS_FEW       with fewer groups than this, RS_MASK_FEW, RS_UPDATE_FEW and
 *                RS_UPDATE_SKIP_FEW instead (an update whose latency bounds one or two
 *                chains of rows; default 0: never)
 * and, once per ISA file:
 *   void rs_code_feature(const tsq_tables *T, uint32_t j, const float *col, size_t nd, uint8_t *codes)
 *                        the codes of every slot of feature j (quant.h) for one group, from
 *                        its RS_LANES values col (aligned to 64 bytes; lanes >= nd hold
 *                        -inf, which must get code 0), into the group's codes (rapid.h)
 *   void rs_code_feature_f64(const tsq_tables *T, uint32_t j, const double *col, size_t nd,
 *                        uint8_t *codes): the same from double values under double codes
 *                        (T->q.doubles; quant.h "Double codes": tsq_slot_code_d); col holds
 *                        values (or -inf) only up to the next multiple of 8 lanes from nd;
 *                        or, where the ISA defines RS_F64_UP (float first: quant.h "Gap
 *                        floats"), void rs_code_feature_f64(const tsq_tables *T, uint32_t j,
 *                        const float *col, size_t nd, const double *x, size_t stride,
 *                        uint8_t *codes): col the values rounded up to floats (tsq_round_up;
 *                        -inf from nd up to the next multiple of 16), x the feature's double
 *                        in the group's first row (x[lane * stride]), and optionally
 *                        RS_COLUMNS_F64 N (rs_columns_f64: N columns of the rows, rounded
 *                        up, as rs_columns16; RS_COLUMNS_F64_MIN: see RS(quantize_f64_cvt))
 *                        or RS_COLUMN_F64 (rs_column_f64: one column; RS_COLUMN_F64_STRIDE
 *                        the widest stride it takes),
 *                        each with a last argument `up` (0: to the nearest float instead),
 *                        and RS_ROUNDING (uint32_t rs_round_begin(int up), void
 *                        rs_round_end(uint32_t): the quantizer runs between them, so
 *                        that those copies may convert by the rounding mode); with RS_F64_UP
 *                        the template also defines RS(quantize_near) and RS(kernel_near),
 *                        double rows of a model that compares floats (rapid.h rs_kernels)
 *   rs_v                 a row: one byte per lane
 *   rs_v rs_ones(void), rs_v rs_zeros(void)
 *   rs_kv rs_k(const rs_entry *e), rs_mv rs_m(const rs_entry *e): an entry's k and mask,
 *                        as RS_UPDATE takes them (broadcast once for every group)
 *   rs_v rs_row_start(rs_v skip, uint32_t j): 0xFF in the lanes whose skip is at most j,
 *                        0 in the others (rapid.h "Skips")
 *   rs_kv rs_z(const rs_skip *s): a skip entry's z, broadcast
 *   void rs_update_skip(const rsl *L, rs_v *row, rs_v *skip, const uint8_t *codes, rs_kv k,
 *                        rs_mv m, rs_kv z): RS_UPDATE into *row, and *skip raised to z, in
 *                        the lanes that fail the entry
 *   rs_exit              the exit leaves of a tree being found: rs_exit_init(&x);
 *                        int rs_exit_row(&x, row, j): record row j (rows in order) for the
 *                        lanes that had only zero rows so far; 1 when every lane has one;
 *                        rs_exit_add(&x, leaves, rows, acc, lanes): acc[l] += leaves[8 * row +
 *                        lowest set bit] for the lanes l < lanes (at least those: a lane past
 *                        them adds to its own acc[l] unread), for a tree of `rows` rows (<= 32:
 *                        at most 256 leaves; leaves[0 .. 64) may always be read)
 *   void rs_store_row(uint8_t *p, rs_v row)
 * and optionally RS_BLOCK_DEFER (trees whose exits block_g keeps before adding their
 * leaf values: "Deferred exits"), with
 *   void rs_exit_store(const rs_exit *x, uint8_t *ix): the RS_LANES exit leaves' indices
 *   void rs_leaves_flush(const double *const *lv, const uint8_t *ix, size_t step, uint32_t n,
 *                        double *acc, uint32_t lanes): for trees q < n in order, acc[l] +=
 *                        lv[q][ix[q * step + l]] for l < lanes (at least those, as
 *                        rs_exit_add)
 *   and optionally RS_FLUSH_FLOAT: void rs_leaves_flush_f(const float *const *lv, ...) as
 *                        rs_leaves_flush, from the float copy (rapid.h leaves_f: trees of at
 *                        most 64 leaves; lv[q][0 .. 64) may always be read)
 * and optionally RS_PAIRS (calls of at most RS_PAIR_LANES rows by the pair layout,
 * rapid.h "Pairs"), with
 *   void rs_pair_codes(const uint8_t *codes, uint32_t n_slots, uint32_t x80, uint8_t *pc):
 *                        a group's codes (its first 16 lanes) into the pair codes pc, each
 *                        XOR x80
 *   rs_pv                a pair row: 32 byte lanes (tree A's document i in byte 2i, B's in
 *                        2i + 1); rs_pv rs_pv_zeros(void); rs_pv rs_pv_start(rs_pv skip,
 *                        uint32_t j) as rs_row_start
 *   rs_pv rs_pair_update(rs_pv row, const uint8_t *pc, const rs_pair *p, const int one_load),
 *   void rs_pair_update_skip(rs_pv *row, rs_pv *skip, const uint8_t *pc, const rs_pair_skip *s,
 *                            const int one_load) (one_load: a hint, the unrolled padded rows' 1)
 *                        as RS_UPDATE and rs_update_skip, on the pair codes
 *   rs_pexit             as rs_exit for a pair row: rs_pexit_init(&x), int rs_pexit_row(&x,
 *                        row, j), void rs_pexit_store(&x, ix): A's 16 exit leaves at ix,
 *                        B's at ix + 16
 *   and rs_leaves_flush (as for RS_BLOCK_DEFER)
 * The loops below are rapid's hot loops: long on purpose.
 */

/* One group (rows x[0..nd), nd <= RS_LANES) into its slot codes: RS_TRANSPOSE features at
 * a time are first copied out of the rows into columns of RS_LANES floats (lanes >= nd
 * read -inf: code 0, neither NaN nor zero range), then coded column by column. Measured
 * 12% faster on msn-lgb-500x64 (AVX2, Zen 3) than gathering each feature's values.
 * With RS_COLUMNS16 (an ISA's rs_columns16: 16 consecutive columns of every row turned
 * into 16 columns of RS_LANES floats in registers) and the used features at least half
 * of the columns they span, the columns come 16 at a time instead. */
#ifndef RS_MASK
#define RS_MASK rs_m
#endif
#ifndef RS_UPDATE_SKIP
#define RS_UPDATE_SKIP rs_update_skip
#endif

#ifndef RS_GROUPS
#define RS_GROUPS 4
#endif
#ifndef RS_FEW
#define RS_FEW 0
#define RS_MASK_FEW RS_MASK
#define RS_UPDATE_FEW RS_UPDATE
#define RS_UPDATE_SKIP_FEW RS_UPDATE_SKIP
#endif

/* Prefetch. While a group's rows are coded a run of columns at a time (RS_COLUMNS16,
 * RS_COLUMNS_F64), the same rows' columns RS_AHEAD runs further on are prefetched, and
 * after a full group the next group's first RS_AHEAD runs (a prefetch never faults; c0 +
 * RS_AHEAD runs is checked against the rows' last used column only to save the
 * instructions). Measured on Intel Xeon (Emerald Rapids, AVX-512 and AVX2 kernels;
 * docs/benchmarks.md "Twentieth session") against prefetching the whole of the next
 * group's rows when a group starts: as fast as no prefetch where the rows are in L2 (the
 * whole next group, 80-160 KB of the demo model's wide rows, waited for fill buffers and
 * evicted from L1 what the group in hand was about to read: up to 13% slower), 3-10%
 * faster than either where the rows stream from memory. */
#define RS_AHEAD 2

#ifndef RS_QUANTIZE
#define RS_QUANTIZE RS(quantize)
#define RS_TRANSPOSE (2048 / RS_LANES)

static void RS(quantize)(const tsq_tables *T, const float *x, size_t stride, size_t nd, uint8_t *codes) {
    const tsq *q = &T->q;
    float xt[RS_TRANSPOSE * RS_LANES] __attribute__((aligned(64)));
    if (q->n_used == 0) return;
#ifdef RS_COLUMNS16
    const uint32_t first = q->f[0].column, last = q->f[q->n_used - 1].column; /* rows reach last */
    if ((uint64_t)q->n_used * 2 >= (uint64_t)last - first + 1) {
        for (uint32_t j0 = 0; j0 < q->n_used;) {
            const uint32_t c0 = q->f[j0].column, n = last - c0 + 1 < 16 ? last - c0 + 1 : 16;
            if (c0 + RS_AHEAD * 16 <= last) /* the group's rows RS_AHEAD runs on ("Prefetch") */
                for (size_t l = 0; l < nd; l++) __builtin_prefetch(x + l * stride + c0 + RS_AHEAD * 16);
            rs_columns16(x, stride, nd, c0, n, xt);
            for (; j0 < q->n_used && q->f[j0].column < c0 + n; j0++)
                rs_code_feature(T, j0, xt + (size_t)(q->f[j0].column - c0) * RS_LANES, nd, codes);
        }
        if (nd == RS_LANES) /* a full group: the next group's first runs ("Prefetch") */
            for (size_t l = 0; l < RS_LANES; l++)
                for (uint32_t c = 0; c < RS_AHEAD * 16; c += 16) __builtin_prefetch(x + (RS_LANES + l) * stride + first + c);
        return;
    }
#endif
    for (uint32_t j0 = 0; j0 < q->n_used; j0 += RS_TRANSPOSE) {
        const uint32_t nj = q->n_used - j0 < RS_TRANSPOSE ? q->n_used - j0 : RS_TRANSPOSE;
        for (size_t l = 0; l < RS_LANES; l++) {
            const float *row = x + l * stride;
            for (uint32_t j = 0; j < nj; j++) xt[j * RS_LANES + l] = l < nd ? row[q->f[j0 + j].column] : -INFINITY;
        }
        for (uint32_t j = 0; j < nj; j++) rs_code_feature(T, j0 + j, xt + (size_t)j * RS_LANES, nd, codes);
    }
}
#undef RS_TRANSPOSE
#endif /* RS_QUANTIZE */

#if !defined(RS_QUANTIZE_F64) && defined(RS_F64_UP)
#define RS_QUANTIZE_F64 RS(quantize_f64)
#ifndef RS_COLUMNS_F64_MIN
#define RS_COLUMNS_F64_MIN 50
#endif
#define RS_QUANTIZE_NEAR RS(quantize_near)
#define RS_TRANSPOSE (2048 / RS_LANES)

/* The same for double rows, float first (up: quant.h "Gap floats"; an ISA with
 * RS_F64_UP): the columns are copied out as RS(quantize)'s, each value rounded up to a
 * float on its way (tsq_round_up, or with RS_COLUMNS_F64 the ISA's rs_columns_f64,
 * RS_COLUMNS_F64 columns of the rows at a time, prefetched as RS(quantize)'s: "Prefetch",
 * where the used features are at least RS_COLUMNS_F64_MIN percent of the columns they
 * span, 50 unless the ISA says; else with RS_COLUMN_F64 the ISA's rs_column_f64, one used
 * column at a time),
 * and coded by rs_code_feature_f64, which reads the doubles again only for the rare lanes
 * the floats cannot code. Not up (the double rows of a model that converts its input to
 * float32 first: XGBoost, scikit-learn, ONNX; quant.h's codes are float codes), each
 * value converted to the nearest float, (float)v, the library's own conversion, then
 * coded by rs_code_feature as a float row's. */
static inline __attribute__((always_inline)) void RS(quantize_f64_cvt)(const tsq_tables *T, const double *x,
                                                                      size_t stride, size_t nd, uint8_t *codes,
                                                                      const int up) {
    const tsq *q = &T->q;
    float xt[RS_TRANSPOSE * RS_LANES] __attribute__((aligned(64)));
    if (q->n_used == 0) return;
#ifdef RS_COLUMNS_F64
    const uint32_t first = q->f[0].column, last = q->f[q->n_used - 1].column; /* rows reach last */
    if ((uint64_t)q->n_used * 100 >= ((uint64_t)last - first + 1) * RS_COLUMNS_F64_MIN) {
        for (uint32_t j0 = 0; j0 < q->n_used;) {
            const uint32_t c0 = q->f[j0].column, n = last - c0 + 1 < RS_COLUMNS_F64 ? last - c0 + 1 : RS_COLUMNS_F64;
            if (c0 + RS_AHEAD * RS_COLUMNS_F64 <= last) /* as RS(quantize)'s ("Prefetch"), 64 bytes a line */
                for (size_t l = 0; l < nd; l++)
                    for (uint32_t k = 0; k < RS_COLUMNS_F64; k += 8)
                        __builtin_prefetch(x + l * stride + c0 + RS_AHEAD * RS_COLUMNS_F64 + k);
            rs_columns_f64(x, stride, nd, c0, n, xt, up);
            for (; j0 < q->n_used && q->f[j0].column < c0 + n; j0++) {
                const float *col = xt + (size_t)(q->f[j0].column - c0) * RS_LANES;
                if (up)
                    rs_code_feature_f64(T, j0, col, nd, x + q->f[j0].column, stride, codes);
                else
                    rs_code_feature(T, j0, col, nd, codes);
            }
        }
        if (nd == RS_LANES) /* a full group: the next group's first runs ("Prefetch") */
            for (size_t l = 0; l < RS_LANES; l++)
                for (uint32_t c = 0; c < RS_AHEAD * RS_COLUMNS_F64; c += 8)
                    __builtin_prefetch(x + (RS_LANES + l) * stride + first + c);
        return;
    }
#endif
    for (uint32_t j0 = 0; j0 < q->n_used; j0 += RS_TRANSPOSE) {
        const uint32_t nj = q->n_used - j0 < RS_TRANSPOSE ? q->n_used - j0 : RS_TRANSPOSE;
#ifdef RS_COLUMN_F64
        if (stride <= RS_COLUMN_F64_STRIDE) /* the ISA's column copy (rs_column_f64: gathers) */
            for (uint32_t j = 0; j < nj; j++)
                rs_column_f64(x + q->f[j0 + j].column, stride, nd, xt + (size_t)j * RS_LANES, up);
        else
#endif
        for (size_t l = 0; l < ((nd + 15) & ~(size_t)15); l++) { /* lanes of 16-lane registers holding rows */
            const double *row = x + l * stride;
            for (uint32_t j = 0; j < nj; j++) {
                const double v = l < nd ? row[q->f[j0 + j].column] : -INFINITY;
                xt[j * RS_LANES + l] = up ? tsq_round_up(v) : (float)v;
            }
        }
        for (uint32_t j = 0; j < nj; j++) {
            if (up)
                rs_code_feature_f64(T, j0 + j, xt + (size_t)j * RS_LANES, nd, x + q->f[j0 + j].column, stride, codes);
            else
                rs_code_feature(T, j0 + j, xt + (size_t)j * RS_LANES, nd, codes);
        }
    }
}

/* With RS_ROUNDING (the ISA's rs_round_begin(up) / rs_round_end: the thread's rounding
 * set toward +inf, or to nearest, while the group is quantized, then the caller's state
 * back), the ISA's column copies convert with a plain conversion by that rounding. */
static inline __attribute__((always_inline)) void RS(quantize_f64_round)(const tsq_tables *T, const double *x,
                                                                        size_t stride, size_t nd, uint8_t *codes,
                                                                        const int up) {
#ifdef RS_ROUNDING
    const uint32_t state = rs_round_begin(up);
    RS(quantize_f64_cvt)(T, x, stride, nd, codes, up);
    rs_round_end(state);
#else
    RS(quantize_f64_cvt)(T, x, stride, nd, codes, up);
#endif
}

static void RS(quantize_f64)(const tsq_tables *T, const double *x, size_t stride, size_t nd, uint8_t *codes) {
    RS(quantize_f64_round)(T, x, stride, nd, codes, 1);
}

static void RS(quantize_near)(const tsq_tables *T, const double *x, size_t stride, size_t nd, uint8_t *codes) {
    RS(quantize_f64_round)(T, x, stride, nd, codes, 0);
}
#undef RS_TRANSPOSE
#endif

#ifndef RS_QUANTIZE_F64
#define RS_QUANTIZE_F64 RS(quantize_f64)
#define RS_TRANSPOSE (1024 / RS_LANES)

/* The same for double rows (rapid.h rs_kernel_f64): RS_TRANSPOSE features at a time
 * copied out of the rows into columns of RS_LANES doubles, then coded from the doubles.
 * The next group's rows are prefetched meanwhile (after a full group) when the used
 * features are at least half of the columns they span; then, with RS_COLUMNS8_F64 (an ISA's rs_columns8_f64: 8
 * consecutive columns of every row into 8 columns of RS_LANES doubles in registers), the
 * columns come 8 at a time instead. */
static void RS(quantize_f64)(const tsq_tables *T, const double *x, size_t stride, size_t nd, uint8_t *codes) {
    const tsq *q = &T->q;
    double xt[RS_TRANSPOSE * RS_LANES] __attribute__((aligned(64)));
    if (q->n_used == 0) return;
    const uint32_t first = q->f[0].column, last = q->f[q->n_used - 1].column;
    if ((uint64_t)q->n_used * 2 >= (uint64_t)last - first + 1) {
        if (nd == RS_LANES) /* a full group: more rows may follow (a lone row has none to fetch) */
            for (size_t l = 0; l < RS_LANES; l++)
                for (uint32_t c = first; c <= last; c += 8) __builtin_prefetch(x + (RS_LANES + l) * stride + c);
#ifdef RS_COLUMNS8_F64
        /* 8 columns at a time through an ISA's in-register transpose (rs_columns8_f64) */
        for (uint32_t j0 = 0; j0 < q->n_used;) {
            const uint32_t c0 = q->f[j0].column, n = last - c0 + 1 < 8 ? last - c0 + 1 : 8;
            rs_columns8_f64(x, stride, nd, c0, n, xt);
            for (; j0 < q->n_used && q->f[j0].column < c0 + n; j0++)
                rs_code_feature_f64(T, j0, xt + (size_t)(q->f[j0].column - c0) * RS_LANES, nd, codes);
        }
        return;
#endif
    }
    for (uint32_t j0 = 0; j0 < q->n_used; j0 += RS_TRANSPOSE) {
        const uint32_t nj = q->n_used - j0 < RS_TRANSPOSE ? q->n_used - j0 : RS_TRANSPOSE;
        for (size_t l = 0; l < ((nd + 7) & ~(size_t)7); l++) { /* lanes of 8-lane registers holding rows */
            const double *row = x + l * stride;
            for (uint32_t j = 0; j < nj; j++) xt[j * RS_LANES + l] = l < nd ? row[q->f[j0 + j].column] : -INFINITY;
        }
        for (uint32_t j = 0; j < nj; j++) rs_code_feature_f64(T, j0 + j, xt + (size_t)j * RS_LANES, nd, codes);
    }
}
#undef RS_TRANSPOSE
#endif /* RS_QUANTIZE_F64 */

/* A tree wider than 256 leaves (no skip entries): every row into `rows`, then the exit
 * leaves lane by lane. */
static void RS(wide_tree)(const rsl *L, uint32_t t, const uint8_t *codes, uint8_t *rows, double *acc) {
    const rs_entry *E = L->entries;
    const uint32_t r0 = L->tree_row[t], nr = L->tree_row[t + 1] - r0;
    for (uint32_t j = 0; j < nr; j++) {
        rs_v row = rs_ones();
        for (uint32_t e = L->row_first[r0 + j]; e < L->row_first[r0 + j + 1]; e++)
            row = RS_UPDATE(L, row, codes + E[e].off, rs_k(&E[e]), RS_MASK(&E[e]));
        rs_store_row(rows + (size_t)j * RS_LANES, row);
    }
    const double *leaves = L->leaves + L->leaf_offset[t];
    for (size_t l = 0; l < RS_LANES; l++) {
        size_t j = 0;
        while (rows[j * RS_LANES + l] == 0) j++; /* the exit leaf's bit is always set */
        acc[l] += leaves[j * 8 + (size_t)__builtin_ctz(rows[j * RS_LANES + l])];
    }
}

#ifdef RS_BLOCK_DEFER
/* Deferred exits (an ISA with RS_BLOCK_DEFER): block_g of 2 groups or more keeps each
 * tree's exit leaf indices (rs_exit_store) and adds their values RS_BLOCK_DEFER trees at
 * a time, before a wide tree and at the block's end (rs_leaves_flush: each 4 documents
 * through those trees, the sums in a register): tree order, so naive's bits, and no load
 * and store of the sums per tree. AVX2 on Zen 3, 1,000 rows: 2-15% faster (dev 1.23 ->
 * 1.05 us/doc, msn-xgb-1000x64 1.87 -> 1.75; docs/benchmarks.md "Seventeenth session"). */
static inline void RS(exits_flush)(const double *const *lv, const float *const *lf,
                                   const uint8_t (*ix)[RS_GROUPS][RS_LANES], uint32_t n, double *acc,
                                   uint32_t lanes_last, int G) {
#ifdef RS_FLUSH_FLOAT
    if (lf[0]) {
        for (int g = 0; g < G; g++)
            rs_leaves_flush_f(lf, &ix[0][g][0], sizeof ix[0], n, acc + (size_t)g * RS_LANES,
                              g == G - 1 ? lanes_last : RS_LANES);
        return;
    }
#else
    (void)lf;
#endif
    for (int g = 0; g < G; g++)
        rs_leaves_flush(lv, &ix[0][g][0], sizeof ix[0], n, acc + (size_t)g * RS_LANES,
                        g == G - 1 ? lanes_last : RS_LANES);
}
#endif

/* One entry, and one skip, on the rows of G groups (block_g's loops and its padded rows'
 * unrolled ones): the entry's k and mask loaded once for all of them. */
static inline __attribute__((always_inline)) void RS(entry_g)(const rsl *L, const rs_entry *e, const uint8_t *codes,
                                                               size_t codes_step, rs_v *row, const int G) {
    const rs_kv k = rs_k(e);
    const rs_mv m = G < RS_FEW ? RS_MASK_FEW(e) : RS_MASK(e);
    const uint8_t *c = codes + e->off;
    for (int g = 0; g < G; g++)
        row[g] = G < RS_FEW ? RS_UPDATE_FEW(L, row[g], c + (size_t)g * codes_step, k, m)
                            : RS_UPDATE(L, row[g], c + (size_t)g * codes_step, k, m);
}

static inline __attribute__((always_inline)) void RS(skip_g)(const rsl *L, const rs_skip *sk, const uint8_t *codes,
                                                              size_t codes_step, rs_v *row, rs_v *skip, const int G) {
    const rs_kv k = rs_k(&sk->e), z = rs_z(sk);
    const rs_mv m = G < RS_FEW ? RS_MASK_FEW(&sk->e) : RS_MASK(&sk->e);
    const uint8_t *c = codes + sk->e.off;
    for (int g = 0; g < G; g++)
        if (G < RS_FEW)
            RS_UPDATE_SKIP_FEW(L, &row[g], &skip[g], c + (size_t)g * codes_step, k, m, z);
        else
            RS_UPDATE_SKIP(L, &row[g], &skip[g], c + (size_t)g * codes_step, k, m, z);
}

/* One tree block for G groups at once (G = 1, 2, 4 or 8, at most RS_GROUPS: an entry's k
 * and mask are loaded and broadcast once for all of them): each tree's rows in order
 * until every lane of the G groups has met its first non-zero row, then the exit
 * leaves' values added to the groups' scores. codes and acc point at the first group;
 * the others follow. Eight groups measured 10-15% faster than four on Intel Emerald
 * Rapids with AVX-512 (fewer loads and loop ends per document; a bundle of 512
 * documents reaches a few more rows), within noise on AMD Zen 4. */
static inline __attribute__((always_inline)) void RS(block_g)(const rsl *L, const rs_block *blk,
                                                               const uint8_t *codes, size_t codes_step,
                                                               double *acc, uint8_t *rows, uint32_t lanes_last,
                                                               const int G, const int padded) {
    /* padded (a constant, one group only): the padded copy of the rows (rapid.h rs_padded) */
    const rs_entry *E = padded ? L->pad.entries : L->entries;
    const uint32_t *row_first = L->row_first, *skip_first = padded ? L->pad.skip_first : L->skip_first;
    const rs_skip *S = padded ? L->pad.skips : L->skips;
#ifdef RS_BLOCK_DEFER
    const int defer = G >= 2; /* (one group: 2-3% slower deferred at 32 rows) */
    uint8_t dix[RS_BLOCK_DEFER][RS_GROUPS][RS_LANES] __attribute__((aligned(64)));
    const double *dlv[RS_BLOCK_DEFER];
    const float *dlf[RS_BLOCK_DEFER];
    uint32_t nq = 0;
#endif
    for (uint32_t t = blk->first_tree; t < blk->first_tree + blk->n_trees; t++) {
        const uint32_t r0 = L->tree_row[t], nr = L->tree_row[t + 1] - r0;
        if (nr > 32) {
#ifdef RS_BLOCK_DEFER
            if (nq) RS(exits_flush)(dlv, dlf, dix, nq, acc, lanes_last, G), nq = 0;
#endif
            for (int g = 0; g < G; g++)
                RS(wide_tree)(L, t, codes + (size_t)g * codes_step, rows, acc + (size_t)g * RS_LANES);
            continue;
        }
        rs_exit x[RS_GROUPS];
        rs_v skip[RS_GROUPS];
        for (int g = 0; g < G; g++) rs_exit_init(&x[g]), skip[g] = rs_zeros();
        /* the tree's rows are consecutive, so are their entries and skips: one pointer
         * each runs through them, a row's end the next row's first (fewer instructions
         * per row than both ends indexed: Zen 3, 32 rows 11% faster, 1,000 rows 1-4%) */
        const rs_entry *e = E + (padded ? (size_t)r0 * RS_PAD_ENTRIES : row_first[r0]);
        const rs_skip *sk = S + skip_first[r0];
        for (uint32_t j = 0; j < nr; j++) {
            rs_v row[RS_GROUPS];
            for (int g = 0; g < G; g++) row[g] = rs_row_start(skip[g], j);
            if (padded) { /* RS_PAD_ENTRIES entries and the first RS_PAD_SKIPS skips, unrolled */
                for (uint32_t i = 0; i < RS_PAD_ENTRIES; i++) RS(entry_g)(L, e + i, codes, codes_step, row, G);
                for (uint32_t i = 0; i < RS_PAD_SKIPS; i++) RS(skip_g)(L, sk + i, codes, codes_step, row, skip, G);
                e += RS_PAD_ENTRIES, sk += RS_PAD_SKIPS;
            } else
                for (const rs_entry *end = E + row_first[r0 + j + 1]; e < end; e++)
                    RS(entry_g)(L, e, codes, codes_step, row, G);
            for (const rs_skip *end = S + skip_first[r0 + j + 1]; sk < end; sk++)
                RS(skip_g)(L, sk, codes, codes_step, row, skip, G);
            int done = 1;
            for (int g = 0; g < G; g++) done &= rs_exit_row(&x[g], row[g], j);
            if (done) break;
        }
        const double *leaves = L->leaves + L->leaf_offset[t];
#ifdef RS_BLOCK_DEFER
        if (defer) {
            for (int g = 0; g < G; g++) rs_exit_store(&x[g], dix[nq][g]);
            dlf[nq] = L->leaves_f ? L->leaves_f + L->leaf_offset[t] : NULL;
            dlv[nq++] = leaves;
            if (nq == RS_BLOCK_DEFER) RS(exits_flush)(dlv, dlf, dix, nq, acc, lanes_last, G), nq = 0;
            continue;
        }
#endif
        for (int g = 0; g < G; g++)
            rs_exit_add(&x[g], leaves, nr, acc + (size_t)g * RS_LANES, g == G - 1 ? lanes_last : RS_LANES);
    }
#ifdef RS_BLOCK_DEFER
    if (nq) RS(exits_flush)(dlv, dlf, dix, nq, acc, lanes_last, G);
#endif
}

static void RS(block1)(const rsl *L, const rs_block *blk, const uint8_t *codes, size_t step, double *acc,
                       uint8_t *rows, uint32_t lanes_last) {
    if (L->pad.entries)
        RS(block_g)(L, blk, codes, step, acc, rows, lanes_last, 1, 1);
    else
        RS(block_g)(L, blk, codes, step, acc, rows, lanes_last, 1, 0);
}

static void RS(block2)(const rsl *L, const rs_block *blk, const uint8_t *codes, size_t step, double *acc,
                       uint8_t *rows, uint32_t lanes_last) {
    RS(block_g)(L, blk, codes, step, acc, rows, lanes_last, 2, 0);
}

#if RS_GROUPS >= 8
static void RS(block8)(const rsl *L, const rs_block *blk, const uint8_t *codes, size_t step, double *acc,
                       uint8_t *rows, uint32_t lanes_last) {
    RS(block_g)(L, blk, codes, step, acc, rows, lanes_last, 8, 0);
}
#endif

static void RS(block4)(const rsl *L, const rs_block *blk, const uint8_t *codes, size_t step, double *acc,
                       uint8_t *rows, uint32_t lanes_last) {
    RS(block_g)(L, blk, codes, step, acc, rows, lanes_last, 4, 0);
}

#ifdef RS_PAIRS
/* Deferred pairs: a pair's exit leaves are kept (32 bytes) and their values added for
 * RS_PAIRS_DEFER pairs at a time (rs_leaves_flush: each group of 4 or 8 documents through
 * those pairs, A's leaf then B's, its sums in a register), before a single tree and at
 * the block's end: tree order, so naive's bits. 2-5% faster at 16 rows than each pair's
 * leaves added at its exit (Zen 3). */
#define RS_PAIRS_DEFER 32u

/* The deferred pairs' leaf values: n trees (lv, or lf where the values are floats). */
static inline void RS(pairs_flush)(const double *const *lv, const float *const *lf, const uint8_t *ix, uint32_t n,
                                   double *acc, uint32_t nd) {
#ifdef RS_FLUSH_FLOAT
    if (lf[0]) {
        rs_leaves_flush_f(lf, ix, RS_PAIR_LANES, n, acc, nd);
        return;
    }
#else
    (void)lf;
#endif
    rs_leaves_flush(lv, ix, RS_PAIR_LANES, n, acc, nd);
}

/* Tree block b for one group of at most RS_PAIR_LANES documents (nd), two trees per
 * register (rapid.h "Pairs"; the ISA's pair functions) on the pair codes pc, a single
 * tree by block1 on the group's codes. */
static inline __attribute__((always_inline)) void RS(pairs_r)(const rsl *L, uint32_t b, const uint8_t *codes,
                                                               const uint8_t *pc, double *acc, uint8_t *rows,
                                                               uint32_t nd, const int padded) {
    const rs_pairs *P = &L->pairs;
    /* pair q's exits: A's at ix[q][0 ..), B's at ix[q][RS_PAIR_LANES ..): as trees 2q and
     * 2q + 1 of rs_leaves_flush, RS_PAIR_LANES bytes apart, their values lv[2q], lv[2q + 1] */
    uint8_t ix[RS_PAIRS_DEFER][2 * RS_PAIR_LANES] __attribute__((aligned(64)));
    const double *lv[2 * RS_PAIRS_DEFER];
    const float *lf[2 * RS_PAIRS_DEFER];
    uint32_t nq = 0;
    for (uint32_t p = P->block_first[b]; p < P->block_first[b + 1]; p++) {
        const rs_ptree *pt = &P->trees[p];
        if (!pt->n_rows) {
            if (nq) RS(pairs_flush)(lv, lf, &ix[0][0], 2 * nq, acc, nd), nq = 0;
            const rs_block one = {pt->tree, pt->n_trees};
            RS(block1)(L, &one, codes, 0, acc, rows, nd);
            continue;
        }
        rs_pexit x;
        rs_pv skip = rs_pv_zeros();
        rs_pexit_init(&x);
        /* the pair's rows are consecutive, so are their entries and skips: one pointer
         * each runs through them, a row's end the next row's first (as block_g; 16 rows
         * 5-9% faster on Zen 3) */
        const rs_pair *e = P->entries + P->row_first[pt->row];
        const rs_pair_skip *s = P->skips + P->skip_first[pt->row];
        const uint32_t *row_end = P->row_first + pt->row + 1, *skip_end = P->skip_first + pt->row + 1;
        for (uint32_t j = 0; j < pt->n_rows; j++) {
            rs_pv row = rs_pv_start(skip, j);
            if (padded) { /* RS_PAD_ENTRIES entries and the first RS_PAD_SKIPS skips, unrolled */
                for (uint32_t i = 0; i < RS_PAD_ENTRIES; i++) row = rs_pair_update(row, pc, e + i, 1);
                for (uint32_t i = 0; i < RS_PAD_SKIPS; i++) rs_pair_update_skip(&row, &skip, pc, s + i, 1);
                e += RS_PAD_ENTRIES, s += RS_PAD_SKIPS;
            } else
                for (const rs_pair *end = P->entries + row_end[j]; e < end; e++) row = rs_pair_update(row, pc, e, 0);
            for (const rs_pair_skip *end = P->skips + skip_end[j]; s < end; s++) rs_pair_update_skip(&row, &skip, pc, s, 0);
            if (rs_pexit_row(&x, row, j)) break;
        }
        rs_pexit_store(&x, ix[nq]);
        lv[2 * nq] = L->leaves + L->leaf_offset[pt->tree];
        lv[2 * nq + 1] = L->leaves + L->leaf_offset[pt->tree + 1];
        lf[2 * nq] = L->leaves_f ? L->leaves_f + L->leaf_offset[pt->tree] : NULL;
        lf[2 * nq + 1] = L->leaves_f ? L->leaves_f + L->leaf_offset[pt->tree + 1] : NULL;
        if (++nq == RS_PAIRS_DEFER) RS(pairs_flush)(lv, lf, &ix[0][0], 2 * nq, acc, nd), nq = 0;
    }
    if (nq) RS(pairs_flush)(lv, lf, &ix[0][0], 2 * nq, acc, nd);
}

static void RS(pairs)(const rsl *L, uint32_t b, const uint8_t *codes, const uint8_t *pc, double *acc, uint8_t *rows,
                      uint32_t nd) {
    if (L->pairs.padded) /* (rapid.h "Padded rows": the rows' loops, or none) */
        RS(pairs_r)(L, b, codes, pc, acc, rows, nd, 1);
    else
        RS(pairs_r)(L, b, codes, pc, acc, rows, nd, 0);
}
#endif

/* The kernel: per document block, quantize its groups once (float rows, f64 0; double
 * rows under double codes, 1; double rows converted to the nearest floats, 2: a
 * constant), then every tree block for every group, then the scores out. */
static inline __attribute__((always_inline)) void RS(kernel_any)(const rsl *L, uint32_t delta, const void *x,
                                                                  size_t n_rows, size_t stride, double *out,
                                                                  void *scratch, const int f64) {
    const rs_scratch sp = rs_scratch_parts(L, delta, RS_LANES);
    char *s = scratch;
    uint8_t *codes = (uint8_t *)(s + sp.codes);
    double *acc = (double *)(s + sp.acc);
    uint8_t *rows = (uint8_t *)(s + sp.rows);
#ifdef RS_PAIRS
    uint8_t *pcodes = (uint8_t *)(s + sp.pcodes);
#endif
    const size_t ns = rs_code_slots(L);
    for (size_t d0 = 0; d0 < n_rows; d0 += delta) {
        size_t nd = n_rows - d0 < delta ? n_rows - d0 : delta;
        size_t ng = (nd + RS_LANES - 1) / RS_LANES;
        for (size_t g = 0; g < ng; g++) {
            size_t first = g * RS_LANES, n = nd - first < RS_LANES ? nd - first : RS_LANES;
            if (f64 == 1)
                RS_QUANTIZE_F64(&L->tables, (const double *)x + (d0 + first) * stride, stride, n,
                                codes + g * ns * RS_LANES);
#ifdef RS_QUANTIZE_NEAR
            else if (f64 == 2)
                RS_QUANTIZE_NEAR(&L->tables, (const double *)x + (d0 + first) * stride, stride, n,
                                 codes + g * ns * RS_LANES);
#endif
            else
                RS_QUANTIZE(&L->tables, (const float *)x + (d0 + first) * stride, stride, n,
                            codes + g * ns * RS_LANES);
            if (L->n_comp) rs_complement(L, codes + g * ns * RS_LANES, RS_LANES);
        }
        for (size_t d = 0; d < ng * RS_LANES; d++) acc[d] = L->base_score;
#ifdef RS_PAIRS
        const int pairs = nd <= RS_PAIR_LANES && L->pairs.trees; /* one group, the pair layout */
        if (pairs) rs_pair_codes(codes, (uint32_t)ns, 0x80u ^ L->tables.flip, pcodes);
#endif
        const size_t step = ns * RS_LANES; /* codes of one group */
        const uint32_t last = (uint32_t)(nd - (ng - 1) * RS_LANES); /* documents in the last group */
        for (uint32_t b = 0; b < L->n_blocks; b++) {
#ifdef RS_PAIRS
            if (pairs) {
                RS(pairs)(L, b, codes, pcodes, acc, rows, (uint32_t)nd);
                continue;
            }
#endif
            size_t g = 0;
#if RS_GROUPS >= 8
            for (; g + 8 <= ng; g += 8)
                RS(block8)(L, &L->blocks[b], codes + g * step, step, acc + g * RS_LANES, rows, g + 8 == ng ? last : RS_LANES);
#endif
            for (; g + 4 <= ng; g += 4)
                RS(block4)(L, &L->blocks[b], codes + g * step, step, acc + g * RS_LANES, rows, g + 4 == ng ? last : RS_LANES);
            for (; g + 2 <= ng; g += 2)
                RS(block2)(L, &L->blocks[b], codes + g * step, step, acc + g * RS_LANES, rows, g + 2 == ng ? last : RS_LANES);
            if (g < ng) RS(block1)(L, &L->blocks[b], codes + g * step, step, acc + g * RS_LANES, rows, last);
        }
        memcpy(out + d0, acc, nd * sizeof *out);
    }
}

static void RS(kernel)(const rsl *L, uint32_t delta, const float *x, size_t n_rows, size_t stride, double *out,
                       void *scratch) {
    RS(kernel_any)(L, delta, x, n_rows, stride, out, scratch, 0);
}

static void RS(kernel_f64)(const rsl *L, uint32_t delta, const double *x, size_t n_rows, size_t stride, double *out,
                           void *scratch) {
    RS(kernel_any)(L, delta, x, n_rows, stride, out, scratch, 1);
}

#ifdef RS_QUANTIZE_NEAR
static void RS(kernel_near)(const rsl *L, uint32_t delta, const double *x, size_t n_rows, size_t stride, double *out,
                            void *scratch) {
    RS(kernel_any)(L, delta, x, n_rows, stride, out, scratch, 2);
}
#endif

#undef RS_PAIRS
#undef RS_PAIRS_DEFER
#undef RS_BLOCK_DEFER
#undef RS_FLUSH_FLOAT
#undef RS_MASK
#undef RS_UPDATE_SKIP
#undef RS_QUANTIZE
#undef RS_QUANTIZE_F64
#undef RS_QUANTIZE_NEAR
#undef RS_COLUMNS_F64_MIN
#undef RS_AHEAD
#undef RS_GROUPS
#undef RS_FEW
#undef RS_MASK_FEW
#undef RS_UPDATE_FEW
#undef RS_UPDATE_SKIP_FEW
