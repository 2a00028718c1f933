/* quant.h: exact feature codes: per feature the model's sorted distinct thresholds, and a value's code (how many of them lie below it). */
#ifndef TS_ENGINES_QUANT_H
#define TS_ENGINES_QUANT_H

#include <stdint.h>

#include "model/forest.h"

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
 * nodes of equal (feature, threshold) have equal k. Codes run from 0 to n: with at most
 * 255 thresholds on every feature they fit a byte (LightGBM's default 255 bins give at
 * most 254), else 16 bits (up to 65,535 thresholds; more and the model has no codes).
 *
 * NaN compares false with everything, so its code is 0: the code of a value that passes
 * every node. Missing values are not monotone (a node may send NaN right), so users of
 * codes apply the nodes that are false for NaN (and for LightGBM's zero range) on their
 * own, as QuickScorer does: the code only stands for the value's order.
 *
 * Search tables: feature j's thresholds are stored from thr[table] on, padded with +inf
 * to 2^steps entries, 2^steps > n (at least one +inf). The branch-free search
 *     pos = 0; for s = 2^(steps-1) .. 1 (halving): if (thr[pos + s - 1] < x) pos += s;
 * ends with pos = code(x): the +inf padding is never below any x.
 */

/* Most thresholds one feature may have for the model to get codes. */
#define TSQ_MAX_THRESHOLDS 65535u

typedef struct tsq_feature {
    uint32_t column;     /* the model column */
    uint32_t n_thr;      /* distinct thresholds (>= 1) */
    uint32_t steps;      /* log2 of its table size */
    uint32_t table;      /* its first entry in tsq.thr */
    uint32_t has_zero;   /* a TSM_ZERO_IS_MISSING node reads it */
} tsq_feature;

typedef struct tsq {
    uint32_t n_used;     /* features splits read */
    tsq_feature *f;      /* n_used, ascending columns: index = the feature's slot */
    float *thr;          /* every feature's padded table */
    uint32_t code_bits;  /* 8 or 16: every code fits */
    uint32_t max_thr;    /* most thresholds of one feature */
} tsq;

/* The codes of m. TS_ERR_UNSUPPORTED when a feature has more than TSQ_MAX_THRESHOLDS
 * thresholds (the message says which and how many). */
ts_status tsq_build(tsq *q, const ts_model *m, ts_error *err);
void tsq_free(tsq *q);

/* The slot of a column (its index in q->f), or UINT32_MAX when no split reads it. */
uint32_t tsq_slot(const tsq *q, uint32_t column);

/* k with T[k] == t for a threshold t of the feature in `slot`. */
uint32_t tsq_index(const tsq *q, uint32_t slot, float t);

/* code(x) for the feature in `slot` (0 for NaN). */
static inline uint32_t tsq_code(const tsq *q, uint32_t slot, float x) {
    const tsq_feature *f = &q->f[slot];
    const float *t = q->thr + f->table;
    uint32_t pos = 0;
    for (uint32_t s = (1u << f->steps) >> 1; s; s >>= 1) pos += (t[pos + s - 1] < x) ? s : 0;
    return pos;
}

#endif /* TS_ENGINES_QUANT_H */
