/* quant.h: exact feature codes: per feature the model's sorted distinct thresholds, and a value's code (how many of them lie below it). */
#ifndef TS_ENGINES_QUANT_H
#define TS_ENGINES_QUANT_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "model/forest.h"
#include "treescore.h"

/*
 * Exact codes
 * -----------
 * For each feature a split reads, T[0] < T[1] < ... < T[n-1] are the distinct float
 * thresholds of all nodes on it (-0.0 and 0.0 are one threshold: they compare equal).
 * The code of a value x is the number of thresholds strictly below it:
 *
 *     code(x) = #{ i : T[i] < x }      and then      x <= T[k]  iff  code(x) <= k
 *
 * (x > T[k] puts T[0..k] below x, so code > k; x <= T[k] keeps every T[i] < x at i < k.)
 * So every node "x <= t" becomes the integer test "code <= k" with k the index of t, and
 * nodes of equal (feature, threshold) have equal k. Codes run from 0 to n (LightGBM's
 * default 255 bins give n <= 254; see "Bytes" below for more).
 *
 * Missing values: code 0 passes every node (0 > k never holds) and code n fails every
 * node (k <= n - 1). A missing value goes the same way at every node of a feature that
 * shares the node's missing rule, so each node reads the codes of a "slot": its feature
 * seen through its rule, one of up to four per feature:
 *     NaN -> 0 (missing goes left) or n (missing goes right), and
 *     values in LightGBM's zero range [-Z, Z] -> their natural code (the node does not
 *     treat zero as missing: tsm_model_finish guarantees no threshold splits that range,
 *     so they all share 0.0's code) or the NaN code (a zero-is-missing node).
 * So every node is exactly "code[slot] > k" and needs nothing else.
 *
 * Bytes: codes are stored in 8 bits. A feature of n > 255 thresholds is cut into
 * segments of TSQ_SEGMENT thresholds, each a slot of its own: segment s holds the code
 * clamped to its range, min(max(code - 255 s, 0), 255), and a node whose k lies in
 * segment s tests "code_s > k - 255 s", which is exact: a code above the segment is 255
 * (above every k - 255 s <= 254), one below it is 0 (not above any). XGBoost's 256 bins
 * give 256 thresholds on some features: two segments there, bytes everywhere.
 *
 * Search tables: feature j's thresholds are stored from thr[table] on, padded with +inf
 * to 2^steps entries, 2^steps > n (at least one +inf), then TSQ_TABLE_PAD more. The branch-free search
 *     pos = 0; for s = 2^(steps-1) .. 1 (halving): if (thr[pos + s - 1] < x) pos += s;
 * ends with pos = code(x): the +inf padding is never below any x.
 *
 * Block tables: a feature of TSQ_BLOCK_MIN < n <= 256 thresholds also has a two-level
 * table of TSQ_BLOCK_FLOATS floats at blk[blocks], of blocks of s = tsq_block_size(n) =
 * ceil(n / 16) thresholds (entries past n are +inf):
 *     P[b] = T[s b + s - 1]          b = 0 .. 15, the pivots, then
 *     U_k[b] = T[s b + k]            k = 0 .. s - 2, 16 floats each (+inf up to k = 14)
 * so that a SIMD kernel finds a lane's block with a binary search among the pivots in one
 * register (b' = #{b < 15 : P[b] < x}) and counts the s - 1 other thresholds of that
 * block with a permute per k, whatever the lane's code:
 *     code(x) = s b' + #{k < s - 1 : U_k[b'] < x} + [P[15] < x]
 * (the last term only for n = 16 s, where x above T[n - 1] has code n). A linear scan of
 * the thresholds costs as much as the largest code among the lanes; this costs about 60
 * instructions per 16 lanes at 256 thresholds, half that at 128.
 *
 * Chunk tables: a feature of TSQ_BLOCK_MAX < n <= TSQ_CHUNK_MAX thresholds (scikit-learn's
 * exact splitter: hundreds per feature) has ceil(n / 256) block tables at blk[chunks],
 * the c-th the block table of T[256 c .. 256 c + 255] (+inf past n). Counts add up, so
 *     code(x) = sum over c of (the c-th table's code of x)
 * which the AVX-512 and AVX2 float kernels compute in a few permutes per chunk instead
 * of a binary search with one gather per step (floats only: the double tables have
 * none, and the scalar kernel searches as before; past TSQ_CHUNK_MAX both SIMD kernels
 * take the binary search, a gather per step). Since T is sorted, a table's count is 0
 * for every x <= U_0[0] (its first threshold; the later chunks' counts too) and its size
 * for every x > P[15] (a full table; a block table: x > T[n - 1] gives n): the AVX2
 * kernel tests its 8 lanes against those two first and looks up only where they differ
 * (the lanes of a group often share a range of a feature: zeros, small counts).
 *
 * Register tables (the AVX2 kernel): a feature of TSQ_REG_MIN < n <= TSQ_REG_MAX
 * thresholds also has a two-level table of TSQ_REG_FLOATS floats at blk[regs], of blocks
 * of s = ceil(n / 8) thresholds (entries past n are +inf):
 *     P[b] = T[s b + s - 1]          b = 0 .. 7, the pivots, then
 *     U_k[b] = T[s b + k]            k = 0 .. s - 2, 8 floats each
 * so that 8 lanes find their block by a binary search among the pivots in one register
 * (b' = #{b < 7 : P[b] < x}: three permutes) and count the block's other thresholds with
 * a permute per k:
 *     code(x) = s b' + #{k < s - 1 : U_k[b'] < x} + [P[7] < x]
 * (every threshold of a block below b' is at most P[b' - 1] < x, none above is below
 * P[b'] >= x, and the last term counts T[8 s - 1] where n = 8 s). At most ten permutes
 * and no gathers, whatever the codes, against a linear scan's compares up to the largest
 * code of the lanes or a bucket table's gathers.
 *
 * Bucket tables (the AVX2 kernel, for features of more than TSQ_REG_MAX thresholds, in
 * place of its block and chunk tables, which cost about 20 16-entry lookups per 256
 * thresholds; the AVX-512 kernel, for features of more than TSQ_BLOCK_MAX): a value's
 * code from a table indexed by the value's bits, then a few thresholds. The key of a float's bits (tsq_key) orders keys as the floats (-0.0 one
 * below 0.0; a threshold -0.0 is keyed as 0.0, which it equals). A feature's thresholds
 * cluster in keys (counts, ratios, scores of either sign: the keys between the least
 * negative threshold, 0.0 and the least positive one, half of all, hold none), so the two
 * widest gaps between consecutive thresholds' keys are collapsed, each to a bucket's
 * width (the other keys' span over TSQ_BUCKETS_MAX, at least 1):
 *     collapsed(k) = k - sum over both gaps of (min(max(k, gap_lo), gap_hi) - gap_lo)
 * (gap_lo: the key that width after the threshold below the gap, gap_hi: the key before
 * the one above; gap_lo = gap_hi = 0, the identity, where a gap is no wider), and
 *     bucket(x) = min((max(collapsed(key(x)), kmin) - kmin) >> shift, last)
 * with kmin the least threshold's collapsed key. bucket is non-decreasing in x (every
 * step is), so a threshold T of a lower bucket than x's is below x, one of a higher
 * bucket is not (T >= x), and
 *     code(x) = B[bucket(x)] + #{ i in the bucket : T[i] < x },  B[b] = #{ i : bucket(T[i]) < b }
 * which the kernel finds with a gather of B[bucket(x)] (16 bits) and a binary search of
 * `win` steps over the 2^win - 1 thresholds from T[B] on (at most that many share a
 * bucket; the search table's TSQ_TABLE_PAD +inf cover a window read from any code).
 * NaN and infinite x get some bucket: their codes are set apart (NaN) or right (+-inf
 * clamp to the first and last bucket). The shift is the least that gives at most
 * TSQ_BUCKETS_MAX buckets (or up to TSQ_BUCKETS_MOST where that puts more than
 * 2^TSQ_WINDOW_MAX - 1 in a bucket: evenly spaced thresholds over many powers of two
 * crowd the highest), then larger while no bucket holds more than the window; a feature
 * whose window would still be wider (a run of 8 consecutive floats) keeps its block or
 * chunk tables (tsq.bk[j].first = UINT32_MAX). Codes are the same by construction as
 * every other search's. The tables are on the floats, so double rows rounded up to
 * floats ("Gap floats") take them too.
 *
 * Double codes (tsq_build_f64): a library that compares double inputs with double
 * thresholds (LightGBM: snap(v) <= d, snap(v) = 0.0 when |v| <= TSM_ZERO_RANGE, else v)
 * has its codes defined on the model's distinct *double* thresholds D[0] < .. < D[n-1]
 * of each feature instead:
 *
 *     code(v) = #{ i : D[i] < snap(v) }      so      snap(v) <= D[k]  iff  code(v) <= k
 *
 * with k = #{ i : D[i] < d } for a node of double threshold d: exact by construction for
 * every double v, whatever the float32 gaps (two thresholds in one float gap just get
 * two k). NaN and zero-is-missing values take the slot's missing code as above (the zero
 * range is the same set of doubles as the float one, |v| <= (double)TSM_ZERO_RANGE). The
 * double tables (thr_d, blk_d) have the float tables' layout, entry for entry. The
 * float tables then hold, for each D[i], its node's float threshold F[i] (several D may
 * share one F), and a float x gets the same code from them: F is the largest float x
 * with snap(x) <= D (tsm_threshold_lightgbm), so for a float x, x <= F[i] iff snap(x) <=
 * D[i], and #{ i : F[i] < x } = #{ i : D[i] < snap(x) }. That needs F non-decreasing
 * along D and equal D with equal F, which tsq_build_f64 checks (else it builds the float
 * codes, and q->doubles stays 0). The searches above only need the tables sorted, not
 * distinct, so float rows are coded as before.
 *
 * Gap floats (thr_n): double rows can be coded on the float tables too. With u the
 * value v rounded up to a float, the float code c = #{ i : F[i] < u } counts every D[i] <
 * snap(v), and more only when some D[i] >= snap(v) has F[i] < u: then v is no float, d <
 * v < u for the float d below u, and F[i] (at most d, and at least d, which snaps to at
 * most D[i]) is d: the largest F below u, F[c - 1], is d, and D[i] is no float. So
 * thr_n[i] = the float after F[i] where (double)F[i] != D[i], else NaN, and only lanes
 * with thr_n[c - 1] == u (values in the float gap of a threshold: rare; c = 0 never
 * matches, since every F[i] >= u there) need their code from the doubles. The zero range
 * is the same in floats for u, except for v just below -Z (u = -Z, v < -Z): those lanes
 * too, on features whose zero range matters (zero-is-missing nodes, or `snap`). Float
 * codes of u in the zero range are 0.0's code when no F lies in [-Z, Z) (LightGBM's F
 * never does: tsm_threshold_lightgbm); a feature with one (float thresholds of a model
 * built in memory) has `snap` set, and its zero-range lanes are coded as 0.0.
 */

