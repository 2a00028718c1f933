/* planner.c: TS_ENGINE_AUTO: time the candidate engines on a sample batch (or recall the wisdom file, or apply a rule). */
#include "scorer/planner.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/error.h"
#include "engines/engine.h"
#include "model/hash.h"
#include "platform/artifacts.h"
#include "platform/clock.h"
#include "platform/config.h"
#include "platform/cpu.h"
#include "platform/cpu_caches.h"
#include "platform/notes.h"
#include "platform/pool.h"
#include "scorer/chunk.h"
#include "scorer/trial.h"
#include "scorer/wisdom.h"

/* Rows per call the planner optimizes the range of large batches for. */
#define DEFAULT_BATCH 1000u
/* Timing budget (all candidates, all rounds) and its bounds in rounds. The budget can be
 * changed with TREESCORE_PLAN_MS (tests use a small one). */
#define DEFAULT_BUDGET_MS 500.0
/* A candidate this many times slower than the best on the probe is not timed further;
 * for a range planned at more than twice the probe's rows, LARGE_PRUNE_FACTOR times: engines
 * that fill document lanes gain up to about 8x per document from 16 rows to 1,000 (rapid
 * on msn-lgb-1000x256: 29 against 3.7 us), where trees-simd gains little, so a 4x gap on
 * the probe dropped the fastest engine at 1,000 rows (docs/benchmarks.md, issue 23
 * fourth session). */
#define PRUNE_FACTOR 4.0
#define LARGE_PRUNE_FACTOR 16.0
#define MIN_ROUNDS 3
#define MAX_ROUNDS 9
/* A contested range, whose two fastest candidates are within CONTEST_GAP of each other
 * after MAX_ROUNDS rounds, takes more rounds, up to CONTEST_ROUNDS, while its budget
 * lasts: at 16 rows rapid and trees-simd are often 5-15% apart, where nine rounds of four
 * 16-row calls each (40-80 ms) moved the pick between them from plan to plan
 * (msn-xgb-1000x64: trees-simd timed 0.88-1.16x rapid in three plans, bench 1.07-1.12x). */
#define CONTEST_ROUNDS 27
#define CONTEST_GAP 1.15
#define MAX_SAMPLE_ROWS 4096u
/* The sample has at least this many distinct rows, even for tiny batches, and one timing
 * of fewer than 32 rows a call covers at least MIN_TIMED_ROWS rows (32-63 rows: one
 * call): calls of a small batch are repeated over
 * consecutive slices of the sample (the same row again and again would let the branch
 * predictor learn it, and one call of one row is too short to time). */
#define MIN_SAMPLE_ROWS 256u
#define MIN_TIMED_ROWS 64u
/* Ranges of small batches (below 16 rows) get this share of the budget each (their calls
 * are short, and the time to the first prediction must not grow much with the number of
 * ranges); below 8 rows they time SMALL_TIMED_ROWS rows per timing, 8-15 rows
 * MIN_TIMED_ROWS. The budget binds only on big models: 9 rounds of 64 rows of 8
 * candidates at 5 us/doc take 23 ms. */
#define SMALL_TIMED_ROWS 16u
#define SMALL_BUDGET_SHARE 0.125
/* Ranges of 16-127 rows (five: 16, 17-23, 24-31, 32-63, 64-127) get this share each, so
 * that each two have the budget one range of 8-31 (32-127) had (on msn-lgb-1000x256 a
 * full budget each took the plan from 2.8-4.0 s to 4.3-4.8 s: nine candidates at 20-270
 * us/doc use all of it); a range's probes and first rounds still cost what they cost
 * (nine ranges instead of seven: that plan 2.76-2.94 s against 2.36-2.68, the dev
 * model's 0.69-0.99 against 0.66-0.74). */
#define MID_BUDGET_SHARE 0.5
/* Rounds of the one-row range's split-or-not timing. */
#define SPLIT_ROUNDS 5

const uint32_t tsp_range_first[TSP_RANGES] = {1, 2, 6, 8, 16, 17, 24, 32, 64, 128};
const uint32_t tsp_range_batch[TSP_RANGES] = {1, 3, 7, 11, 16, 20, 27, 45, 90, DEFAULT_BATCH};
_Static_assert(TSP_RANGES == 10, "tsp_range_of, tsp_range_first and tsp_range_batch agree on the ranges");
#define MAX_CANDIDATES TS_ENGINE_COUNT /* each engine at most once */

/* ---- report text -------------------------------------------------------------------- */

typedef struct text {
    char buf[16384]; /* ten ranges of up to 12 candidates with skip reasons: 7.8 KB measured for nine */
    size_t len;
} text;

__attribute__((format(printf, 2, 3))) static void say(text *t, const char *fmt, ...) {
    if (t->len >= sizeof t->buf - 1) return;
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(t->buf + t->len, sizeof t->buf - t->len, fmt, ap);
    va_end(ap);
    if (n > 0) t->len += (size_t)n < sizeof t->buf - t->len ? (size_t)n : sizeof t->buf - 1 - t->len;
}

static char *text_dup(const text *t) {
    char *s = malloc(t->len + 1);
    if (s) memcpy(s, t->buf, t->len + 1);
    return s;
}

/* ---- the rule of thumb ------------------------------------------------------------------ */

static uint32_t max_leaves(const ts_model *m) {
    uint32_t w = 0;
    for (uint32_t t = 0; t < m->n_trees; t++)
        if (m->trees[t].n_leaves > w) w = m->trees[t].n_leaves;
    return w;
}

/* Measured with treescore bench on LightGBM lambdarank models (docs/benchmarks.md):
 * QuickScorer visits every false node (about 40% of all nodes) where a root-to-leaf walk
 * visits the depth, so it wins on trees of up to 64 leaves (vqs 4-9x over naive) and
 * loses on wider ones (qs/naive 0.93x at 127 leaves, 0.43x at 255), where the
 * branch-free vpred walk is fastest. */
/* rapid: batches of at least RAPID_RULE_BATCH rows, on models of 1,000 nodes or more
 * (tse_model_big) whose trees are not too wide for its rows (tse_plan_bitvectors).
 * Measured (docs/benchmarks.md, AVX2, one thread): on msn-lgb-1000x64 rapid took 11.3 us/doc at batch 10 (vqs 16.7, ifelse 15.3), 2.9 at
 * 100 (vqs 11.4), and lost only at batch 1 (95 against vqs's 28); 64-lane AVX-512 groups
 * waste more on tiny batches, hence a margin. */
#define RAPID_RULE_BATCH 32u
/* With AVX2 only, rapid from RAPID_RULE_BATCH_AVX2 rows: measured on an AMD Zen 3 (AVX2,
 * no AVX-512; sixteenth session, one thread, libs_ab minima), since calls of at most 16
 * rows take rapid's pair layout (rapid.h "Pairs"): at 8 rows rapid 4.10 us/doc, trees-simd
 * 4.15, vpred 4.27 on dev 500 x 64; 8.55, 9.24, 11.5 on msn-lgb-1000x64; 11.2, 14.0, 26.1
 * on msn-xgb-1000x64 (at 6 rows trees-simd led on the first two). Before the pairs it was
 * 12 rows (rapid 5.61 at 8 rows on dev). */
#define RAPID_RULE_BATCH_AVX2 8u

