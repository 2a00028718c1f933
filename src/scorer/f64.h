/* f64.h: scoring double rows exactly as the training library does (LightGBM compares in double). */
#ifndef TS_SCORER_F64_H
#define TS_SCORER_F64_H

#include <stddef.h>
#include <stdint.h>

#include "model/forest.h"

/*
 * The engines compare float32 values with float32 thresholds. A library that compares
 * double inputs with double thresholds (LightGBM) can send a double value v another way
 * than the float nearest to v would go, when a threshold lies in the same float gap as
 * v. For each used feature tsp_f64 keeps the sorted distinct double thresholds, and
 * rounds v to the float on the correct side of every one of them:
 *
 *   lo < v < hi adjacent floats; a threshold t has the float threshold T(t), the
 *   largest float <= t. Thresholds below lo or from hi up are passed the same way by
 *   lo, hi and v. A threshold t in [lo, hi) has T(t) = lo, so v <= t needs lo, and
 *   v > t needs hi. If both are needed (two thresholds in one gap, v between them) no
 *   float can stand for v: that row is scored by the exact double traversal instead.
 *
 * LightGBM also turns |v| <= 1e-35 into 0 before comparing; v outside that range must
 * not round into the engines' zero range [-1e-35f, 1e-35f] either.
 *
 * When the model has no gap with two thresholds (nor one at the zero-range edge), no
 * row ever needs the fallback, and its tables are not built.
 */
typedef struct tsp_f64 tsp_f64;

/* NULL in *out (and TS_OK) when the model converts inputs to float32 first
 * (!m->compares_double): then (float)v is exact. */
ts_status tsp_f64_prepare(const ts_model *m, tsp_f64 **out, ts_error *err);
void tsp_f64_free(tsp_f64 *f);

/* Round the first n_features values of a double row to floats for the engines.
 * Returns 0 when the row cannot be represented (score it with tsp_f64_score_row). */
int tsp_f64_round_row(const tsp_f64 *f, const double *in, float *out);

/* The exact double score of one row (base score included). */
double tsp_f64_score_row(const tsp_f64 *f, const double *row);

#endif /* TS_SCORER_F64_H */
