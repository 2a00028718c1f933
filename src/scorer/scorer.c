/* scorer.c: ts_scorer, a model prepared for one engine; argument checks and engine choice. */
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/error.h"
#include "engines/engine.h"
#include "model/derived.h"
#include "platform/clock.h"
#include "platform/config.h"
#include "platform/fpenv.h"
#include "platform/notes.h"
#include "platform/pool.h"
#include "scorer/chunk.h"
#include "scorer/f64.h"
#include "scorer/planner.h"
#include "scorer/trial.h"

/* One output's prepared engines: a model with K outputs has K parts. A part holds an
 * engine per batch-size range (planner.h: tsp_range_of), each distinct engine prepared
 * once; layout is the planned largest batches' engine's (ts_scorer_isa,
 * ts_scorer_blocking, rows per chunk), with layout.scratch_bytes the most any of its
 * engines needs. */
typedef struct tsp_part {
    tse_layout layout;           /* what that engine chose: ISA, blocks, scratch, chunk size */
    tsp_f64 *f64;                /* double inputs of a library comparing in double; else NULL */
    tsp_prepared eng[TSP_MAX_ENG];/* n_eng distinct engines (owned) */
    unsigned n_eng;
    uint8_t pick[TSP_RANGES];    /* range -> eng index, as planned */
    tsp_trials *trials;          /* contested ranges (scorer/trial.h; owned): their engine now
                                    is trials->pick[r]; NULL: none, pick[] is every range's */
    int split;                   /* calls of fewer rows than threads: one row's trees split
                                    across threads (eng[pick[0]] offers tree_values) */
    double base;                 /* the base score the split adds the trees to */
} tsp_part;

/* The engine of range r now (a trial may have changed it since the plan). */
static inline const tsp_prepared *range_engine(const tsp_part *p, unsigned r) {
    return &p->eng[p->trials ? atomic_load_explicit(&p->trials->pick[r], memory_order_relaxed) : p->pick[r]];
}

/* The engine of a call of n rows. */
static inline const tsp_prepared *part_engine(const tsp_part *p, size_t n_rows) {
    return range_engine(p, tsp_range_of(n_rows));
}

/* The engine of a call of n rows that may take part in its range's trial: *slot >= 0
 * when the call is to be timed (trial_done). */
static inline const tsp_prepared *call_engine(const tsp_part *p, size_t n_rows, int *slot) {
    *slot = -1;
    return p->trials ? &p->eng[tsp_trial_engine(p->trials, tsp_range_of(n_rows), slot)] : part_engine(p, n_rows);
}

static inline void trial_done(const tsp_part *p, size_t n_rows, int slot, double t0) {
    if (slot >= 0) tsp_trial_record(p->trials, tsp_range_of(n_rows), slot, tsr_now() - t0, n_rows);
}

/* Immutable after ts_scorer_create but for the parts' trials (scorer/trial.h: atomic
 * counts, each call's own time slot, a range's engine index as a relaxed atomic byte):
 * ts_scorer_score otherwise only reads it, which is what makes concurrent scoring on one
 * scorer safe without locks.
 *
 * Two ways through: a plain model (one output, no categorical split) is scored by
 * parts[0] straight from the caller's rows. Otherwise ("expand"), part k scores the
 * view of output k (tsm_model_view): rows are copied into per-thread scratch rows of
 * `width` columns whose derived columns hold the derived value columns (CatBoost's CTRs
 * over combinations: model/derived.h) and each category set's decision (0.0 left,
 * 1.0 right), each part scores them, and its scores are interleaved into out[r*K + k].
 * A model that reads few of its many columns (tsm_features_are_sparse: a declared count
 * of 16,777,216 and a handful of splits) takes the general path too, on views whose
 * features are renumbered to the columns read: a row's n_read columns are gathered into
 * the scratch rows (gather[c] is the caller's column of column c), so neither the
 * engines' layouts, the planner's sample nor any buffer is sized by the declared count.
 * With ts_scorer_options.packed_columns the caller's rows hold only those columns, in
 * that order (ts_scorer_columns_for): nothing is gathered, and a plain model takes the
 * first way, on a view renumbered to them. */
struct ts_scorer {
    tsp_part *parts;             /* n_outputs; parts[lead] is the one reported */
    uint32_t n_outputs;          /* K >= 1 */
    uint32_t lead;               /* the part the planner chose for (the largest) */
    int expand;                  /* K > 1, categorical splits or derived value columns: the
                                    general path */
    uint32_t n_features;         /* columns a row must have */
    uint32_t width;              /* columns the engines read: n_read + derived value columns +
                                    categorical sets */
    uint32_t n_derived;          /* derived value columns (CTRs over combinations) */
    uint32_t n_read;             /* the caller's columns the engines see: n_features, or the
                                    columns read when gathered */
    uint32_t *columns;           /* sparse models: columns[c] = the model's column of engine
                                    column c (ascending, n_read of them); else NULL */
    const uint32_t *gather;      /* columns, when rows are gathered from the caller's rows of
                                    the model's width; NULL when packed_columns (rows hold
                                    those columns already) or not sparse */
    ts_model *cats;              /* expand with category sets or derived value columns: a model
                                    holding only them (and the tables, catmaps they read) */
    struct cat_col *cols;        /* cats->n_catsets: the derived columns, in column order */
    int compares_double;         /* as the model's: double rows keep their doubles */
    size_t engine_scratch;       /* largest parts[k].layout.scratch_bytes, rounded up to 64 */
    size_t block_rows;           /* expand: rows per engine call */
    unsigned n_threads;          /* threads per batch, >= 1 */
    unsigned split_threads;      /* a call of fewer rows splits each row's trees across this
                                    many threads (when its part splits): n_threads, but at
                                    most the CPUs (ts_cpu_count) unless TREESCORE_SPLIT_TREES=1
                                    forces splits (tests); more would take turns on the cores
                                    (64 threads on 2 CPUs: 63 rows at 90 us/row against 46) */
    size_t rows_per_chunk;       /* the smallest batch worth a thread */
    char *plan_report;           /* the planner's report (AUTO), else NULL */
};

