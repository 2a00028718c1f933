/* scorer.c: ts_scorer, a model prepared for one engine; argument checks and engine choice. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/error.h"
#include "engines/engine.h"

/* Immutable after ts_scorer_create: ts_scorer_score only reads it, which is what makes
 * concurrent scoring on one scorer safe without locks. */
struct ts_scorer {
    const tse_engine *engine;
    void *state;                 /* the engine's read-only layout */
    uint32_t n_features;         /* columns a row must have */
    unsigned n_threads;          /* as asked; threads arrive with the threads issue */
};

void ts_scorer_options_init(ts_scorer_options *o) {
    if (!o) return;
    memset(o, 0, sizeof *o);
    o->engine = TS_ENGINE_AUTO;
    o->n_threads = 0;
}

/* The engine AUTO stands for, by a rule of thumb until the planner measures: QuickScorer
 * visits every false node (about 40% of all nodes) where a root-to-leaf walk visits the
 * depth, so it wins on trees of up to 64 leaves and loses on wider ones. Measured with
 * treescore bench on LightGBM lambdarank models (docs/benchmarks.md): qs/naive speed
 * 4.0x at 1,000 x 64 leaves, 0.93x at 500 x 127, 0.43x at 300 x 255. */
static ts_engine resolve_auto(const ts_model *m) {
    for (uint32_t t = 0; t < m->n_trees; t++)
        if (m->trees[t].n_leaves > 64) return TS_ENGINE_NAIVE;
    return TS_ENGINE_QS;
}

ts_status ts_scorer_create(const ts_model *m, const ts_scorer_options *opts, ts_scorer **out, ts_error *err) {
    ts_scorer_options defaults;
    if (out) *out = NULL;
    if (!m || !out) return ts_fail(err, TS_ERR_INVALID_ARGUMENT, "ts_scorer_create: model and out must not be NULL");
    if (!opts) {
        ts_scorer_options_init(&defaults);
        opts = &defaults;
    }
    ts_engine id = opts->engine == TS_ENGINE_AUTO ? resolve_auto(m) : opts->engine;
    const tse_engine *eng = tse_engine_get(id);
    if (!eng) return ts_fail(err, TS_ERR_ENGINE_UNAVAILABLE, "engine %d is not built into this treescore", (int)id);
    ts_scorer *s = calloc(1, sizeof *s);
    if (!s) return ts_fail(err, TS_ERR_NO_MEMORY, "out of memory creating a scorer");
    s->engine = eng;
    s->n_features = m->n_features;
    s->n_threads = opts->n_threads;
    ts_status st = eng->prepare(m, opts, &s->state, err);
    if (st != TS_OK) {
        free(s);
        return st;
    }
    *out = s;
    return TS_OK;
}

void ts_scorer_free(ts_scorer *s) {
    if (!s) return;
    s->engine->free(s->state);
    free(s);
}

ts_engine ts_scorer_engine(const ts_scorer *s) { return s ? s->engine->id : TS_ENGINE_AUTO; }
uint32_t ts_scorer_n_features(const ts_scorer *s) { return s ? s->n_features : 0; }

ts_status ts_scorer_score(const ts_scorer *s, const float *x, size_t n_rows, size_t n_cols, size_t row_stride,
                          double *out, ts_error *err) {
    if (!s) return ts_fail(err, TS_ERR_INVALID_ARGUMENT, "ts_scorer_score: scorer is NULL");
    if (n_rows == 0) return TS_OK;
    if (!x || !out) return ts_fail(err, TS_ERR_INVALID_ARGUMENT, "ts_scorer_score: x and out must not be NULL");
    if (n_cols < s->n_features)
        return ts_fail(err, TS_ERR_SHAPE, "the data has %zu columns but the model reads %u", n_cols, s->n_features);
    if (row_stride < n_cols)
        return ts_fail(err, TS_ERR_INVALID_ARGUMENT, "row_stride %zu is smaller than n_cols %zu", row_stride, n_cols);
    s->engine->score(s->state, x, n_rows, row_stride, out);
    return TS_OK;
}