/* oblivious: batches of at least OBLIVIOUS_RULE_BATCH rows on models whose trees are all
 * oblivious (its plan_candidate). Measured (docs/benchmarks.md "CatBoost", AVX-512, one
 * thread): on msn-cb-2000x256 14 us/doc at batch 8 against trees-simd's 28, rapid 2-5x
 * slower than it from batch 10 on; at 1 to 4 rows trees-simd is as fast or faster. */
#define OBLIVIOUS_RULE_BATCH 8u

/* deep: batches of at least DEEP_RULE_BATCH rows (its 16 lanes full) on trees of more
 * than 256 leaves on average (its plan_candidate). Measured (docs/benchmarks.md, one
 * thread, Zen 4): on msn-srf-500x4096 (4,096 leaves) at batch 1,000 deep 14.9-23.0
 * us/doc, block-vpred 20.0-33.9, trees-simd 30.9-41.3, rapid 125-197. */
#define DEEP_RULE_BATCH 16u

/* trees-simd: calls of 1 to TSIMD_RULE_BATCH - 1 rows on any model, and of fewer than
 * RAPID_RULE_BATCH rows on models rapid times itself on, with AVX-512 VBMI (its top
 * levels by byte masks). Measured (treescore bench, one thread, Zen 4, eighth session):
 * at one row 2x vqs and vpred at every ISA level (dev 500 x 64: 5.3 us/doc at AVX2
 * against vqs 10.2, vpred 10.4; 2.2 with VBMI), and 1.3-5x them at 8-24 rows with VBMI
 * (msn-srf-500x4096 at 8 rows 43 against vpred 65; msn-sgb-500x64 3.2 against 5.8);
 * without VBMI vpred wins from 8 rows on 64-leaf trees (3.7 against 4.8), and on a
 * 20-tree model vqs from 16 (0.16 against 0.30). */
#define TSIMD_RULE_BATCH 8u

ts_engine tsp_plan_rule(const ts_model *m, ts_isa isa, unsigned batch, char *why, size_t why_size) {
    uint32_t w = max_leaves(m);
    ts_engine e;
    tse_config cfg = {.isa = isa, .no_build = 1};
    const int big = tse_model_big(m);
    const int vbmi = isa >= TS_ISA_AVX512 && (tsr_cpu_features() & TSR_CPU_AVX512VBMI) != 0;
    const unsigned rapid_from = isa == TS_ISA_AVX2 ? RAPID_RULE_BATCH_AVX2 : RAPID_RULE_BATCH;
    if (batch >= OBLIVIOUS_RULE_BATCH && tse_engine_oblivious.plan_candidate(m, &cfg)) {
        e = TS_ENGINE_OBLIVIOUS;
        snprintf(why, why_size,
                 "rule of thumb: batches of %u rows (>= %u) on a model whose trees are all oblivious: each tree's "
                 "levels are byte compares whose results are the leaf index, oblivious",
                 batch, OBLIVIOUS_RULE_BATCH);
    } else if (batch >= DEEP_RULE_BATCH && tse_engine_deep.plan_candidate(m, &cfg)) {
        e = TS_ENGINE_DEEP;
        snprintf(why, why_size,
                 "rule of thumb: batches of %u rows (>= %u) on trees of more than 256 leaves on average: each "
                 "document walks only its own path, 16 walks interleaved, deep",
                 batch, DEEP_RULE_BATCH);
    } else if (batch >= rapid_from && isa >= TS_ISA_AVX2 && big && tse_plan_bitvectors(m)) {
        e = TS_ENGINE_RAPID;
        snprintf(why, why_size,
                 "rule of thumb: batches of %u rows (>= %u%s) on a model of 1,000 nodes or more: exact feature codes "
                 "and byte-transposed leaf vectors, rapid",
                 batch, rapid_from, isa == TS_ISA_AVX2 ? ", AVX2" : "");
    } else if (batch >= 1 && (batch < TSIMD_RULE_BATCH || (batch < RAPID_RULE_BATCH && vbmi && big))) {
        e = TS_ENGINE_TREES_SIMD;
        snprintf(why, why_size,
                 "rule of thumb: calls of %u row%s (< %u%s): one row's trees side by side in SIMD lanes, trees-simd",
                 batch, batch == 1 ? "" : "s", batch < TSIMD_RULE_BATCH ? TSIMD_RULE_BATCH : RAPID_RULE_BATCH,
                 batch < TSIMD_RULE_BATCH ? "" : ", a model of 1,000 nodes or more, AVX-512 VBMI");
    } else if (isa < TS_ISA_AVX2) {
        /* rapid's 8-lane scalar kernel took 29.7 us/doc on the dev model at 1,000 rows at
         * --isa scalar, qs 8.6, SSE4.2's vqs 7.0, vpred 3.0 */
        e = TS_ENGINE_VPRED;
        snprintf(why, why_size, "rule of thumb: no AVX2 (%s): a branch-free root-to-leaf walk, vpred",
                 ts_isa_name(isa));
    } else if (big && batch >= 1 && batch < rapid_from) {
        /* AVX-512 without VBMI, 8-31 rows (AVX2: none since the pairs), dev model: vpred 3.7 (8 rows) and
         * 3.3 us/doc (24), vqs 4.2 and 4.3, trees-simd 4.8 and 4.7 (Zen 4) */
        e = TS_ENGINE_VPRED;
        snprintf(why, why_size,
                 "rule of thumb: calls of %u rows (< %u) on a model of 1,000 nodes or more, without AVX-512 VBMI: a "
                 "branch-free root-to-leaf walk, vpred",
                 batch, rapid_from);
    } else if (w <= 64) {
        e = TS_ENGINE_VQS;
        snprintf(why, why_size, "rule of thumb: trees of at most 64 leaves (largest %u) and SIMD: QuickScorer, vqs", w);
    } else {
        e = TS_ENGINE_VPRED;
        snprintf(why, why_size,
                 "rule of thumb: trees of more than 64 leaves (largest %u): QuickScorer visits too many false "
                 "nodes, a branch-free root-to-leaf walk wins: vpred",
                 w);
    }
    return e;
}

/* ---- plan mode, candidates, wisdom key ------------------------------------------------- */

/* The engines the planner times, in registry order: those whose plan_candidate says so
 * for this model and config (an engine with a build step only when it is built: the
 * planner never starts a compile). */
static int candidate_ids(const ts_model *m, const tse_config *cfg, ts_engine *ids) {
    int n = 0;
    for (size_t i = 0; i < tse_engine_count() && n < MAX_CANDIDATES; i++) {
        const tse_engine *e = tse_engine_at(i);
        if (e->plan_candidate && e->plan_candidate(m, cfg)) ids[n++] = e->id;
    }
    return n;
}

static ts_plan plan_mode(const ts_scorer_options *o) {
    if (o->plan != TS_PLAN_DEFAULT) return o->plan;
    return tsr_config_get()->plan_rule ? TS_PLAN_RULE : TS_PLAN_MEASURE;
}

/* The engines' generation in the wisdom key's CPU field: answers timed by another
 * release, or before an engine's speed changed much (bump the date then), are not
 * reused: a stale pick would stay the plan of every later scorer of the model. */