/* More threads than this per batch are never useful and bound the pool's chunking. */
#define MAX_THREADS 1024u
/* Expanded rows per engine call at most, and floats of expanded rows per call at most. */
#define EXPAND_MAX_ROWS 1024u
#define EXPAND_MAX_FLOATS (1u << 18)

void ts_scorer_options_init(ts_scorer_options *o) {
    if (!o) return;
    memset(o, 0, sizeof *o);
    o->size = sizeof *o;
    o->engine = TS_ENGINE_AUTO;
    o->n_threads = 0;
    o->max_isa = TS_ISA_AUTO;
}

static ts_status check_options(const ts_scorer_options *o, ts_error *err) {
    /* First: no other field may be read from a struct of another size. */
    if (o->size != sizeof *o)
        return ts_fail(err, TS_ERR_INVALID_ARGUMENT,
                       "ts_scorer_options.size is %zu, this library's options are %zu bytes: call "
                       "ts_scorer_options_init before setting fields (and build against this treescore.h)",
                       o->size, sizeof *o);
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

/* One derived column: a category set flattened for the per-row loop. cat_right is
 * tsm_catset_goes_left (the reference, in forest.c) negated, inline: the unit tests check
 * both against the libraries' rules. */
typedef struct cat_col {
    const uint32_t *words;
    uint32_t n_words;
    uint32_t feature;
    uint32_t rule;               /* TSM_CAT_LIGHTGBM, TSM_CAT_XGBOOST or TSM_CAT_EXACT */
    uint32_t nan_left;           /* XGBoost: NaN goes left */
} cat_col;

static inline int cat_in(const cat_col *c, uint32_t cat) {
    return cat / 32 < c->n_words && ((c->words[cat / 32] >> (cat % 32)) & 1u);
}

/* 1 when value v goes right at the set's nodes, 0 when left (see forest.h). */
static inline int cat_right(const cat_col *c, double v) {
    if (c->rule == TSM_CAT_LIGHTGBM) return !(v > -1.0) || v >= 2147483648.0 || !cat_in(c, (uint32_t)v);
    if (v != v) return !c->nan_left;
    if (v < 0.0 || v >= 16777216.0) return 0;
    if (c->rule == TSM_CAT_EXACT && (double)(uint32_t)v != v) return 0;
    return cat_in(c, (uint32_t)v);
}

/* Write each category set's decision into one expanded float row (its first n_read are
 * set); the derived value columns between them are derive_values'. */
static inline void derive_f32(const ts_scorer *s, float *row) {
    uint32_t first = s->n_read + s->n_derived, n = s->width - first;
    for (uint32_t j = 0; j < n; j++) row[first + j] = (float)cat_right(&s->cols[j], (double)row[s->cols[j].feature]);
}

/* Write the derived value columns (model/derived.h: CatBoost's CTRs over combinations,
 * computed from the rows' columns) of n expanded float rows, table by table. */
static inline void derive_values(const ts_scorer *s, float *rows, size_t n) {
    if (s->n_derived) tsm_derive_rows(s->cats, rows, n, s->width, s->n_read);
}

/* The same for a double row: LightGBM decides categories on the double value (models with
 * derived value columns never compare doubles: tsm_model_finish). */
static inline void derive_f64(const ts_scorer *s, double *row) {
    uint32_t first = s->n_read + s->n_derived, n = s->width - first;
    for (uint32_t j = 0; j < n; j++) row[first + j] = (double)cat_right(&s->cols[j], row[s->cols[j].feature]);
}

/* One expanded float row from the caller's row src: its columns (gathered for a sparse
 * model), then the derived ones. */
static inline void load_f32(const ts_scorer *s, float *dst, const float *src) {
    if (s->gather)
        for (uint32_t c = 0; c < s->n_read; c++) dst[c] = src[s->gather[c]];
    else
        memcpy(dst, src, s->n_read * sizeof *dst);
    derive_f32(s, dst);
}

/* The same for a double row kept in double. */
static inline void load_f64(const ts_scorer *s, double *dst, const double *src) {
    if (s->gather)
        for (uint32_t c = 0; c < s->n_read; c++) dst[c] = src[s->gather[c]];
    else
        memcpy(dst, src, s->n_read * sizeof *dst);
    derive_f64(s, dst);
}

/* Expanded rows are copies (derived or gathered columns), not the caller's rows. */
static inline int copies_rows(const ts_scorer *s) { return s->cats != NULL || s->gather != NULL; }

/* The engine column of the model's column f (a column the model reads). */
static uint32_t gathered_column(const ts_scorer *s, uint32_t f) { return tsm_column_rank(s->columns, s->n_read, f); }

/* The one rule of which columns a scorer of m reads: *ids = NULL (all of them), or, for
 * a model reading few of many (tsm_features_are_sparse), the n it reads, ascending. */
static ts_status columns_read(const ts_model *m, uint32_t **ids, uint32_t *n, ts_error *err) {
    *ids = NULL;
    *n = 0;
    if (m->n_features <= 1024) return TS_OK; /* never sparse: spare the walk */
    TS_TRY(tsm_used_features(m, ids, n, err));
    if (!tsm_features_are_sparse(m->n_features, *n)) {
        free(*ids);
        *ids = NULL;
        *n = 0;
    }
    return TS_OK;
}

ts_status ts_scorer_columns_for(const ts_model *m, uint32_t **cols, uint32_t *n, ts_error *err) {
    if (cols) *cols = NULL;
    if (n) *n = 0;
    if (!m || !cols || !n)
        return ts_fail(err, TS_ERR_INVALID_ARGUMENT, "ts_scorer_columns_for: model, cols and n must not be NULL");
    return columns_read(m, cols, n, err);
}

/* Which columns the engines see: all n_features, or, for a model reading few of many,
 * only those it reads (s->columns): gathered from each row, or the packed rows' own. */
static ts_status choose_columns(ts_scorer *s, const ts_model *m, int packed, ts_error *err) {
    uint32_t n = 0;
    s->n_read = m->n_features;
    TS_TRY(columns_read(m, &s->columns, &n, err));
    if (!s->columns) return TS_OK;
    s->n_read = n;
    if (packed) s->n_features = n; /* rows of those columns only */
    else s->gather = s->columns;
    return TS_OK;
}

/* A copy of the model's derived value columns with their tables and catmaps (in s->cats),
 * reading the engine's columns. */
static ts_status copy_derived(ts_scorer *s, const ts_model *m, ts_error *err) {
    TS_TRY(tsm_model_copy_derived(m, s->cats, err));
    for (uint32_t i = 0; s->columns && i < s->cats->n_ctrtabs; i++)
        for (uint32_t e = 0; e < s->cats->ctrtabs[i].n_elems; e++) {
            tsm_elem *x = &s->cats->ctrtabs[i].elems[e];
            x->column = gathered_column(s, x->column);
        }
    return TS_OK;
}

/* A copy of the model's category sets and derived value columns (in a model of no trees),
 * for derive_*. */
static ts_status copy_catsets(ts_scorer *s, const ts_model *m, ts_error *err) {
    if (m->n_catsets == 0 && m->n_derived == 0) return TS_OK;
    s->cats = tsm_model_new(m->format);
    if (!s->cats) return ts_fail(err, TS_ERR_NO_MEMORY, "out of memory creating a scorer");
    if (m->n_derived) TS_TRY(copy_derived(s, m, err));
    if (m->n_catsets == 0) return TS_OK;
    s->cats->catsets = malloc((size_t)m->n_catsets * sizeof *m->catsets);
    s->cats->cat_words = malloc((m->n_cat_words + 1) * sizeof *m->cat_words);
    if (!s->cats->catsets || !s->cats->cat_words) return ts_fail(err, TS_ERR_NO_MEMORY, "out of memory creating a scorer");
    memcpy(s->cats->catsets, m->catsets, (size_t)m->n_catsets * sizeof *m->catsets);
    if (m->n_cat_words) memcpy(s->cats->cat_words, m->cat_words, m->n_cat_words * sizeof *m->cat_words);
    s->cats->n_catsets = s->cats->catsets_capacity = m->n_catsets;
    s->cats->n_cat_words = s->cats->cat_words_capacity = m->n_cat_words;
    s->cols = malloc((size_t)m->n_catsets * sizeof *s->cols);
    if (!s->cols) return ts_fail(err, TS_ERR_NO_MEMORY, "out of memory creating a scorer");
    for (uint32_t j = 0; j < m->n_catsets; j++) {
        const tsm_catset *c = &s->cats->catsets[j];
        uint32_t f = s->columns ? gathered_column(s, c->feature) : c->feature;
        s->cols[j] = (cat_col){s->cats->cat_words + c->word0, c->n_words, f, c->rule,
                               (c->flags & TSM_MISSING_LEFT) != 0};
    }
    return TS_OK;
}

/* The part's summary layout: the largest batches' engine's as planned, the most
 * scratch any of them needs. */
static void finish_part(tsp_part *p) {
    p->layout = p->eng[p->pick[TSP_RANGES - 1]].layout;
    for (unsigned i = 0; i < p->n_eng; i++)
        if (p->eng[i].layout.scratch_bytes > p->layout.scratch_bytes)
            p->layout.scratch_bytes = p->eng[i].layout.scratch_bytes;
}

/* The test knob TREESCORE_SPLIT_TREES, else `decided`. */
static int split_setting(const tsp_part *p, unsigned n_threads, int decided) {
    unsigned knob = tsr_config_get()->split_trees;
    const tsp_prepared *one = &p->eng[p->pick[0]];
    if (knob == 2 || n_threads < 2 || !tsp_can_split(one->engine, one->state)) return 0;
    return knob == 1 ? 1 : decided;
}

/* Prepare one part for model (a plain model or a view): the planner for AUTO; else
 * the requested engine (like != NULL: the engines and range table of another part);
 * then its double-input tables. */
static ts_status prepare_part(const ts_model *m, const ts_scorer_options *opts, ts_engine engine, unsigned n_threads,
                              const tsp_part *like, int trials, tsp_part *p, char **report, ts_error *err) {
    tse_config cfg = {.isa = tsr_isa_resolve(opts->max_isa), .tau = opts->tau, .delta = opts->delta, .lanes = opts->lanes,
                      .sample = opts->sample, .sample_rows = opts->sample_rows, .sample_stride = opts->sample_stride};
    ts_status st = TS_OK;
    p->base = m->base_score;
    if (like) {
        for (unsigned i = 0; i < like->n_eng && st == TS_OK; i++) {
            tsp_prepared *e = &p->eng[i];
            e->engine = like->eng[i].engine;
            st = e->engine->prepare(m, &cfg, &e->state, &e->layout, err);
            if (st != TS_OK) e->engine = NULL;
            else p->n_eng = i + 1;
        }
        memcpy(p->pick, like->pick, sizeof p->pick);
        if (st == TS_OK) p->split = split_setting(p, n_threads, like->split);
    } else if (engine == TS_ENGINE_AUTO) {
        tsp_plan plan;
        st = tsp_plan_engine(m, opts, &cfg, n_threads, &plan, err);
        if (st == TS_OK) {
            /* contested ranges (trial.h) where this scorer can run their trials */
            if (trials) p->trials = tsp_trials_new(plan.pick, plan.alt);
            if (!p->trials) tsp_plan_drop_alts(&plan);
            memcpy(p->eng, plan.eng, sizeof p->eng);
            p->n_eng = plan.n_eng;
            memcpy(p->pick, plan.pick, sizeof p->pick);
            p->split = split_setting(p, n_threads, plan.split);
            if (report) *report = plan.report;
            else free(plan.report);
        }
    } else {
        tsp_prepared *e = &p->eng[0];
        e->engine = tse_engine_get(engine);
        tsr_notes_begin(); /* what preparing says (cache hits, warnings) goes into the report */
        st = e->engine ? e->engine->prepare(m, &cfg, &e->state, &e->layout, err)
                       : ts_fail(err, TS_ERR_ENGINE_UNAVAILABLE, "engine %d is not built into this treescore",
                                 (int)engine);
        char *notes = tsr_notes_end();
        if (st == TS_OK) {
            p->n_eng = 1;
            p->split = split_setting(p, n_threads, tsp_split_rule(m, e->engine, e->state, n_threads));
        } else {
            e->engine = NULL;
        }
        if (report && notes) {
            size_t n = strlen(notes) + 32;
            if ((*report = malloc(n)) != NULL) snprintf(*report, n, "engine requested\nnotes:\n%s", notes);
        }
        free(notes);
    }
    if (st != TS_OK) return st;
    finish_part(p);
    return tsp_f64_prepare(m, &p->f64, err);
}

static void free_parts(ts_scorer *s) {
    for (uint32_t k = 0; s->parts && k < s->n_outputs; k++) {
        for (unsigned i = 0; i < s->parts[k].n_eng; i++)
            if (s->parts[k].eng[i].engine) s->parts[k].eng[i].engine->free(s->parts[k].eng[i].state);
        tsp_f64_free(s->parts[k].f64);
        free(s->parts[k].trials);
    }
    free(s->parts);
}

/* At most this many sample rows are expanded for the planner (it reuses rows cyclically). */
#define SAMPLE_MAX_ROWS 16384u

/* The sample rows (the planner's, and the engines' for their layouts: tse_config.sample)
 * expanded with the derived columns (NULL, TS_OK: none to expand); the caller frees it. */
static ts_status expand_sample(const ts_scorer *s, const ts_scorer_options *opts, size_t *rows, float **out,
                               ts_error *err) {
    *out = NULL;
    if (!opts->sample || !copies_rows(s) || opts->sample_rows == 0) return TS_OK;
    if (opts->sample_stride < s->n_features)
        return ts_fail(err, TS_ERR_INVALID_ARGUMENT, "sample stride %zu is smaller than the model's %u columns",
                       opts->sample_stride, s->n_features);
    *rows = opts->sample_rows < SAMPLE_MAX_ROWS ? opts->sample_rows : SAMPLE_MAX_ROWS;
    float *buf = malloc(*rows * s->width * sizeof *buf);
    if (!buf) return ts_fail(err, TS_ERR_NO_MEMORY, "out of memory expanding the sample rows");
    for (size_t r = 0; r < *rows; r++) load_f32(s, buf + r * s->width, opts->sample + r * opts->sample_stride);
    derive_values(s, buf, *rows);
    *out = buf;
    return TS_OK;
}

/* Appends a line to the planner's report (when there is one; nothing on failure). */
static void report_add(ts_scorer *s, const char *note) {
    if (!s->plan_report) return;
    size_t a = strlen(s->plan_report), b = strlen(note);
    char *r = realloc(s->plan_report, a + b + 1);
    if (r) {
        memcpy(r + a, note, b + 1);
        s->plan_report = r;
    }
}

/* The general path: one view per output; the lead (most nodes) is planned, the others
 * use its engine (planning each would multiply the planner's time by K). */
static ts_status prepare_views(ts_scorer *s, const ts_model *m, const ts_scorer_options *opts, ts_error *err) {
    ts_model **views = calloc(s->n_outputs, sizeof *views);
    if (!views) return ts_fail(err, TS_ERR_NO_MEMORY, "out of memory creating a scorer");
    ts_status st = TS_OK;
    uint64_t best = 0;
    for (uint32_t k = 0; k < s->n_outputs && st == TS_OK; k++) {
        st = tsm_model_view(m, k, &views[k], err);
        if (st == TS_OK && s->columns) tsm_model_renumber(views[k], s->columns, s->n_read, m->n_features);
        uint64_t nodes = 0;
        for (uint32_t t = 0; st == TS_OK && t < views[k]->n_trees; t++) nodes += views[k]->trees[t].n_nodes;
        if (st == TS_OK && (k == 0 || nodes > best)) {
            best = nodes;
            s->lead = k;
        }
    }
    float *sample = NULL;
    size_t sample_rows = 0;
    if (st == TS_OK) st = expand_sample(s, opts, &sample_rows, &sample, err);
    ts_scorer_options o = *opts;
    if (sample) {
        o.sample = sample;
        o.sample_rows = sample_rows;
        o.sample_stride = s->width;
    } else if (copies_rows(s)) {
        o.sample = NULL; /* none given: the caller's rows are not the engines' */
    }
    if (st == TS_OK)
        st = prepare_part(views[s->lead], &o, opts->engine, s->n_threads, NULL, 0, &s->parts[s->lead], &s->plan_report,
                          err);
    for (uint32_t k = 0; k < s->n_outputs && st == TS_OK; k++)
        if (k != s->lead)
            st = prepare_part(views[k], &o, TS_ENGINE_AUTO, s->n_threads, &s->parts[s->lead], 0, &s->parts[k], NULL, err);
    free(sample);
    for (uint32_t k = 0; k < s->n_outputs; k++) tsm_view_free(views[k]);
    free(views);
    if (st == TS_OK && s->n_outputs > 1) {
        char note[160];
        snprintf(note, sizeof note,
                 "planned on output %u of %u (its trees have the most nodes); every output uses its engines\n",
                 s->lead, s->n_outputs);
        report_add(s, note);
    }
    if (st == TS_OK && s->gather) {
        char note[160];
        snprintf(note, sizeof note, "columns: the %u the splits read, of the model's %u, gathered from each row\n",
                 s->n_read, s->n_features);
        report_add(s, note);
    }
    return st;
}

/* Scratch, rows per engine call and chunk size of the general path. */
static void size_expand(ts_scorer *s) {
    size_t most = 0, chunk = 1;
    for (uint32_t k = 0; k < s->n_outputs; k++) {
        if (s->parts[k].layout.scratch_bytes > most) most = s->parts[k].layout.scratch_bytes;
        if (s->parts[k].layout.rows_per_chunk > chunk) chunk = s->parts[k].layout.rows_per_chunk;
    }
    s->engine_scratch = tsp_align64(most);
    size_t rows = chunk < 64 ? 64 : chunk;
    if (rows > EXPAND_MAX_ROWS) rows = EXPAND_MAX_ROWS;
    if (rows * s->width > EXPAND_MAX_FLOATS) rows = EXPAND_MAX_FLOATS / s->width;
    s->block_rows = rows ? rows : 1;
    s->rows_per_chunk = chunk;
}

/* The sample, checked once for every scorer that is given one: the planner reads it only
 * when it measures (not under TS_PLAN_RULE or TREESCORE_PLAN=rule), rapid only when it
 * is prepared, and the general path skipped a sample of no rows, so the same bad sample
 * would otherwise pass or fail with the plan, the engine and the model's shape.
 * s->n_features: the row width (packed or not). */
static ts_status check_sample(const ts_scorer *s, const ts_scorer_options *o, ts_error *err) {
    if (!o->sample) return TS_OK;
    if (o->sample_rows == 0 || o->sample_stride < s->n_features)
        return ts_fail(err, TS_ERR_INVALID_ARGUMENT,
                       "sample: %zu rows of stride %zu, but the rows have %u columns (need rows >= 1 and "
                       "stride >= columns)", o->sample_rows, o->sample_stride, s->n_features);
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
    ts_scorer *s = calloc(1, sizeof *s);
    if (!s) return ts_fail(err, TS_ERR_NO_MEMORY, "out of memory creating a scorer");
    s->n_features = m->n_features;
    s->n_outputs = m->n_outputs ? m->n_outputs : 1;
    s->compares_double = m->compares_double;
    s->n_threads = opts->n_threads ? opts->n_threads : ts_cpu_count();
    if (s->n_threads > MAX_THREADS) s->n_threads = MAX_THREADS;
    s->split_threads = s->n_threads;
    if (tsr_config_get()->split_trees != 1 && s->split_threads > ts_cpu_count()) s->split_threads = ts_cpu_count();
    s->parts = calloc(s->n_outputs, sizeof *s->parts);
    ts_status st = s->parts ? choose_columns(s, m, opts->packed_columns, err)
                            : ts_fail(err, TS_ERR_NO_MEMORY, "out of memory creating a scorer");
    if (st == TS_OK) st = check_sample(s, opts, err);
    s->expand = s->n_outputs > 1 || m->n_catsets > 0 || m->n_derived > 0 || s->gather != NULL;
    s->n_derived = m->n_derived;
    s->width = s->n_read + m->n_derived + m->n_catsets;
    if (st == TS_OK) st = copy_catsets(s, m, err);
    if (st == TS_OK && s->expand) {
        st = prepare_views(s, m, opts, err);
    } else if (st == TS_OK && s->columns) { /* packed rows: the model renumbered to them */
        ts_model *v = NULL;
        st = tsm_model_view(m, 0, &v, err);
        if (st == TS_OK) {
            tsm_model_renumber(v, s->columns, s->n_read, m->n_features);
            st = prepare_part(v, opts, opts->engine, s->n_threads, NULL, 1, &s->parts[0], &s->plan_report, err);
        }
        tsm_view_free(v);
    } else if (st == TS_OK) {
        st = prepare_part(m, opts, opts->engine, s->n_threads, NULL, 1, &s->parts[0], &s->plan_report, err);
    }
    if (st != TS_OK) {
        ts_scorer_free(s);
        return st;
    }
    const tsp_part *lead = &s->parts[s->lead];
    s->rows_per_chunk = lead->layout.rows_per_chunk;
    if (s->expand) size_expand(s);
    if (s->rows_per_chunk == 0) s->rows_per_chunk = 1;
    /* Test knob TREESCORE_CHUNK_ROWS (platform/config.h): tiny chunks, so that small
     * batches exercise the pool. */
    if (tsr_config_get()->chunk_rows) s->rows_per_chunk = tsr_config_get()->chunk_rows;
    *out = s;
    return TS_OK;
}

void ts_scorer_free(ts_scorer *s) {
    if (!s) return;
    free_parts(s);
    ts_model_free(s->cats);
    free(s->cols);
    free(s->columns);
    free(s->plan_report);
    free(s);
}

ts_engine ts_scorer_engine(const ts_scorer *s) {
    return s ? range_engine(&s->parts[s->lead], TSP_RANGES - 1)->engine->id : TS_ENGINE_AUTO;
}
int ts_scorer_splits_trees(const ts_scorer *s, size_t n_rows) {
    return s && !s->expand && s->parts[0].split && n_rows > 0 && n_rows < s->split_threads;
}
/* A split call runs the one-row range's engine (ts_scorer_score), whatever its rows. */
ts_engine ts_scorer_engine_for(const ts_scorer *s, size_t n_rows) {
    if (!s) return TS_ENGINE_AUTO;
    size_t n = n_rows && !ts_scorer_splits_trees(s, n_rows) ? n_rows : 1;
    return part_engine(&s->parts[s->lead], n)->engine->id;
}
uint32_t ts_scorer_n_features(const ts_scorer *s) { return s ? s->n_features : 0; }
uint32_t ts_scorer_n_outputs(const ts_scorer *s) { return s ? s->n_outputs : 0; }
ts_isa ts_scorer_isa(const ts_scorer *s) { return s ? s->parts[s->lead].layout.isa : TS_ISA_AUTO; }
unsigned ts_scorer_n_threads(const ts_scorer *s) { return s ? s->n_threads : 0; }

const char *ts_scorer_plan_report(const ts_scorer *s) {
    if (!s) return "no scorer";
    return s->plan_report ? s->plan_report : "engine requested\n";
}

void ts_scorer_blocking(const ts_scorer *s, uint32_t *tau, uint32_t *delta) {
    if (tau) *tau = s ? s->parts[s->lead].layout.tau : 0;
    if (delta) *delta = s ? s->parts[s->lead].layout.delta : 0;
}

static ts_status check_batch(const ts_scorer *s, const void *x, size_t elem, size_t n_rows, size_t n_cols,
                             size_t row_stride, const double *out, const char *fn, ts_error *err) {
    if (!s) return ts_fail(err, TS_ERR_INVALID_ARGUMENT, "%s: scorer is NULL", fn);
    if (n_rows == 0) return TS_OK;
    if (!x || !out) return ts_fail(err, TS_ERR_INVALID_ARGUMENT, "%s: x and out must not be NULL", fn);
    if (n_cols < s->n_features)
        return ts_fail(err, TS_ERR_SHAPE, "the data has %zu columns but the model reads %u", n_cols, s->n_features);
    if (row_stride < n_cols)
        return ts_fail(err, TS_ERR_INVALID_ARGUMENT, "row_stride %zu is smaller than n_cols %zu", row_stride, n_cols);
    /* no buffer can hold sizes past PTRDIFF_MAX bytes: refuse them rather than read or
     * write wherever the overflowed products point (checked multiplications, no division:
     * this runs on every call, the one-row path included) */
    size_t in_bytes, out_bytes;
    if (__builtin_mul_overflow(n_rows - 1, row_stride, &in_bytes) || __builtin_add_overflow(in_bytes, n_cols, &in_bytes) ||
        __builtin_mul_overflow(in_bytes, elem, &in_bytes) || in_bytes > (size_t)PTRDIFF_MAX ||
        __builtin_mul_overflow(n_rows, (size_t)s->n_outputs * sizeof(double), &out_bytes) ||
        out_bytes > (size_t)PTRDIFF_MAX)
        return ts_fail(err, TS_ERR_INVALID_ARGUMENT,
                       "%s: %zu rows of stride %zu (%u scores each) exceed the address space", fn, n_rows,
                       row_stride, s->n_outputs);
    return TS_OK;
}

/* Rows per chunk of a batch (see tsr_grain). */
static size_t grain_for(const ts_scorer *s, size_t n_rows) {
    return tsr_grain(s->n_threads, n_rows, s->rows_per_chunk);
}

/* One batch handed to the pool (the general path and double rows; plain float rows go
 * through tsp_score_chunk). */
typedef struct score_job {
    const ts_scorer *s;
    const void *x;
    size_t stride;
    double *out;
    size_t n_call;               /* rows of the whole call: they pick each part's engine */
    const tsp_prepared *e;       /* one output, double rows: the call's engine (call_engine) */
} score_job;

static ts_status no_scratch(const ts_scorer *s, ts_error *err) {
    return ts_fail(err, TS_ERR_NO_MEMORY, "out of memory for %zu bytes of scoring scratch memory",
                   s->parts[0].layout.scratch_bytes);
}

/* ---- the general path: K outputs, derived columns ------------------------------------ */

/* Score n engine-ready rows (width columns, stride apart) with every part; row i's
 * scores go to out[i*K .. i*K + K). */
static void score_parts(const ts_scorer *s, const float *x, size_t n, size_t stride, double *part, void *scratch,
                        double *out) {
    uint32_t K = s->n_outputs;
    for (uint32_t k = 0; k < K; k++) {
        const tsp_prepared *e = part_engine(&s->parts[k], n); /* the engine of calls of n rows */
        e->engine->score(e->state, x, n, stride, part, scratch);
        for (size_t i = 0; i < n; i++) out[i * K + k] = part[i];
    }
}

/* Rows [begin, end) of a float batch on the general path. The chunk's scratch (tsp_chunk_scratch):
 * [engine scratch | expanded rows | one output's scores]. */
static ts_status score_expand_chunk(void *ctx, size_t begin, size_t end) {
    const score_job *j = ctx;
    const ts_scorer *s = j->s;
    size_t per = s->block_rows;
    const size_t bytes[2] = {copies_rows(s) ? per * s->width * sizeof(float) : 0, per * sizeof(double)};
    tsp_chunk_mem mem;
    TS_TRY(tsp_chunk_scratch(s->engine_scratch, bytes, 2, &mem));
    void *scratch = mem.engine;
    float *rows = mem.part[0];
    double *part = mem.part[1];
    const float *x = j->x;
    for (size_t r0 = begin; r0 < end; r0 += per) {
        size_t n = end - r0 < per ? end - r0 : per;
        if (!copies_rows(s)) {
            score_parts(s, x + r0 * j->stride, n, j->stride, part, scratch, j->out + r0 * s->n_outputs);
            continue;
        }
        for (size_t i = 0; i < n; i++) load_f32(s, rows + i * s->width, x + (r0 + i) * j->stride);
        derive_values(s, rows, n);
        score_parts(s, rows, n, s->width, part, scratch, j->out + r0 * s->n_outputs);
    }
    return TS_OK;
}

/* Double rows on the general path, for a library comparing doubles (LightGBM): each
 * row expanded in double (categories decided on the double value), then for each part
 * scored from the doubles by its engine's score_f64 (rapid), or else rounded to floats by
 * that part's tables, or scored by its exact double traversal. */
static void score_f64_expanded(const ts_scorer *s, const double *x, size_t n, size_t stride, float *fbuf,
                               uint32_t *idx, double *part, void *scratch, double *out) {
    uint32_t K = s->n_outputs;
    for (uint32_t k = 0; k < K; k++) {
        const tsp_part *p = &s->parts[k];
        const tsp_prepared *e = part_engine(p, n); /* the engine of calls of n rows */
        if (e->engine->score_f64 && e->engine->score_f64(e->state, x, n, stride, part, scratch)) {
            for (size_t i = 0; i < n; i++) out[i * K + k] = part[i]; /* the engine read the doubles */
            continue;
        }
        size_t m = 0;
        for (size_t i = 0; i < n; i++) {
            const double *row = x + i * stride;
            if (tsp_f64_round_row(p->f64, row, fbuf + m * s->width))
                idx[m++] = (uint32_t)i;
            else
                out[i * K + k] = tsp_f64_score_row(p->f64, row);
        }
        if (m == 0) continue;
        e->engine->score(e->state, fbuf, m, s->width, part, scratch);
        for (size_t q = 0; q < m; q++) out[idx[q] * K + k] = part[q];
    }
}

/* Rows [begin, end) of a double batch on the general path. Scratch:
 * [engine scratch | float rows | double rows | scores | row indexes]. */
static ts_status score_f64_expand_chunk(void *ctx, size_t begin, size_t end) {
    const score_job *j = ctx;
    const ts_scorer *s = j->s;
    size_t per = s->block_rows, W = s->width;
    const size_t bytes[4] = {per * W * sizeof(float),
                             s->compares_double && copies_rows(s) ? per * W * sizeof(double) : 0,
                             per * sizeof(double), per * sizeof(uint32_t)};
    tsp_chunk_mem mem;
    TS_TRY(tsp_chunk_scratch(s->engine_scratch, bytes, 4, &mem));
    void *scratch = mem.engine;
    float *fbuf = mem.part[0];
    double *dbuf = mem.part[1];
    double *part = mem.part[2];
    uint32_t *idx = mem.part[3];
    const double *x = j->x;
    /* Columns no split reads are never written by the rounding: zero them, for tidiness
     * (the rows this chunk uses: all of a block's, up to 1 MiB, cost a small call more
     * than its scoring; the float conversion writes every column) */
    if (s->compares_double) memset(fbuf, 0, (end - begin < per ? end - begin : per) * W * sizeof *fbuf);
    for (size_t r0 = begin; r0 < end; r0 += per) {
        size_t n = end - r0 < per ? end - r0 : per;
        double *out = j->out + r0 * s->n_outputs;
        if (!s->compares_double) { /* the library converts to float32 first: so do we */
            for (size_t i = 0; i < n; i++) {
                const double *row = x + (r0 + i) * j->stride;
                float *dst = fbuf + i * W;
                for (uint32_t c = 0; c < s->n_read; c++) dst[c] = (float)row[s->gather ? s->gather[c] : c];
                derive_f32(s, dst);
            }
            derive_values(s, fbuf, n);
            score_parts(s, fbuf, n, W, part, scratch, out);
            continue;
        }
        const double *rows = x + r0 * j->stride;
        size_t rstride = j->stride;
        if (copies_rows(s)) {
            for (size_t i = 0; i < n; i++) load_f64(s, dbuf + i * W, x + (r0 + i) * j->stride);
            rows = dbuf;
            rstride = W;
        }
        score_f64_expanded(s, rows, n, rstride, fbuf, idx, part, scratch, out);
    }
    return TS_OK;
}

/* ---- float rows --------------------------------------------------------------------- */

static ts_status score_f32(const ts_scorer *s, const float *x, size_t n_rows, size_t n_cols, size_t row_stride,
                           double *out, ts_error *err) {
    TS_TRY(check_batch(s, x, sizeof(float), n_rows, n_cols, row_stride, out, "ts_scorer_score", err));
    if (n_rows == 0) return TS_OK;
    ts_status st = TS_OK;
    if (s->expand) {
        score_job job = {s, x, row_stride, out, n_rows, NULL};
        st = tsr_parallel_for(s->n_threads, n_rows, grain_for(s, n_rows), score_expand_chunk, &job);
    } else if (s->parts[0].split && n_rows < s->split_threads) {
        /* fewer rows than threads: each row's trees across the threads (chunk.h) */
        const tsp_part *p = &s->parts[0];
        const tsp_prepared *e = range_engine(p, 0);
        for (size_t r = 0; r < n_rows && st == TS_OK; r++)
            st = tsp_score_split(e->engine, e->state, &e->layout, p->base, x + r * row_stride, s->split_threads,
                                 out + r);
    } else {
        int slot;
        const tsp_prepared *e = call_engine(&s->parts[0], n_rows, &slot);
        const double t0 = slot >= 0 ? tsr_now() : 0;
        size_t min_rows = tsr_config_get()->chunk_rows ? s->rows_per_chunk : e->layout.rows_per_chunk;
        tsp_score_job job = {e->engine, e->state, e->layout.scratch_bytes, x, row_stride, out};
        st = tsr_parallel_for(s->n_threads, n_rows, tsr_grain(s->n_threads, n_rows, min_rows ? min_rows : 1),
                              tsp_score_chunk, &job);
        trial_done(&s->parts[0], n_rows, slot, t0);
    }
    return st == TS_OK ? TS_OK : no_scratch(s, err);
}

/* ---- double rows, one output, no categories --------------------------------------------- */

/* Double rows are converted to float rows in sub-batches in the thread's scratch buffer
 * (F64_BUF_FLOATS floats, or one row when a row is wider; at most F64_BATCH rows),
 * scored by the engine, and scattered back; rows that no float row can stand for are
 * scored by the exact double traversal instead. */
#define F64_BUF_FLOATS 16384
#define F64_BATCH 64

/* Convert rows [r0, r0 + n) into buf; idx gets the rows the engine will score. */
static size_t convert_rows(const tsp_part *p, uint32_t n_features, const double *x, size_t r0, size_t n,
                           size_t stride, float *buf, size_t width, uint32_t *idx, double *out) {
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        const double *row = x + (r0 + i) * stride;
        float *dst = buf + k * width;
        if (!p->f64) { /* the library converts to float32 itself */
            for (size_t j = 0; j < n_features; j++) dst[j] = (float)row[j];
            idx[k++] = (uint32_t)i;
            continue;
        }
        if (tsp_f64_round_row(p->f64, row, dst)) /* writes the columns splits read */
            idx[k++] = (uint32_t)i;
        else
            out[r0 + i] = tsp_f64_score_row(p->f64, row);
    }
    return k;
}