/* Thresholds per segment: a segment's codes run from 0 to 255. */
/* Bucket tables (above): at most TSQ_BUCKETS_MAX buckets per feature, at most
 * 2^TSQ_WINDOW_MAX - 1 thresholds per bucket; every search table is padded with
 * TSQ_TABLE_PAD more +inf (NaN in thr_n) so that a window read from any code stays in it. */
#define TSQ_BUCKETS_MAX 2048u
#define TSQ_BUCKETS_MOST 16384u
#define TSQ_WINDOW_MAX 3u
#define TSQ_TABLE_PAD 8u
#define TSQ_SEGMENT 255u

/* Block tables (above): for features of more than TSQ_BLOCK_MIN and at most
 * TSQ_BLOCK_MAX thresholds, TSQ_BLOCK_FLOATS floats each. */
#define TSQ_BLOCK_MIN 32u
#define TSQ_BLOCK_MAX 256u
#define TSQ_BLOCK_FLOATS 256u
/* A block table's block size (above); a chunk table's is 16. */
static inline uint32_t tsq_block_size(uint32_t n_thr) { return (n_thr + 15) / 16; }
/* Chunk tables (above): features of at most this many thresholds. */
#define TSQ_CHUNK_MAX 1024u
/* Register tables (above): for features of more than TSQ_REG_MIN and at most TSQ_REG_MAX
 * thresholds, TSQ_REG_FLOATS floats each. */
