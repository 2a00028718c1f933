/* scorer.c: ts_scorer, a model prepared for one engine; argument checks and engine choice. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/error.h"
#include "engines/engine.h"
#include "runtime/f64.h"

/* Immutable after ts_scorer_create: ts_scorer_score only reads it, which is what makes
 * concurrent scoring on one scorer safe without locks. */
struct ts_scorer {
    const tse_engine *engine;
    void *state;                 /* the engine's read-only layout */
    tsr_f64 *f64;                /* double inputs of a library comparing in double; else NULL */
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
    st = tsr_f64_prepare(m, &s->f64, err);
    if (st != TS_OK) {
        eng->free(s->state);
        free(s);
        return st;
    }
    *out = s;
    return TS_OK;
}

void ts_scorer_free(ts_scorer *s) {
    if (!s) return;
    s->engine->free(s->state);
    tsr_f64_free(s->f64);
    free(s);
}

ts_engine ts_scorer_engine(const ts_scorer *s) { return s ? s->engine->id : TS_ENGINE_AUTO; }
uint32_t ts_scorer_n_features(const ts_scorer *s) { return s ? s->n_features : 0; }

static ts_status check_batch(const ts_scorer *s, const void *x, size_t n_rows, size_t n_cols, size_t row_stride,
                             const double *out, const char *fn, ts_error *err) {
    if (!s) return ts_fail(err, TS_ERR_INVALID_ARGUMENT, "%s: scorer is NULL", fn);
    if (n_rows == 0) return TS_OK;
    if (!x || !out) return ts_fail(err, TS_ERR_INVALID_ARGUMENT, "%s: x and out must not be NULL", fn);
    if (n_cols < s->n_features)
        return ts_fail(err, TS_ERR_SHAPE, "the data has %zu columns but the model reads %u", n_cols, s->n_features);
    if (row_stride < n_cols)
        return ts_fail(err, TS_ERR_INVALID_ARGUMENT, "row_stride %zu is smaller than n_cols %zu", row_stride, n_cols);
    return TS_OK;
}

ts_status ts_scorer_score(const ts_scorer *s, const float *x, size_t n_rows, size_t n_cols, size_t row_stride,
                          double *out, ts_error *err) {
    TS_TRY(check_batch(s, x, n_rows, n_cols, row_stride, out, "ts_scorer_score", err));
    if (n_rows) s->engine->score(s->state, x, n_rows, row_stride, out);
    return TS_OK;
}

/* Double rows are converted to float rows in sub-batches on the stack (F64_STACK_FLOATS
 * floats, at most F64_BATCH rows), scored by the engine, and scattered back; rows that
 * no float row can stand for are scored by the exact double traversal instead. */
#define F64_STACK_FLOATS 16384
#define F64_BATCH 64

/* Convert rows [r0, r0 + n) into buf; idx gets the rows the engine will score. */
static size_t convert_rows(const ts_scorer *s, const double *x, size_t r0, size_t n, size_t stride, float *buf,
                           size_t width, uint32_t *idx, double *out) {
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        const double *row = x + (r0 + i) * stride;
        float *dst = buf + k * width;
        if (!s->f64) { /* the library converts to float32 itself */
            for (size_t j = 0; j < s->n_features; j++) dst[j] = (float)row[j];
            idx[k++] = (uint32_t)i;
            continue;
        }
        if (tsr_f64_round_row(s->f64, row, dst)) /* writes the columns splits read */
            idx[k++] = (uint32_t)i;
        else
            out[r0 + i] = tsr_f64_score_row(s->f64, row);
    }
    return k;
}

ts_status ts_scorer_score_f64(const ts_scorer *s, const double *x, size_t n_rows, size_t n_cols,
                              size_t row_stride, double *out, ts_error *err) {
    TS_TRY(check_batch(s, x, n_rows, n_cols, row_stride, out, "ts_scorer_score_f64", err));
    float stack_buf[F64_STACK_FLOATS];
    uint32_t idx[F64_BATCH];
    double part[F64_BATCH];
    size_t width = s->n_features ? s->n_features : 1;
    size_t per = F64_STACK_FLOATS / width;
    float *buf = stack_buf;
    if (per == 0) { /* rows wider than the stack buffer: the one documented allocation */
        buf = malloc(width * sizeof *buf);
        if (!buf) return ts_fail(err, TS_ERR_NO_MEMORY, "out of memory for a row of %zu features", width);
        per = 1;
    }
    if (per > F64_BATCH) per = F64_BATCH;
    /* Columns no split reads are never written: zero them once, for tidiness. */
    if (s->f64) memset(buf, 0, (n_rows < per ? n_rows : per) * width * sizeof *buf);
    for (size_t r0 = 0; r0 < n_rows; r0 += per) {
        size_t n = n_rows - r0 < per ? n_rows - r0 : per;
        size_t k = convert_rows(s, x, r0, n, row_stride, buf, width, idx, out);
        if (k == 0) continue;
        s->engine->score(s->state, buf, k, width, part);
        for (size_t q = 0; q < k; q++) out[r0 + idx[q]] = part[q];
    }
    if (buf != stack_buf) free(buf);
    return TS_OK;
}