/* Double rows: the call's range engine when it reads doubles itself (score_f64: rapid
 * for either kind of model, trees-simd for a model that compares doubles); for a model
 * that compares doubles and calls of 2 to 7 rows whose engine does not, the one-row
 * range's engine when it does, before rounding the rows to floats
 * for the range's engine (src/scorer/f64.c). The ranges are planned on float rows, and
 * for a few rows the rounding costs more than the gap between the two engines (dev model,
 * float64 rows, Python, 2 and 4 rows per call: 7.97 and 5.54 us/doc with the range's
 * vpred after rounding, 4.98 and 4.55 with trees-simd); from 8 rows on it measured
 * either way, so the rounding stays. Returns 1 when an engine scored. */
static int score_f64_direct(const tsp_part *p, const tsp_prepared *e, size_t n_call, const double *x, size_t n,
                            size_t stride, double *out, void *scratch) {
    if (e->engine->score_f64 && e->engine->score_f64(e->state, x, n, stride, out, scratch)) return 1;
    if (!p->f64 || n_call < 2 || n_call >= 8) return 0;
    e = range_engine(p, 0);
    return e->engine && e->engine->score_f64 && e->engine->score_f64(e->state, x, n, stride, out, scratch);
}

/* Rows [begin, end) of a double batch: read by an engine (score_f64_direct), or in
 * sub-batches through the thread's scratch: [engine scratch | float rows | scores | row
 * indexes]. */