#define TSQ_REG_MIN 4u
#define TSQ_REG_MAX 64u
#define TSQ_REG_FLOATS 64u

typedef struct tsq_feature {
    uint32_t column;     /* the model column */
    uint32_t n_thr;      /* distinct thresholds (>= 1) */
    uint32_t steps;      /* log2 of its table size */
    uint32_t table;      /* its first entry in tsq.thr */
    uint32_t has_zero;   /* a TSM_ZERO_IS_MISSING node reads it */
    uint32_t blocks;     /* its block table's first float in tsq.blk, or UINT32_MAX */
    uint32_t chunks;     /* its chunk tables' first float in tsq.blk, or UINT32_MAX */
    uint32_t snap;       /* double codes: a float threshold lies in [-Z, Z) ("Gap floats") */
    uint32_t regs;       /* its register table's first float in tsq.blk, or UINT32_MAX */
} tsq_feature;

/* A feature's bucket table (quant.h "Bucket tables"). */
typedef struct tsq_bucket {
    uint32_t first;      /* its first entry in tsq.bkt, or UINT32_MAX: none */
    uint32_t kmin;       /* the least collapsed key of its thresholds */
    uint32_t shift;      /* bucket = min((collapsed key - kmin) >> shift, last) */
    uint32_t last;       /* its last bucket */
    uint32_t gap_lo[2], gap_hi[2]; /* the collapse: key minus min(max(key, lo), hi) - lo of both */
    uint32_t win;        /* log2 of the window: at most 2^win - 1 thresholds per bucket */
} tsq_bucket;

