/* scorer.c: ts_scorer, a model prepared for one engine; argument checks and engine choice. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/error.h"
#include "engines/engine.h"
#include "runtime/f64.h"
#include "runtime/planner.h"
#include "runtime/pool.h"
#include "runtime/scratch.h"

/* Immutable after ts_scorer_create: ts_scorer_score only reads it, which is what makes
 * concurrent scoring on one scorer safe without locks. */
struct ts_scorer {
    const tse_engine *engine;
    void *state;                 /* the engine's read-only layout */
    tse_layout layout;           /* what the engine chose: ISA, blocks, scratch, chunk size */
    tsr_f64 *f64;                /* double inputs of a library comparing in double; else NULL */
    uint32_t n_features;         /* columns a row must have */
    unsigned n_threads;          /* threads per batch, >= 1 */
    char *plan_report;           /* the planner's report (AUTO), else NULL */
};

/* More threads than this per batch are never useful and bound the pool's chunking. */
#define MAX_THREADS 1024u

void ts_scorer_options_init(ts_scorer_options *o) {
    if (!o) return;
    memset(o, 0, sizeof *o);
    o->engine = TS_ENGINE_AUTO;
    o->n_threads = 0;
    o->max_isa = TS_ISA_AUTO;
}

static ts_status check_options(const ts_scorer_options *o, ts_error *err) {
    if ((unsigned)o->engine >= TS_ENGINE_COUNT)
        return ts_fail(err, TS_ERR_INVALID_ARGUMENT, "unknown engine %d", (int)o->engine);
    if ((unsigned)o->plan > TS_PLAN_RULE)
        return ts_fail(err, TS_ERR_INVALID_ARGUMENT, "unknown plan %d", (int)o->plan);
    if ((unsigned)o->max_isa >= TS_ISA_COUNT)
        return ts_fail(err, TS_ERR_INVALID_ARGUMENT, "unknown instruction set %d", (int)o->max_isa);
    for (size_t i = 0; i < sizeof o->reserved / sizeof o->reserved[0]; i++)
        if (o->reserved[i])
            return ts_fail(err, TS_ERR_INVALID_ARGUMENT,
                           "ts_scorer_options.reserved must be zero (call ts_scorer_options_init)");
    return TS_OK;
}