static ts_status score_f64_chunk(void *ctx, size_t begin, size_t end) {
    const score_job *j = ctx;
    const ts_scorer *s = j->s;
    const tsp_part *p = &s->parts[0];
    const tsp_prepared *e = j->e; /* as float rows: by the call's size */
    if (e->engine->score_f64) { /* an engine that reads the doubles itself */
        tsp_chunk_mem es;
        TS_TRY(tsp_chunk_scratch(p->layout.scratch_bytes, NULL, 0, &es));
        if (score_f64_direct(p, e, j->n_call, (const double *)j->x + begin * j->stride, end - begin, j->stride,
                             j->out + begin, es.engine))
            return TS_OK;
    }
    size_t width = s->n_features ? s->n_features : 1;
    size_t per = F64_BUF_FLOATS / width, n_rows = end - begin;
    if (per == 0) per = 1;
    if (per > F64_BATCH) per = F64_BATCH;
    const size_t bytes[3] = {per * width * sizeof(float), per * sizeof(double), per * sizeof(uint32_t)};
    tsp_chunk_mem mem;
    TS_TRY(tsp_chunk_scratch(p->layout.scratch_bytes, bytes, 3, &mem));
    void *scratch = mem.engine;
    float *buf = mem.part[0];
    double *part = mem.part[1];
    uint32_t *idx = mem.part[2];
    /* Columns no split reads are never written: zero them once, for tidiness. */
    if (p->f64) memset(buf, 0, (n_rows < per ? n_rows : per) * width * sizeof *buf);
    for (size_t r0 = begin; r0 < end; r0 += per) {
        size_t n = end - r0 < per ? end - r0 : per;
        size_t k = convert_rows(p, s->n_features, j->x, r0, n, j->stride, buf, width, idx, j->out);
        if (k == 0) continue;
        e->engine->score(e->state, buf, k, width, part, scratch);
        for (size_t q = 0; q < k; q++) j->out[r0 + idx[q]] = part[q];
    }
    return TS_OK;
}