/* The ordered key of a float's bits: unsigned order of keys is the float order (-0.0 one
 * below 0.0; thresholds are keyed as 0.0 there). */
static inline uint32_t tsq_key(uint32_t bits) { return bits ^ ((uint32_t)((int32_t)bits >> 31) | 0x80000000u); }

/* How a slot sees missing values (quant.h "Missing values"). */
#define TSQ_MISSING_RIGHT 1u   /* NaN -> n, else NaN -> 0 */
#define TSQ_ZERO_MISSING 2u    /* zero-range values -> the NaN code, else their own */

typedef struct tsq_slot {
    uint32_t feature;    /* index in tsq.f */
    uint32_t rule;       /* TSQ_MISSING_RIGHT | TSQ_ZERO_MISSING */
    uint32_t base;       /* TSQ_SEGMENT * its segment: the first threshold it covers */
} tsq_slot;

typedef struct tsq {
    uint32_t n_used;     /* features splits read */
    tsq_feature *f;      /* n_used, ascending columns */
    float *thr;          /* every feature's padded table */
    float *blk;          /* the block tables (64-byte aligned) */
    uint32_t max_thr;    /* most thresholds of one feature */
    uint32_t n_slots;    /* slots nodes read, by feature, then rule, then segment */
    tsq_slot *slots;
    uint32_t *slot_first; /* n_used + 1: feature j's slots are [slot_first[j], slot_first[j+1]) */
    uint32_t (*slot_of)[4]; /* n_used: feature j's first slot (segment 0) of each rule, or UINT32_MAX */
    int doubles;         /* double codes ("Double codes"): thr_d and blk_d are set */
    double *thr_d;       /* as thr, the double thresholds D (padded with +inf) */
    double *blk_d;       /* as blk, in doubles (64-byte aligned) */
    float *thr_n;        /* as thr ("Gap floats"): the float after F[i] where D[i] is no float, else NaN;
                          * NaN padding */
    tsq_bucket *bk;      /* n_used: each feature's bucket table ("Bucket tables") */
    uint16_t *bkt;       /* the bucket tables: per bucket the thresholds of the buckets below */
} tsq;

/* The codes of m. */
ts_status tsq_build(tsq *q, const ts_model *m, ts_error *err);

/* The double codes of m ("Double codes") when m->compares_double and its float thresholds
 * allow them (q->doubles = 1), else the codes of tsq_build (q->doubles = 0). */
ts_status tsq_build_f64(tsq *q, const ts_model *m, ts_error *err);
void tsq_free(tsq *q);

/* The index in q->f of a column, or UINT32_MAX when no split reads it. */
uint32_t tsq_feature_of(const tsq *q, uint32_t column);

/* The slot a node reads (its feature seen through its missing rule, the segment of its
 * threshold), and in *k its k within that segment (0 .. TSQ_SEGMENT - 1). For codes of
 * tsq_build only (q->doubles == 0); tsq_tree_node_slot takes either. */
uint32_t tsq_node_slot(const tsq *q, const tsm_node *node, uint32_t *k);

/* The same for node i of tree t (its double threshold when q->doubles). */
uint32_t tsq_tree_node_slot(const tsq *q, const tsm_tree *t, uint32_t i, uint32_t *k);

/* k with T[k] == t for a threshold t of feature j (index in q->f). */
uint32_t tsq_index(const tsq *q, uint32_t j, float t);

/* The natural code of x for feature j (index in q->f): 0 for NaN. */
static inline uint32_t tsq_code(const tsq *q, uint32_t j, float x) {
    const tsq_feature *f = &q->f[j];
    const float *t = q->thr + f->table;
    uint32_t pos = 0;
    for (uint32_t s = (1u << f->steps) >> 1; s; s >>= 1) pos += (t[pos + s - 1] < x) ? s : 0;
    return pos;
}

/* The code of x in slot s (0 .. 255): the natural code, or the slot's code for missing
 * values, clamped to the slot's segment. */