#define WISDOM_ENGINES "treescore " TS_VERSION_STRING " engines 2026-11-29, planner 10 ranges timed warm (small batches after a run of the same calls), trees-simd in tree order with early exits, deep gathered, rapid 16-row groups coded in one register, AVX2 block and chunk tables skipped by range tests, AVX2 bucket tables, AVX2 pairs of trees for calls of at most 16 rows, rapid rows by running pointers and pair sums in bulk, pairs interleaved by byte and on AVX-512, warm-ups on other rows, contested ranges timed longer, float leaves in registers, padded pair and one-tree rows"

/* The wisdom key (scorer/wisdom.h) of an answer for this model, config and threads, for
 * any batch: the model's hash and the candidates (ifelse's asks for a SHA-256 of the
 * model: 0.3 s on a forest of 4 million nodes) are made once per plan, not per range. */
static void make_key(const ts_model *m, const tse_config *cfg, unsigned threads, tsp_wisdom_key *k) {
    tsm_hash h = tsm_model_hash(m);
    tsm_hash_hex(&h, k->model);
    char brand[TSR_CPU_BRAND_SIZE];
    tsr_cpu_brand(brand);
    const tsr_caches *c = tsr_cache_sizes();
    /* (not the SHA extensions' bit: no engine's speed depends on it, and answers timed
     * before it was detected stay valid) */
    uint64_t words[4] = {tsr_cpu_features() & ~TSR_CPU_SHA, c->l1d, c->l2, c->l3};
    tsm_hash ch = tsm_hash_init();
    tsm_hash_bytes(&ch, brand, strlen(brand));
    tsm_hash_bytes(&ch, words, sizeof words);
    tsm_hash_bytes(&ch, WISDOM_ENGINES, sizeof WISDOM_ENGINES - 1);
    tsm_hash_hex(&ch, k->cpu);
    k->batch = 0;
    k->threads = threads;
    k->isa = cfg->isa;
    k->tau = cfg->tau;
    k->delta = cfg->delta;
    k->lanes = cfg->lanes;
    k->rows = "synthetic";
    k->n_ids = candidate_ids(m, cfg, k->ids);
    k->cands = 0;
    for (int i = 0; i < k->n_ids; i++) k->cands |= 1u << k->ids[i];
}

/* ---- the sample batch ------------------------------------------------------------------- */