/* A double row of a call of fewer rows than threads, its trees split across them
 * (tsp_score_split): rounded to the float row that stands for it (convert_rows: the
 * library's own conversion, or src/scorer/f64.c's exact rounding), which is kept in the
 * thread's scratch past the split's part; a row no float row can stand for takes the
 * exact double traversal. */
static ts_status score_f64_split(const ts_scorer *s, const double *row, double *out) {
    const tsp_part *p = &s->parts[0];
    const tsp_prepared *e = range_engine(p, 0);
    const size_t width = s->n_features ? s->n_features : 1, row_bytes = width * sizeof(float);
    tsp_chunk_mem mem;
    TS_TRY(tsp_chunk_scratch(tsp_split_scratch_bytes(e->engine, e->state, &e->layout), &row_bytes, 1, &mem));
    float *buf = mem.part[0];
    uint32_t idx;
    if (p->f64) memset(buf, 0, row_bytes); /* columns no split reads: never written */
    if (convert_rows(p, s->n_features, row, 0, 1, 0, buf, width, &idx, out) == 0) return TS_OK;
    return tsp_score_split(e->engine, e->state, &e->layout, p->base, buf, s->split_threads, out);
}

static ts_status score_f64(const ts_scorer *s, const double *x, size_t n_rows, size_t n_cols, size_t row_stride,
                           double *out, ts_error *err) {
    TS_TRY(check_batch(s, x, sizeof(double), n_rows, n_cols, row_stride, out, "ts_scorer_score_f64", err));
    if (n_rows == 0) return TS_OK;
    if (!s->expand && s->parts[0].split && n_rows < s->split_threads) {
        ts_status st = TS_OK;
        for (size_t r = 0; r < n_rows && st == TS_OK; r++) st = score_f64_split(s, x + r * row_stride, out + r);
        return st == TS_OK ? TS_OK : ts_fail(err, st, "out of memory scoring double rows");
    }
    int slot = -1;
    const tsp_prepared *e = s->expand ? NULL : call_engine(&s->parts[0], n_rows, &slot);
    const double t0 = slot >= 0 ? tsr_now() : 0;
    score_job job = {s, x, row_stride, out, n_rows, e};
    ts_status st = tsr_parallel_for(s->n_threads, n_rows, grain_for(s, n_rows),
                                    s->expand ? score_f64_expand_chunk : score_f64_chunk, &job);
    if (!s->expand) trial_done(&s->parts[0], n_rows, slot, t0);
    return st == TS_OK ? TS_OK : ts_fail(err, st, "out of memory scoring double rows");
}

/* ---- the public calls: the canonical floating-point state (platform/fpenv.h) --------- */

ts_status ts_scorer_score(const ts_scorer *s, const float *x, size_t n_rows, size_t n_cols, size_t row_stride,
                          double *out, ts_error *err) {
    const uint32_t fp = tsr_fpenv_enter();
    const ts_status st = score_f32(s, x, n_rows, n_cols, row_stride, out, err);
    tsr_fpenv_leave(fp);
    return st;
}

ts_status ts_scorer_score_f64(const ts_scorer *s, const double *x, size_t n_rows, size_t n_cols,
                              size_t row_stride, double *out, ts_error *err) {
    const uint32_t fp = tsr_fpenv_enter();
    const ts_status st = score_f64(s, x, n_rows, n_cols, row_stride, out, err);
    tsr_fpenv_leave(fp);
    return st;
}