static inline uint32_t tsq_slot_code(const tsq *q, uint32_t s, float x) {
    const tsq_slot *sl = &q->slots[s];
    const tsq_feature *f = &q->f[sl->feature];
    uint32_t missing = sl->rule & TSQ_MISSING_RIGHT ? f->n_thr : 0, c;
    if (x != x)
        c = missing;
    else if ((sl->rule & TSQ_ZERO_MISSING) && x >= -TSM_ZERO_RANGE && x <= TSM_ZERO_RANGE)
        c = missing;
    else
        c = tsq_code(q, sl->feature, x);
    c = c > sl->base ? c - sl->base : 0;
    return c > 255 ? 255 : c;
}

/* The natural double code of v for feature j (q->doubles; v not NaN, already snapped:
 * tsq_slot_code_d). */
static inline uint32_t tsq_code_d(const tsq *q, uint32_t j, double v) {
    const tsq_feature *f = &q->f[j];
    const double *t = q->thr_d + f->table;
    uint32_t pos = 0;
    for (uint32_t s = (1u << f->steps) >> 1; s; s >>= 1) pos += (t[pos + s - 1] < v) ? s : 0;
    return pos;
}

/* tsq_slot_code for a double v under double codes (q->doubles): the definition the
 * kernels' double quantizers match. */
static inline uint32_t tsq_slot_code_d(const tsq *q, uint32_t s, double v) {
    const tsq_slot *sl = &q->slots[s];
    const tsq_feature *f = &q->f[sl->feature];
    uint32_t missing = sl->rule & TSQ_MISSING_RIGHT ? f->n_thr : 0, c;
    if (v != v)
        c = missing;
    else if (v >= -(double)TSM_ZERO_RANGE && v <= (double)TSM_ZERO_RANGE)
        c = sl->rule & TSQ_ZERO_MISSING ? missing : tsq_code_d(q, sl->feature, 0.0);
    else
        c = tsq_code_d(q, sl->feature, v);
    c = c > sl->base ? c - sl->base : 0;
    return c > 255 ? 255 : c;
}

/* v rounded up to a float (u of "Gap floats"), whatever the FPU's rounding mode: the
 * nearest float, or the one after it when that lies below v (NaN stays NaN). */
static inline float tsq_round_up(double v) {
    float u = (float)v;
    uint32_t b;
    memcpy(&b, &u, sizeof b);
    /* below v (so no NaN, no +inf, no -0.0): one step up, +1 from +0.0 or a positive
     * float, -1 from a negative one; without a branch (half of all doubles round down) */
    b += (uint32_t)((double)u < v) * (1u - ((b >> 31) << 1));
    memcpy(&u, &b, sizeof u);
    return u;
}

/*
 * Quantizers
 * ----------
 * A quantizer codes one group of rows for a kernel of `lanes` documents: rows
 * x[0 .. nd) (nd <= lanes) into codes[slot * lanes + lane], each XOR the tables' flip
 * (0, or 0x80 for kernels that compare signed bytes), from the tables alone. The SIMD
 * quantizers are part of the rapid engine's ISA kernels (rapid.h, rapid_template.h),
 * which code their own groups with them; coder.h hands them to other engines.
 */
typedef struct tsq_tables {
    tsq q;               /* the codes */
    uint32_t flip;       /* codes stored XOR this (0 or 0x80) */
} tsq_tables;

typedef void (*tsq_quantizer)(const tsq_tables *t, const float *x, size_t stride, size_t nd, uint8_t *codes);
typedef void (*tsq_quantizer_f64)(const tsq_tables *t, const double *x, size_t stride, size_t nd, uint8_t *codes);

/* A quantizer with what its caller must know of it. */
typedef struct tsq_quantizer_kind {
    ts_isa isa;          /* the level it needs */
    uint32_t lanes;      /* documents per group */
    uint32_t flip;       /* the flip its tables must carry (0 or 0x80) */
    tsq_quantizer quantize;
    tsq_quantizer_f64 quantize_near; /* double rows, each value converted to the nearest
                                        float ((float)v, whatever the caller's rounding:
                                        a model that converts its input to float32), then
                                        coded as quantize codes; NULL: none */
} tsq_quantizer_kind;

/* The quantizer of the best level up to isa: rapid's kernel's there (defined in rapid.c,
 * beside rs_kernels_for). */
tsq_quantizer_kind tsq_quantizer_for(ts_isa isa);

#endif /* TS_ENGINES_QUANT_H */