static uint64_t next_random(uint64_t *s) {
    *s += 0x9E3779B97F4A7C15ull;
    uint64_t z = *s;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

/* Rows whose values are thresholds of the model (on them, one float above or below), so
 * that every split goes either way and the walks are as long as real ones; 2% NaN. A
 * feature no split reads is 0. The thresholds come from random nodes that split on the
 * feature (nodes per feature kept in a CSR list). */
static float *sample_rows(const ts_model *m, size_t n_rows) {
    size_t width = m->n_features ? m->n_features : 1;
    uint32_t *start = calloc(width + 1, sizeof *start);
    uint64_t n_nodes = 0;
    for (uint32_t t = 0; t < m->n_trees; t++) n_nodes += m->trees[t].n_nodes;
    uint32_t cap = n_nodes > (1u << 20) ? (1u << 20) : (uint32_t)n_nodes; /* enough variety */
    float *thr = malloc(((size_t)cap + 1) * sizeof *thr), *x = malloc(n_rows * width * sizeof *x);
    uint32_t *fill = calloc(width + 1, sizeof *fill);
    if (!start || !thr || !x || !fill) goto fail;
    uint32_t k = 0;
    for (uint32_t t = 0; t < m->n_trees && k < cap; t++)
        for (uint32_t i = 0; i < m->trees[t].n_nodes && k < cap; i++, k++) start[m->trees[t].nodes[i].feature + 1]++;
    for (size_t f = 0; f < width; f++) start[f + 1] += start[f];
    k = 0;
    for (uint32_t t = 0; t < m->n_trees && k < cap; t++)
        for (uint32_t i = 0; i < m->trees[t].n_nodes && k < cap; i++, k++) {
            const tsm_node *nd = &m->trees[t].nodes[i];
            thr[start[nd->feature] + fill[nd->feature]++] = nd->threshold;
        }
    uint64_t seed = 12345;
    for (size_t r = 0; r < n_rows; r++)
        for (size_t f = 0; f < width; f++) {
            uint32_t cnt = start[f + 1] - start[f];
            uint64_t z = next_random(&seed);
            float v = 0.0f;
            if (cnt) {
                v = thr[start[f] + (uint32_t)((z >> 8) % cnt)];
                if ((z & 3) == 1) v = nextafterf(v, INFINITY);
                else if ((z & 3) == 2) v = nextafterf(v, -INFINITY);
                if (((z >> 2) & 63) == 0) v = NAN;
            }
            x[r * width + f] = v;
        }
    free(start);
    free(thr);
    free(fill);
    return x;
fail:
    free(start);
    free(thr);
    free(x);
    free(fill);
    return NULL;
}

/* The caller's rows, copied contiguously (width columns) and repeated cyclically up to
 * n_rows. */
static float *caller_rows(const ts_scorer_options *o, size_t width, size_t n_rows) {
    float *x = malloc(n_rows * width * sizeof *x);
    if (!x) return NULL;
    for (size_t r = 0; r < n_rows; r++)
        memcpy(x + r * width, o->sample + (r % o->sample_rows) * o->sample_stride, width * sizeof *x);
    return x;
}

/* ---- timing ------------------------------------------------------------------------------- */

typedef struct candidate {
    const tse_engine *engine;
    void *state;
    tse_layout layout;
    double prepare_ms;
    double times[CONTEST_ROUNDS]; /* seconds per call, this range */
    int n_times;
    double median_us;           /* per document, this range */
    char skipped[160];          /* why it was not timed (this range, or not prepared); empty when it was */
    int unprepared;             /* prepare failed: skipped in every range */
    int used;                   /* some range's choice: the scorer gets its state */
} candidate;

/* Seconds per call of n rows on `threads` threads (split as the scorer splits a batch):
 * one call, or several over consecutive slices of the sample's `avail` rows when n is
 * below min_rows, the first slice at row `start` (mod the slices). -1 when scratch
 * memory runs out. */
static double time_call_at(candidate *c, const float *x, size_t n, size_t avail, size_t width, double *out,
                           unsigned threads, size_t min_rows, size_t start) {
    size_t reps = n >= min_rows ? 1 : (min_rows + n - 1) / n, slots = avail - n + 1;
    size_t grain = tsr_grain(threads, n, c->layout.rows_per_chunk);
    double t0 = tsr_now();
    for (size_t k = 0; k < reps; k++) {
        const size_t first = (start + k * n) % slots;
        tsp_score_job j = {c->engine, c->state, c->layout.scratch_bytes, x + first * width, width, out};
        if (tsr_parallel_for(threads, n, grain, tsp_score_chunk, &j) != TS_OK) return -1;
    }
    return (tsr_now() - t0) / (double)reps;
}

static double time_call(candidate *c, const float *x, size_t n, size_t avail, size_t width, double *out,
                        unsigned threads, size_t min_rows) {
    return time_call_at(c, x, n, avail, width, out, threads, min_rows, 0);
}

/* The same for one row at a time, its trees split across threads (chunk.h). */
static double time_split(candidate *c, double base, const float *x, size_t avail, size_t width, double *out,
                         unsigned threads, size_t reps) {
    double t0 = tsr_now();
    for (size_t k = 0; k < reps; k++)
        if (tsp_score_split(c->engine, c->state, &c->layout, base, x + (k % avail) * width, threads, out) != TS_OK)
            return -1;
    return (tsr_now() - t0) / (double)reps;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *v, int n) {
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

static double budget_s(void) {
    double ms = tsr_config_get()->plan_ms > 0 ? tsr_config_get()->plan_ms : DEFAULT_BUDGET_MS;
    return ms / 1000.0;
}

/* Prepares the candidate engines once, for every range; a failure only marks the
 * candidate as skipped. */
static int prepare_candidates(const ts_model *m, const tse_config *cfg, const ts_engine *ids, int n,
                              candidate *c) {
    if (n > MAX_CANDIDATES) n = MAX_CANDIDATES; /* never (candidate_ids stops there); tells the compiler */
    for (int i = 0; i < n; i++) {
        memset(&c[i], 0, sizeof c[i]);
        c[i].engine = tse_engine_get(ids[i]);
        ts_error e = {0};
        double t0 = tsr_now();
        if (!c[i].engine || c[i].engine->prepare(m, cfg, &c[i].state, &c[i].layout, &e) != TS_OK) {
            snprintf(c[i].skipped, sizeof c[i].skipped, "%.150s", c[i].engine ? e.message : "not built in");
            c[i].state = NULL;
            c[i].unprepared = 1;
        }
        c[i].prepare_ms = 1e3 * (tsr_now() - t0);
    }
    return n;
}

/* Forget the previous range's timings (not why a candidate could not be prepared). */
static void reset_timings(candidate *c, int n) {
    for (int i = 0; i < n; i++) {
        c[i].n_times = 0;
        c[i].median_us = 0;
        if (!c[i].unprepared) c[i].skipped[0] = '\0';
    }
}

/* Rows per call in the timed rounds: the batch, but no more than what lets MIN_ROUNDS
 * rounds of every remaining candidate fit in the budget. Each candidate is first timed
 * on calls of min(batch, 16) rows (the probe); one PRUNE_FACTOR times slower than the
 * best probe is dropped, so that hopeless candidates do not eat the budget of the
 * contenders. */
static size_t sample_size(candidate *c, int n, const float *x, size_t rows_avail, size_t width, double *out,
                          unsigned batch, unsigned threads, double budget, size_t *min_rows) {
    size_t probe = rows_avail < 16 ? rows_avail : 16;
    if (batch < probe) probe = batch;
    double probe_s[MAX_CANDIDATES], best = 0, per_doc = 0;
    for (int i = 0; i < n; i++) {
        probe_s[i] = -1;
        if (c[i].skipped[0]) continue;
        /* the least of three (the first also warms caches and faults pages in): one
         * unlucky preemption on a busy machine must not prune the best engine */
        for (int k = 0; k < 3; k++) {
            double p = time_call(&c[i], x, probe, rows_avail, width, out, threads, probe); /* one call */
            if (p < 0) {
                probe_s[i] = -1;
                break;
            }
            if (k == 0 || p / (double)probe < probe_s[i]) probe_s[i] = p / (double)probe;
        }
        if (probe_s[i] < 0) snprintf(c[i].skipped, sizeof c[i].skipped, "out of scratch memory");
        if (probe_s[i] >= 0 && (best == 0 || probe_s[i] < best)) best = probe_s[i];
    }
    /* 19 and 27 rows against a 16-row probe: rapid gains at most 27 / 16 per document */
    const double prune = batch > 2 * probe ? LARGE_PRUNE_FACTOR : PRUNE_FACTOR;
    for (int i = 0; i < n; i++) {
        if (probe_s[i] < 0) continue;
        if (best > 0 && probe_s[i] > prune * best) {
            snprintf(c[i].skipped, sizeof c[i].skipped, "%.1fx slower than the fastest on a probe of %zu-row calls",
                     probe_s[i] / best, probe);
            continue;
        }
        per_doc += probe_s[i];
    }
    double fit = per_doc > 0 ? budget / (MIN_ROUNDS * per_doc) : (double)MAX_SAMPLE_ROWS;
    /* small batches: fewer rows per timing when even those would not fit (slow models) */
    if (batch < *min_rows && fit < (double)*min_rows) *min_rows = fit < (double)batch ? batch : (size_t)fit;
    size_t rows = batch < rows_avail ? batch : rows_avail;
    if (fit < (double)rows) rows = fit < 16 ? 16 : (size_t)fit;
    if (rows > batch) rows = batch;
    return rows < rows_avail ? rows : rows_avail;
}

/* After the first round of a range planned at more than twice the probe's rows (64 and
 * 1,000): a candidate FIRST_ROUND_PRUNE times slower than that round's best is not timed
 * further, so that the contenders get the rounds (the probe keeps candidates up to 16x
 * slower there; on msn-lgb-1000x256 at 1,000 rows vqs, vpred and naive at 25-69 us/doc
 * left 3 rounds in the budget for rapid, ifelse and trees-simd at 4-10). Only there, and
 * not at 4x: the first round is one timing per candidate, and on small batches one
 * preemption made trees-simd's 20x slower than it is (it was pruned and one-row calls
 * of msn-lgb-1000x64 went to ifelse, 3.4x slower, at a load of 4 on 2 cores). */
#define FIRST_ROUND_PRUNE 8.0
static void prune_first_round(candidate *c, int n, size_t rows) {
    double best = 0;
    for (int i = 0; i < n; i++)
        if (!c[i].skipped[0] && c[i].n_times && (best == 0 || c[i].times[0] < best)) best = c[i].times[0];
    for (int i = 0; i < n; i++)
        if (!c[i].skipped[0] && c[i].n_times && best > 0 && c[i].times[0] > FIRST_ROUND_PRUNE * best)
            snprintf(c[i].skipped, sizeof c[i].skipped, "%.1fx slower than the fastest in the first round of %zu-row calls",
                     c[i].times[0] / best, rows);
}

/* Below 32 rows (`relative`): a candidate's figure is the median over the rounds of its time
 * over that round's fastest, times the median of the fastest's times. Every candidate of
 * a round times the same rows and the rounds take different rows, so the ratio takes out
 * how hard a round's rows are, and the median drops a round one preemption on a busy
 * machine spoiled (preemption only adds time). The least time over the rounds did the
 * second but not the first: it favoured the engine whose time varies most with the rows
 * (the demo model at one row: qs's least of 9 rounds of 16 rows was 2.8 us/doc, 4.0 over
 * the whole file, where trees-simd's 2.9 held; the plan took qs, 1.4x slower). per[i][r]:
 * candidate i's time in round r, < 0 where it was not timed. */
static void rank_by_rounds(candidate *c, int n, double per[][CONTEST_ROUNDS], int rounds, size_t rows) {
    double best[CONTEST_ROUNDS], fast[CONTEST_ROUNDS];
    int n_fast = 0;
    for (int r = 0; r < rounds; r++) {
        best[r] = -1;
        for (int i = 0; i < n; i++)
            if (!c[i].skipped[0] && per[i][r] > 0 && (best[r] < 0 || per[i][r] < best[r])) best[r] = per[i][r];
        if (best[r] > 0) fast[n_fast++] = best[r];
    }
    if (n_fast == 0) return;
    const double scale = median(fast, n_fast);
    for (int i = 0; i < n; i++) {
        if (c[i].skipped[0]) continue;
        double rel[CONTEST_ROUNDS];
        int k = 0;
        for (int r = 0; r < rounds; r++)
            if (per[i][r] > 0 && best[r] > 0) rel[k++] = per[i][r] / best[r];
        if (k) c[i].median_us = 1e6 * scale * median(rel, k) / (double)rows;
    }
}

/* relative: rank by rank_by_rounds instead of the median time (batches below 32 rows,
 * whose short timings one preemption on a busy machine can spoil). */
/* Whether the two fastest candidates so far are within CONTEST_GAP (their medians per
 * call, or against each round's fastest: relative). */
static int contested(candidate *c, int n, double per[][CONTEST_ROUNDS], int rounds, size_t rows, int relative) {
    double a = 0, b = 0; /* the fastest and the second */
    if (relative) rank_by_rounds(c, n, per, rounds, rows);
    for (int i = 0; i < n; i++) {
        if (c[i].skipped[0] || c[i].n_times == 0) continue;
        double us = relative ? c[i].median_us : median(c[i].times, c[i].n_times); /* (sorts them) */
        if (a == 0 || us < a) b = a, a = us;
        else if (b == 0 || us < b) b = us;
    }
    return a > 0 && b > 0 && b < CONTEST_GAP * a;
}

static void time_rounds(candidate *c, int n, const float *x, size_t rows, size_t avail, size_t width, double *out,
                        unsigned threads, double budget, size_t min_rows, int relative, int prune_first) {
    double t0 = tsr_now();
    double per[MAX_CANDIDATES][CONTEST_ROUNDS];
    int rounds = 0;
    /* Each round times the next rows of the sample (every candidate the same ones): the
     * same few rows round after round favour the engines whose branches learn them
     * (trees-simd's steps below the top: on msn-xgb-1000x64 at 27 rows it was 1.12x rapid
     * on the first 81 rows of the data, 1.17-1.34x over 3,000, and took the 24-31 range
     * where rapid was 1.15x faster). */
    const size_t per_round = rows > min_rows ? rows : min_rows;
    for (int r = 0; r < CONTEST_ROUNDS; r++) {
        if (r >= MIN_ROUNDS && tsr_now() - t0 > budget) break;
        if (r >= MAX_ROUNDS && !contested(c, n, per, r, rows, relative)) break;
        const size_t start = (size_t)r * per_round;
        for (int i = 0; i < n; i++) {
            per[i][r] = -1;
            if (!c[i].skipped[0]) {
                /* an untimed run first: the other candidates' timings evicted this
                 * one's layout, where a caller's calls in a row find it warm. Below 32
                 * rows the same calls as the timing's: one call of 16 rows left rapid's
                 * pair layout half warm (msn-lgb-1000x64 at 16 rows: rapid timed 1.04-
                 * 1.14x slower than trees-simd, where bench measures it 1.1-1.2x faster;
                 * with the whole run 1.10-1.13x faster); larger batches one call of at
                 * most 64 rows (not 16: rapid's calls of 16 rows take its pair layout,
                 * not the groups of 64 lanes that larger calls read). On other rows than
                 * the timing's (half the sample on): the same rows just before would
                 * have taught the branch predictor trees-simd's steps on them (at 16
                 * rows it then timed 0.88-1.16x rapid on msn-xgb-1000x64, picked in 6
                 * plans of 6, where bench measures 1.07-1.12x on the same rows) */
                const size_t warm_rows = rows < 64 ? rows : 64;
                if (time_call_at(&c[i], x, warm_rows, avail, width, out, threads, rows < 32 ? min_rows : 1,
                                 start + avail / 2) < 0)
                    continue;
                double t = time_call_at(&c[i], x, rows, avail, width, out, threads, min_rows, start);
                if (t < 0) snprintf(c[i].skipped, sizeof c[i].skipped, "out of scratch memory");
                else c[i].times[c[i].n_times++] = per[i][r] = t;
            }
        }
        rounds = r + 1;
        if (r == 0 && prune_first) prune_first_round(c, n, rows);
    }
    for (int i = 0; i < n; i++)
        if (!c[i].skipped[0]) c[i].median_us = 1e6 * median(c[i].times, c[i].n_times) / (double)rows; /* sorts them */
    if (relative) rank_by_rounds(c, n, per, rounds, rows);
}

static int fastest(const candidate *c, int n) {
    int best = -1;
    for (int i = 0; i < n; i++)
        if (!c[i].skipped[0] && (best < 0 || c[i].median_us < c[best].median_us)) best = i;
    return best;
}

/* On synthetic rows, the candidate (not best) that the range's first calls try against
 * best on the caller's rows (scorer/trial.h): the second fastest where it timed within
 * TSP_TRIAL_RATIO of best (TREESCORE_PLAN_TRIAL=1: however far; 2: none), else -1. */
static int runner_up(const candidate *c, int n, int best) {
    const unsigned knob = tsr_config_get()->plan_trial;
    int second = -1;
    for (int i = 0; i < n; i++)
        if (i != best && !c[i].skipped[0] && c[i].median_us > 0 &&
            (second < 0 || c[i].median_us < c[second].median_us))
            second = i;
    if (knob == 2 || second < 0 || best < 0) return -1;
    return knob == 1 || c[second].median_us <= TSP_TRIAL_RATIO * c[best].median_us ? second : -1;
}

static void report_table(text *t, const candidate *c, int n, int best) {
    say(t, "  %-12s %12s %12s\n", "candidate", "us/doc", "prepare ms");
    for (int i = 0; i < n; i++) {
        if (c[i].skipped[0])
            say(t, "  %-12s skipped: %s\n", c[i].engine ? c[i].engine->name : "?", c[i].skipped);
        else
            say(t, "  %-12s %12.4f %12.1f%s\n", c[i].engine->name, c[i].median_us, c[i].prepare_ms,
                i == best ? "   <- fastest" : "");
    }
}

static void report_ifelse(text *t, const ts_engine *ids, int n) {
    for (int i = 0; i < n; i++)
        if (ids[i] == TS_ENGINE_IFELSE) return;
    say(t, "  %-12s skipped: not compiled yet, and the planner never starts a compile (that can take minutes; "
           "run once with --engine ifelse to compile and cache it)\n", "ifelse");
}

/* ---- the plan ------------------------------------------------------------------------------- */

/* What was decided for one range. */
typedef struct range_choice {
    int planned;        /* this range is in the plan */
    unsigned batch;     /* rows per call it is planned (and keyed) for */
    ts_engine engine;   /* TS_ENGINE_AUTO while unknown */
    ts_engine alt;      /* the runner-up a trial decides against (scorer/trial.h), else
                           TS_ENGINE_AUTO */
    int split;
    double us;
    tsp_wisdom_key key;
} range_choice;

/* The engines prepared so far, by id (each at most once, shared by the ranges). */
typedef struct prepared_set {
    tsp_prepared e[32];
} prepared_set;

/* Range r's rows as the report names them: "16" (a range of one batch size), "17-23", "128+". */
static void range_name(unsigned r, char *buf, size_t size) {
    if (r + 1 == TSP_RANGES)
        snprintf(buf, size, "%u+", tsp_range_first[r]);
    else if (tsp_range_first[r + 1] - 1 == tsp_range_first[r])
        snprintf(buf, size, "%u", tsp_range_first[r]);
    else
        snprintf(buf, size, "%u-%u", tsp_range_first[r], tsp_range_first[r + 1] - 1);
}

static void say_range(text *t, unsigned r, unsigned batch) {
    char name[32];
    range_name(r, name, sizeof name);
    say(t, "range %s row%s", name, strcmp(name, "1") == 0 ? "" : "s");
    say(t, " (planned at %u row%s per call)", batch, batch == 1 ? "" : "s");
}

int tsp_split_rule(const ts_model *m, const tse_engine *e, const void *state, unsigned n_threads) {
    if (n_threads < 2 || !tsp_can_split(e, state)) return 0;
    uint64_t nodes = 0;
    for (uint32_t t = 0; t < m->n_trees; t++) nodes += m->trees[t].n_nodes;
    return nodes >= (uint64_t)TSP_SPLIT_RULE_NODES * (e->id == TS_ENGINE_TREES_SIMD ? TSP_SPLIT_RULE_TSIMD : 1);
}

/* The one-row range with several threads: each candidate that can split a row's trees
 * (and is within 2 x `threads` times the best whole time: see below) is also
 * timed split, in SPLIT_ROUNDS rounds of `rows` one-row calls; the fastest of whole and
 * split wins. *best: the winner's index; returns 1 when it splits. The test knob
 * TREESCORE_SPLIT_TREES: 1 splits the whole-time winner whenever it can, 2 never. */
static int decide_split(const ts_model *m, candidate *c, int n, int *best, const float *x, size_t avail,
                        size_t width, double *out, unsigned threads, size_t rows, text *t) {
    unsigned knob = tsr_config_get()->split_trees;
    if (threads < 2 || knob == 2) return 0;
    if (knob == 1) return tsp_can_split(c[*best].engine, c[*best].state);
    /* Which candidates are worth a split timing is decided on the best WHOLE time, not on
     * the best found so far (a first fast split must not rule out a better one), and
     * allowing twice `threads` of gain: a split can beat linear speed-up, each thread's
     * share of the trees fitting a cache the whole did not (qs on 20,000 trees x 64
     * leaves, one row: 2.3-2.8x on 2 threads of Zen 4). */
    const double whole_us = c[*best].median_us;
    double best_us = whole_us;
    int split = 0;
    /* The whole winner timed again as the splits are: its rounds back to back. In the
     * round robin above each of its calls followed the other candidates' (on a model of
     * 20,000 trees their layouts evict its own: trees-simd timed 490 us a row there,
     * 230 alone), while each split runs its rounds in a row, warm. */
    double again[SPLIT_ROUNDS];
    int w = 0;
    for (; w < SPLIT_ROUNDS; w++)
        if ((again[w] = time_call(&c[*best], x, 1, avail, width, out, threads, rows)) < 0) break;
    if (w == SPLIT_ROUNDS) {
        median(again, SPLIT_ROUNDS); /* sorts them: the least */
        if (1e6 * again[0] < best_us) best_us = 1e6 * again[0];
        say(t, "  %-12s %12.4f   again, its rounds back to back (as the splits below)\n", c[*best].engine->name,
            1e6 * again[0]);
    }
    for (int i = 0; i < n; i++) {
        if (c[i].skipped[0] || !tsp_can_split(c[i].engine, c[i].state) || c[i].median_us > 2.0 * threads * whole_us)
            continue;
        double times[SPLIT_ROUNDS];
        int k = 0;
        for (; k < SPLIT_ROUNDS; k++)
            if ((times[k] = time_split(&c[i], m->base_score, x, avail, width, out, threads, rows)) < 0) break;
        if (k < SPLIT_ROUNDS) continue;
        median(times, SPLIT_ROUNDS); /* sorts them: the least, as the whole's again */
        double us = 1e6 * times[0];
        say(t, "  %-12s %12.4f   split across %u threads\n", c[i].engine->name, us, threads);
        /* a split beats the whole only by a tenth or more: its time hangs on a helper
         * being free at once, which on a busy machine it often is not (a small model's
         * split, timed within noise of its whole, must not win); on a model big enough
         * that the rule splits it (tsp_split_rule) it needs only to be faster (20,000
         * trees, 2 threads: split 157 us against the whole's 167 kept the whole in one
         * plan of three, where splits run 1.5-2x the whole) */
        const double margin = split || tsp_split_rule(m, c[i].engine, c[i].state, threads) ? 1.0 : 0.9;
        if (us < margin * best_us) {
            best_us = us;
            *best = i;
            split = 1;
        }
    }
    c[*best].median_us = best_us;
    return split;
}

/* Times the candidates for every planned range the wisdom file did not answer. The
 * prepared candidates go into `have`. */
static ts_status time_ranges(const ts_model *m, const ts_scorer_options *opts, const tse_config *cfg,
                             range_choice *rc, unsigned threads, prepared_set *have, text *t, ts_error *err) {
    const tsp_wisdom_key *k0 = NULL;
    unsigned max_batch = 0;
    for (unsigned r = 0; r < TSP_RANGES; r++)
        if (rc[r].planned && rc[r].engine == TS_ENGINE_AUTO) {
            k0 = &rc[r].key;
            if (rc[r].batch > max_batch) max_batch = rc[r].batch;
        }
    if (!k0) return TS_OK;
    candidate c[MAX_CANDIDATES];
    int n = prepare_candidates(m, cfg, k0->ids, k0->n_ids, c);
    size_t width = m->n_features ? m->n_features : 1;
    size_t avail = max_batch < MAX_SAMPLE_ROWS ? max_batch : MAX_SAMPLE_ROWS;
    if (avail < MIN_SAMPLE_ROWS) avail = MIN_SAMPLE_ROWS;
    int data = opts->sample && m->n_features; /* a model reading no column needs no rows */
    float *x = data ? caller_rows(opts, width, avail) : sample_rows(m, avail);
    double *scores = malloc(avail * sizeof *scores);
    ts_status st = TS_OK;
    if (!x || !scores) st = ts_fail(err, TS_ERR_NO_MEMORY, "out of memory for the planner's sample");
    tsp_wisdom_file wf;
    int can_store = st == TS_OK && tsp_wisdom_open(&wf, 1) == 0;
    /* largest batches first: the range with the full budget warms the caches */
    for (int r = TSP_RANGES - 1; r >= 0 && st == TS_OK; r--) {
        if (!rc[r].planned || rc[r].engine != TS_ENGINE_AUTO) continue;
        unsigned batch = rc[r].batch;
        int small = batch < SMALL_TIMED_ROWS; /* a share of the budget when larger ranges are planned too */
        double share = small ? SMALL_BUDGET_SHARE : batch < 128 ? MID_BUDGET_SHARE : 1.0;
        double budget = budget_s() * (batch < max_batch ? share : 1.0);
        /* 8-15 rows: several calls per timing (64 rows), so that one cold call after the
         * other candidates' does not decide (timed so as a batch_hint of 11, rapid was
         * chosen on msn-lgb-1000x64 where trees-simd was 1.39x faster) */
        size_t min_rows = small && batch < 8 ? SMALL_TIMED_ROWS : MIN_TIMED_ROWS;
        /* 32-63 rows: one call a timing (45 rows timed as two calls doubled the range's
         * time, 51 -> 99 ms on the dev model, for nothing a call that long needs); larger
         * batches keep MIN_TIMED_ROWS, so that a sample the budget cut below the batch
         * (slow models) is not timed back up to it */
        if (batch >= 32 && batch < min_rows) min_rows = batch;
        reset_timings(c, n);
        double t_range = tsr_now();
        size_t rows = sample_size(c, n, x, avail, width, scores, batch, threads, budget, &min_rows);
        /* below 32 rows each candidate against each round's fastest (rank_by_rounds): a
         * timing there is 16-128 rows (0.1-1 ms), which one preemption on a busy machine
         * spoils whole, and the rounds' rows differ. (At a load of 4-6 on 2 cores the
         * picks at 16, 19 and 27 rows went to the slower of rapid and trees-simd in 3 of
         * 12 cells with medians and with minima alike, where bench's own fastest changed
         * between runs.) */
        int relative = batch < 32;
        time_rounds(c, n, x, rows, avail, width, scores, threads, budget, min_rows, relative, batch > 2 * SMALL_TIMED_ROWS);
        size_t rows_timed = rows >= min_rows ? rows : min_rows; /* rows per timing */
        int best = fastest(c, n);
        say_range(t, (unsigned)r, batch);
        say(t, "\nmeasured: %zu %s rows per call (batch %u), %d rounds in %.0f ms, %u thread%s, isa %s%s\n", rows,
            data ? "of the caller's" : "synthetic", batch, best >= 0 ? c[best].n_times : 0,
            1e3 * (tsr_now() - t_range), threads, threads == 1 ? "" : "s", ts_isa_name(cfg->isa),
            relative ? "; each candidate's median over the rounds of its time against the round's fastest" : "");
        report_table(t, c, n, best);
        if (best < 0) {
            st = ts_fail(err, TS_ERR_NO_MEMORY, "the planner could not time any engine (out of memory?)");
            break;
        }
        rc[r].split = r == 0 && decide_split(m, c, n, &best, x, avail, width, scores, threads, rows_timed, t);
        rc[r].engine = c[best].engine->id;
        rc[r].us = c[best].median_us;
        const int second = data || rc[r].split ? -1 : runner_up(c, n, best);
        rc[r].alt = second >= 0 ? c[second].engine->id : TS_ENGINE_AUTO;
        if (can_store && tsp_wisdom_store(&rc[r].key, &wf, rc[r].engine, rc[r].alt, rc[r].split, rc[r].us) == 0)
            say(t, "choice: %s%s (remembered in %s/%s)\n", c[best].engine->name, rc[r].split ? ", split" : "",
                wf.dir.path, wf.name);
        else
            say(t, "choice: %s%s (not remembered: no writable, trusted wisdom file)\n", c[best].engine->name,
                rc[r].split ? ", split" : "");
        if (second >= 0)
            say(t, "trial: %s within %.2fx on synthetic rows: the range's first %u calls decide between them on the "
                   "caller's rows\n", c[second].engine->name, c[second].median_us / c[best].median_us, TSP_TRIAL_CALLS);
    }
    report_ifelse(t, k0->ids, k0->n_ids);
    if (can_store) tsr_cache_close(&wf.dir);
    free(x);
    free(scores);
    for (int i = 0; i < n; i++) {
        if (!c[i].state) continue;
        if (st == TS_OK && !have->e[c[i].engine->id].engine)
            have->e[c[i].engine->id] = (tsp_prepared){c[i].engine, c[i].state, c[i].layout};
        else
            c[i].engine->free(c[i].state);
    }
    return st;
}

static void free_set(prepared_set *have) {
    for (int i = 0; i < 32; i++)
        if (have->e[i].engine) have->e[i].engine->free(have->e[i].state);
    memset(have, 0, sizeof *have);
}

/* Prepare engine id into `have` unless it is there. */
static ts_status ensure(const ts_model *m, const tse_config *cfg, ts_engine id, prepared_set *have, ts_error *err) {
    if ((unsigned)id >= 32) return ts_fail(err, TS_ERR_INVALID_ARGUMENT, "engine %d out of range", (int)id);
    tsp_prepared *p = &have->e[id];
    if (p->engine) return TS_OK;
    const tse_engine *e = tse_engine_get(id);
    if (!e) return ts_fail(err, TS_ERR_ENGINE_UNAVAILABLE, "engine %s is not built in", ts_engine_name(id));
    TS_TRY(e->prepare(m, cfg, &p->state, &p->layout, err));
    p->engine = e;
    return TS_OK;
}

/* Engine id's index in out->eng, moved there from `have` the first time. */
static uint8_t take_engine(tsp_plan *out, prepared_set *have, ts_engine id) {
    unsigned i = 0;
    while (i < out->n_eng && out->eng[i].engine->id != id) i++;
    if (i == out->n_eng) {
        out->eng[out->n_eng++] = have->e[id];
        have->e[id].engine = NULL;
    }
    return (uint8_t)i;
}

static int have_engine(const tsp_plan *out, const prepared_set *have, ts_engine id) {
    for (unsigned i = 0; i < out->n_eng; i++)
        if (out->eng[i].engine->id == id) return 1;
    return (unsigned)id < 32 && have->e[id].engine != NULL;
}

/* Moves the chosen engines (picks and runners-up) from `have` into out (each once, in
 * range order), frees the others, and appends the table. */
static ts_status assemble(const range_choice *rc, prepared_set *have, unsigned threads, tsp_plan *out, text *t) {
    int first = -1, n_planned = 0;
    for (unsigned r = 0; r < TSP_RANGES; r++)
        if (rc[r].planned) {
            if (first < 0) first = (int)r;
            n_planned++;
        }
    if (first < 0) return TS_OK; /* never: plan() plans one range at least */
    say(t, "plan: rows per call -> engine%s\n", n_planned == 1 ? " (batch_hint: one engine for every call)" : "");
    for (unsigned r = 0; r < TSP_RANGES; r++) {
        /* a range outside the plan uses the engine of the nearest planned range */
        unsigned q = r;
        if (!rc[q].planned) q = (unsigned)first;
        out->pick[r] = take_engine(out, have, rc[q].engine);
        out->alt[r] = rc[q].alt != TS_ENGINE_AUTO && have_engine(out, have, rc[q].alt) ? take_engine(out, have, rc[q].alt)
                                                                                         : TSP_NO_ALT;
        char range[32];
        range_name(r, range, sizeof range);
        say(t, "  %-8s %s", range, ts_engine_name(rc[q].engine));
        if (out->alt[r] != TSP_NO_ALT) say(t, " or %s (its first calls decide)", ts_engine_name(rc[q].alt));
        if (r == 0 && rc[q].split) say(t, ", calls of fewer rows than threads split across trees (%u threads)", threads);
        say(t, "\n");
    }
    out->split = rc[rc[0].planned ? 0 : first].split;
    free_set(have);
    return TS_OK;
}

static ts_status plan(const ts_model *m, const ts_scorer_options *opts, const tse_config *cfg, unsigned n_threads,
                      tsp_plan *out, ts_error *err) {
    text t = {.len = 0};
    t.buf[0] = '\0';
    memset(out, 0, sizeof *out);
    memset(out->alt, TSP_NO_ALT, sizeof out->alt);
    range_choice rc[TSP_RANGES];
    memset(rc, 0, sizeof rc);
    for (unsigned r = 0; r < TSP_RANGES; r++) {
        rc[r].engine = rc[r].alt = TS_ENGINE_AUTO;
        rc[r].planned = opts->batch_hint == 0;
        rc[r].batch = tsp_range_batch[r];
    }
    if (opts->batch_hint) {
        unsigned r = tsp_range_of(opts->batch_hint);
        rc[r].planned = 1;
        rc[r].batch = opts->batch_hint;
    }
    prepared_set have;
    memset(&have, 0, sizeof have);
    ts_status st = TS_OK;
    if (plan_mode(opts) == TS_PLAN_RULE) {
        for (unsigned r = 0; r < TSP_RANGES && st == TS_OK; r++) {
            if (!rc[r].planned) continue;
            char why[256];
            ts_engine e = tsp_plan_rule(m, cfg->isa, rc[r].batch, why, sizeof why);
            ts_error ignored;
            if ((e == TS_ENGINE_RAPID || e == TS_ENGINE_OBLIVIOUS) && ensure(m, cfg, e, &have, &ignored) != TS_OK) {
                /* rapid or oblivious could not prepare (out of memory, a tree past rapid's leaf
                 * limit): the rule without either */
                say(&t, "%s: %s; ", ts_engine_name(e), ignored.message);
                e = tsp_plan_rule(m, cfg->isa, 0, why, sizeof why);
            }
            say_range(&t, r, rc[r].batch);
            say(&t, ": %s\n", why);
            st = ensure(m, cfg, e, &have, err);
            rc[r].engine = e;
            if (st == TS_OK && r == 0) {
                unsigned knob = tsr_config_get()->split_trees;
                const tsp_prepared *p = &have.e[e];
                rc[r].split = knob == 2 ? 0 : knob == 1 ? n_threads > 1 && tsp_can_split(p->engine, p->state)
                                                        : tsp_split_rule(m, p->engine, p->state, n_threads);
            }
        }
        if (st == TS_OK) st = assemble(rc, &have, n_threads, out, &t);
        goto done;
    }
    if (opts->sample && (opts->sample_rows == 0 || opts->sample_stride < m->n_features))
        return ts_fail(err, TS_ERR_INVALID_ARGUMENT,
                       "planner sample: %zu rows of stride %zu, but the model reads %u columns (need rows >= 1 and "
                       "stride >= columns)", opts->sample_rows, opts->sample_stride, m->n_features);
    tsp_wisdom_file wf;
    int open_ok = tsp_wisdom_open(&wf, 0) == 0;
    tsp_wisdom_key key;
    make_key(m, cfg, n_threads, &key);
    for (unsigned r = 0; r < TSP_RANGES; r++) {
        if (!rc[r].planned) continue;
        rc[r].key = key;
        rc[r].key.batch = rc[r].batch;
        if (opts->sample) rc[r].key.rows = "data";
        ts_engine e, alt;
        double us;
        int split = 0;
        if (!open_ok || !tsp_wisdom_lookup(&rc[r].key, &wf, &e, &alt, &us, &split)) continue;
        ts_error ignored;
        if (ensure(m, cfg, e, &have, &ignored) != TS_OK) continue; /* say, a rebuilt library without it: measure */
        if (alt != TS_ENGINE_AUTO && (tsr_config_get()->plan_trial == 2 || ensure(m, cfg, alt, &have, &ignored) != TS_OK))
            alt = TS_ENGINE_AUTO;
        const tsp_prepared *p = &have.e[e];
        rc[r].engine = e;
        rc[r].alt = alt;
        rc[r].us = us;
        rc[r].split = r == 0 && split && n_threads > 1 && tsp_can_split(p->engine, p->state);
        say(&t, "wisdom: %s/%s measured %s%s fastest (%.4f us/doc) for this model, batch %u, %u threads, isa %s, "
                "this CPU\n", wf.dir.path, wf.name, ts_engine_name(e), rc[r].split ? " (split)" : "", us,
            rc[r].batch, n_threads, ts_isa_name(cfg->isa));
        if (alt != TS_ENGINE_AUTO)
            say(&t, "trial: %s, the runner-up on synthetic rows: the range's first %u calls decide between them on "
                    "the caller's rows\n", ts_engine_name(alt), TSP_TRIAL_CALLS);
    }
    if (open_ok) tsr_cache_close(&wf.dir);
    st = time_ranges(m, opts, cfg, rc, n_threads, &have, &t, err);
    if (st == TS_OK) st = assemble(rc, &have, n_threads, out, &t);
done:
    free_set(&have);
    if (st != TS_OK) {
        tsp_plan_free(out);
        return st;
    }
    out->report = text_dup(&t);
    if (!out->report) {
        tsp_plan_free(out);
        return ts_fail(err, TS_ERR_NO_MEMORY, "out of memory for the planner's report");
    }
    return TS_OK;
}

void tsp_plan_drop_alts(tsp_plan *p) {
    int used[TSP_MAX_ENG] = {0};
    uint8_t to[TSP_MAX_ENG];
    for (unsigned r = 0; r < TSP_RANGES; r++) used[p->pick[r]] = 1, p->alt[r] = TSP_NO_ALT;
    unsigned n = 0;
    for (unsigned i = 0; i < p->n_eng; i++) {
        if (!used[i]) {
            if (p->eng[i].engine) p->eng[i].engine->free(p->eng[i].state);
            continue;
        }
        to[i] = (uint8_t)n;
        p->eng[n++] = p->eng[i];
    }
    for (unsigned i = n; i < p->n_eng; i++) memset(&p->eng[i], 0, sizeof p->eng[i]);
    p->n_eng = n;
    for (unsigned r = 0; r < TSP_RANGES; r++) p->pick[r] = to[p->pick[r]];
}

void tsp_plan_free(tsp_plan *p) {
    for (unsigned i = 0; i < p->n_eng; i++)
        if (p->eng[i].engine) p->eng[i].engine->free(p->eng[i].state);
    free(p->report);
    memset(p, 0, sizeof *p);
}

/* The notes said while planning (engines preparing, warnings), appended to the report. */
static ts_status append_notes(tsp_plan *out, char *notes, ts_error *err) {
    char warnings[2048];
    size_t nw = tsr_notes_warnings(warnings, sizeof warnings);
    if (!notes && !nw) return TS_OK;
    size_t len = strlen(out->report), extra = (notes ? strlen(notes) : 0) + nw + 32;
    char *r = realloc(out->report, len + extra);
    if (!r) {
        free(notes);
        return ts_fail(err, TS_ERR_NO_MEMORY, "out of memory for the planner's report");
    }
    out->report = r;
    snprintf(r + len, extra, "notes:\n%s", notes ? notes : "");
    /* warnings said before this plan (the environment, once per process) */
    for (char *w = warnings; *w;) {
        char *nl = strchr(w, '\n');
        size_t wl = nl ? (size_t)(nl - w) + 1 : strlen(w);
        char save = w[wl];
        w[wl] = '\0';
        if (!notes || !strstr(notes, w)) strcat(r, w);
        w[wl] = save;
        w += wl;
    }
    free(notes);
    return TS_OK;
}

ts_status tsp_plan_engine(const ts_model *m, const ts_scorer_options *opts, const tse_config *cfg,
                          unsigned n_threads, tsp_plan *out, ts_error *err) {
    tse_config never_build = *cfg;
    never_build.no_build = 1; /* creating a scorer with auto never starts a compile */
    tsr_notes_begin();
    ts_status st = plan(m, opts, &never_build, n_threads, out, err);
    char *notes = tsr_notes_end();
    if (st != TS_OK) {
        free(notes);
        return st;
    }
    st = append_notes(out, notes, err);
    if (st != TS_OK) tsp_plan_free(out);
    return st;
}