ts_status ts_scorer_create(const ts_model *m, const ts_scorer_options *opts, ts_scorer **out, ts_error *err) {
    ts_scorer_options defaults;
    if (out) *out = NULL;
    if (!m || !out) return ts_fail(err, TS_ERR_INVALID_ARGUMENT, "ts_scorer_create: model and out must not be NULL");
    if (!opts) {
        ts_scorer_options_init(&defaults);
        opts = &defaults;
    }
    TS_TRY(check_options(opts, err));
    tse_config cfg = {tsr_isa_resolve(opts->max_isa), opts->tau, opts->delta, opts->lanes};
    ts_scorer *s = calloc(1, sizeof *s);
    if (!s) return ts_fail(err, TS_ERR_NO_MEMORY, "out of memory creating a scorer");
    s->n_features = m->n_features;
    s->n_threads = opts->n_threads ? opts->n_threads : ts_cpu_count();
    if (s->n_threads > MAX_THREADS) s->n_threads = MAX_THREADS;
    ts_status st;
    if (opts->engine == TS_ENGINE_AUTO) {
        tsr_plan plan;
        st = tsr_plan_engine(m, opts, &cfg, s->n_threads, &plan, err);
        s->engine = plan.engine;
        s->state = plan.state;
        s->layout = plan.layout;
        s->plan_report = plan.report;
    } else {
        s->engine = tse_engine_get(opts->engine);
        st = s->engine ? s->engine->prepare(m, &cfg, &s->state, &s->layout, err)
                       : ts_fail(err, TS_ERR_ENGINE_UNAVAILABLE, "engine %d is not built into this treescore",
                                 (int)opts->engine);
    }
    if (st != TS_OK) {
        free(s);
        return st;
    }
    if (s->layout.rows_per_chunk == 0) s->layout.rows_per_chunk = 1;
    /* Tuning and testing knob: TREESCORE_CHUNK_ROWS=N splits batches into chunks of N
     * rows (the tests use tiny chunks so that small batches exercise the pool). */
    const char *chunk = getenv("TREESCORE_CHUNK_ROWS");
    if (chunk && atol(chunk) > 0) s->layout.rows_per_chunk = (size_t)atol(chunk);
    st = tsr_f64_prepare(m, &s->f64, err);
    if (st != TS_OK) {
        s->engine->free(s->state);
        free(s->plan_report);
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
    free(s->plan_report);
    free(s);
}

ts_engine ts_scorer_engine(const ts_scorer *s) { return s ? s->engine->id : TS_ENGINE_AUTO; }
uint32_t ts_scorer_n_features(const ts_scorer *s) { return s ? s->n_features : 0; }
uint32_t ts_scorer_n_outputs(const ts_scorer *s) { return s ? 1 : 0; }
ts_isa ts_scorer_isa(const ts_scorer *s) { return s ? s->layout.isa : TS_ISA_AUTO; }
unsigned ts_scorer_n_threads(const ts_scorer *s) { return s ? s->n_threads : 0; }

const char *ts_scorer_plan_report(const ts_scorer *s) {
    if (!s) return "no scorer";
    return s->plan_report ? s->plan_report : "engine requested\n";
}

void ts_scorer_blocking(const ts_scorer *s, uint32_t *tau, uint32_t *delta) {
    if (tau) *tau = s ? s->layout.tau : 0;
    if (delta) *delta = s ? s->layout.delta : 0;
}

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

/* Rows per chunk of a batch (see tsr_grain). */
static size_t grain_for(const ts_scorer *s, size_t n_rows) {
    return tsr_grain(s->n_threads, n_rows, s->layout.rows_per_chunk);
}

static void *chunk_scratch(const ts_scorer *s) {
    return s->layout.scratch_bytes ? tsr_scratch(s->layout.scratch_bytes) : NULL;
}

/* One batch of double rows handed to the pool (score_f64_chunk; float rows go through
 * tsr_score_chunk). */
typedef struct score_job {
    const ts_scorer *s;
    const void *x;
    size_t stride;
    double *out;
} score_job;

static ts_status no_scratch(const ts_scorer *s, ts_error *err) {
    return ts_fail(err, TS_ERR_NO_MEMORY, "out of memory for %zu bytes of scoring scratch memory",
                   s->layout.scratch_bytes);
}

ts_status ts_scorer_score(const ts_scorer *s, const float *x, size_t n_rows, size_t n_cols, size_t row_stride,
                          double *out, ts_error *err) {
    TS_TRY(check_batch(s, x, n_rows, n_cols, row_stride, out, "ts_scorer_score", err));
    if (n_rows == 0) return TS_OK;
    tsr_score_job job = {s->engine, s->state, s->layout.scratch_bytes, x, row_stride, out};
    ts_status st = tsr_parallel_for(s->n_threads, n_rows, grain_for(s, n_rows), tsr_score_chunk, &job);
    return st == TS_OK ? TS_OK : no_scratch(s, err);
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

/* Rows [begin, end) of a double batch, in sub-batches through a stack buffer. */
static ts_status score_f64_chunk(void *ctx, size_t begin, size_t end) {
    const score_job *j = ctx;
    const ts_scorer *s = j->s;
    float stack_buf[F64_STACK_FLOATS];
    uint32_t idx[F64_BATCH];
    double part[F64_BATCH];
    size_t width = s->n_features ? s->n_features : 1;
    size_t per = F64_STACK_FLOATS / width, n_rows = end - begin;
    float *buf = stack_buf;
    void *scratch = chunk_scratch(s);
    if (s->layout.scratch_bytes && !scratch) return TS_ERR_NO_MEMORY;
    if (per == 0) { /* rows wider than the stack buffer: the one documented allocation */
        buf = malloc(width * sizeof *buf);
        if (!buf) return TS_ERR_NO_MEMORY;
        per = 1;
    }
    if (per > F64_BATCH) per = F64_BATCH;
    /* Columns no split reads are never written: zero them once, for tidiness. */
    if (s->f64) memset(buf, 0, (n_rows < per ? n_rows : per) * width * sizeof *buf);
    for (size_t r0 = begin; r0 < end; r0 += per) {
        size_t n = end - r0 < per ? end - r0 : per;
        size_t k = convert_rows(s, j->x, r0, n, j->stride, buf, width, idx, j->out);
        if (k == 0) continue;
        s->engine->score(s->state, buf, k, width, part, scratch);
        for (size_t q = 0; q < k; q++) j->out[r0 + idx[q]] = part[q];
    }
    if (buf != stack_buf) free(buf);
    return TS_OK;
}

ts_status ts_scorer_score_f64(const ts_scorer *s, const double *x, size_t n_rows, size_t n_cols,
                              size_t row_stride, double *out, ts_error *err) {
    TS_TRY(check_batch(s, x, n_rows, n_cols, row_stride, out, "ts_scorer_score_f64", err));
    if (n_rows == 0) return TS_OK;
    score_job job = {s, x, row_stride, out};
    ts_status st = tsr_parallel_for(s->n_threads, n_rows, grain_for(s, n_rows), score_f64_chunk, &job);
    return st == TS_OK ? TS_OK : ts_fail(err, st, "out of memory scoring double rows");
}
